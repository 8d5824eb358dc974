package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/core"
)

// sqlGrantFlags aggregates the principal's own grants (row-level security
// shows no others) that cover project $1 or, when $2 is not NULL, asset $2
// of it.
const sqlGrantFlags = `SELECT coalesce(bool_or(g.can_discover OR g.can_read), false),
	coalesce(bool_or(g.can_read), false),
	coalesce(bool_or(g.disclose_issue_uri), false)
FROM mcpres.grants g
WHERE g.project_id = $1 AND ($2::text IS NULL OR g.asset_id IS NULL OR g.asset_id = $2::text)`

type grantFlags struct{ visible, read, disclose bool }

func (s *Store) grantFlags(ctx context.Context, project string, asset *string) (grantFlags, error) {
	b, err := s.s.begin(ctx)
	if err != nil {
		return grantFlags{}, err
	}
	b.Queue(sqlGrantFlags, project, asset)
	var f grantFlags
	err = s.s.run(ctx, b, func(br pgx.BatchResults) error {
		return br.QueryRow().Scan(&f.visible, &f.read, &f.disclose)
	})
	return f, err
}

// Policy returns a core.ResourcePolicy backed by the grants table of the
// reference schema, for hosts that keep grants in PostgreSQL. Each check is
// one read-only transaction as the principal of ctx.
//
//   - Discover allows every definition to a caller with a valid principal.
//   - Visibility: the index is visible; a project bundle is visible when
//     some grant of the caller in the project lets it discover or read; an
//     asset's fields and body are visible when a grant on the asset or its
//     project lets it discover or read, and issues disclose the URI when
//     such a grant sets disclose_issue_uri.
//   - Read: the index and a visible project bundle may be read; an asset's
//     representations (fields, body, joined object) need a grant with
//     can_read.
//
// Targets this store did not plan are hidden. The readers enforce the same
// grants again in their own statements, so a grant revoked after these
// checks still withholds the content. A joined object is read by the object
// store, which enforces its pinned identity and its own access; its grant is
// checked here, before and again after the reads.
func (s *Store) Policy() core.ResourcePolicy {
	check := func(ctx context.Context, t core.ResourceTarget) (grantFlags, error) {
		r, err := parseRef(t)
		if err != nil {
			return grantFlags{}, nil
		}
		switch r.Kind {
		case ReprIndex:
			if _, err := s.principal(ctx); err != nil {
				return grantFlags{}, err
			}
			return grantFlags{visible: true, read: true, disclose: true}, nil
		case ReprProject:
			f, err := s.grantFlags(ctx, r.Project, nil)
			f.read = f.visible
			return f, err
		}
		return s.grantFlags(ctx, r.Project, &r.Asset)
	}
	return core.ResourcePolicy{
		Discover: func(ctx context.Context, d core.ResourceDescription) error {
			_, err := s.principal(ctx)
			return err
		},
		Visibility: func(ctx context.Context, t core.ResourceTarget) (core.Visibility, error) {
			f, err := check(ctx, t)
			if core.KindOf(err) == core.FailureUnavailable {
				return core.Visibility{}, nil
			}
			return core.Visibility{Visible: f.visible, DiscloseIssueURI: f.disclose}, err
		},
		Read: func(ctx context.Context, t core.ResourceTarget) error {
			f, err := check(ctx, t)
			if err == nil && !f.read {
				err = core.Unavailable(ErrNotVisible)
			}
			return err
		},
	}
}

// principal returns the valid principal of ctx, or an Unavailable error.
func (s *Store) principal(ctx context.Context) (string, error) {
	p, err := s.s.principal(ctx)
	if err != nil {
		return "", err
	}
	if err := CheckPrincipal(p); err != nil {
		return "", core.Unavailable(err)
	}
	return p, nil
}
