package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/core"
)

// Completion statements. The prefix is always a bind argument and is
// compared with starts_with, not LIKE, so '%', '_' and '\' in it are
// literal characters; row-level security scopes the rows to the principal,
// exactly as the resolvers see them. count(*) OVER () is the total before
// the limit.
const (
	sqlCompleteProjects = `SELECT p.id, count(*) OVER ()
	FROM mcpres.projects p
	WHERE starts_with(p.id, $1)
	ORDER BY p.id LIMIT $2`
	sqlCompleteAssets = `SELECT a.id, count(*) OVER ()
	FROM mcpres.assets a
	WHERE a.project_id = $1 AND (starts_with(a.id, $2) OR starts_with(a.name, $2))
	  AND ($3 OR a.body IS NOT NULL)
	ORDER BY a.id LIMIT $4`
)

// completer is the [core.Completer] of the reference-schema template
// bindings: it completes {project} with the ids of the
// projects the caller may discover, and {asset}, given the project, with
// the ids of its assets the caller may discover whose id or name starts
// with the prefix (for the body template, only assets with an inline body).
type completer struct {
	s        *Store
	bodyOnly bool
}

// Complete implements core.Completer; see the Store's completion methods.
func (c completer) Complete(ctx context.Context, req core.CompletionRequest) (core.Completion, error) {
	limit := min(max(req.Limit, 1), core.MaxCompletionValues)
	switch req.Variable {
	case "project":
		return c.s.CompleteProjects(ctx, req.Prefix, limit)
	case "asset":
		project, ok := req.Arguments["project"]
		if !ok {
			return core.Completion{Values: []string{}}, nil
		}
		return c.s.completeAssets(ctx, project, req.Prefix, limit, c.bodyOnly)
	}
	return core.Completion{Values: []string{}}, nil
}

// CompleteProjects returns the ids of the projects the principal of ctx may
// discover that start with prefix, in id order, at most limit (1 to
// core.MaxCompletionValues) of them, with their total. prefix is literal.
func (s *Store) CompleteProjects(ctx context.Context, prefix string, limit int) (core.Completion, error) {
	return s.completeQuery(ctx, limit, sqlCompleteProjects, prefix, limit)
}

// CompleteAssets returns the ids of the assets of project that the
// principal of ctx may discover and whose id or name starts with prefix, in
// id order, at most limit (1 to core.MaxCompletionValues) of them, with
// their total. prefix is literal.
func (s *Store) CompleteAssets(ctx context.Context, project, prefix string, limit int) (core.Completion, error) {
	return s.completeAssets(ctx, project, prefix, limit, false)
}

func (s *Store) completeAssets(ctx context.Context, project, prefix string, limit int, bodyOnly bool) (core.Completion, error) {
	return s.completeQuery(ctx, limit, sqlCompleteAssets, project, prefix, !bodyOnly, limit)
}

func (s *Store) completeQuery(ctx context.Context, limit int, sql string, args ...any) (core.Completion, error) {
	limit = min(max(limit, 1), core.MaxCompletionValues)
	c := core.Completion{Values: make([]string, 0, limit)}
	err := s.s.query(ctx, sql, args, func(rows pgx.Rows) error {
		var id string
		var total int64
		if err := rows.Scan(&id, &total); err != nil {
			return err
		}
		c.Values = append(c.Values, id)
		c.Total = int(total)
		return nil
	})
	if err != nil {
		return core.Completion{}, err
	}
	c.HasMore = c.Total > len(c.Values)
	return c, nil
}
