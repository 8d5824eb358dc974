package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/core"
)

// QueryPlan describes how a host's own schema plans a read: the SQL that
// selects the identity of the items a request names. The store runs it as
// the principal of the request, under the same guarantees as the reference
// schema's resolvers: one read-only transaction in one round trip, the role
// switch, mcp.principal set transaction-locally (row-level security or the
// host's own predicate on current_setting('mcp.principal', true) scopes
// it), the captures bound as arguments and never spliced into SQL.
type QueryPlan struct {
	// SQL selects identity metadata, never a body. It is bound with the
	// captures named in Params as $1, $2, ... (typed text: compare a
	// column of another type as id::text = $1) and returns, in plan
	// order, rows of four columns: a key (the item's stable id), a version
	// (anything that changes whenever the content or MIME type does), a
	// MIME type and whether the content is text. Columns are cast to text,
	// text, text and boolean. It must be one statement without a trailing
	// semicolon.
	SQL string
	// Params names the captures bound to SQL, in order.
	Params []string
	// ItemURI returns the canonical URI of the item whose key is key; URIs
	// of different representations must differ.
	ItemURI func(key string) string
	// Representation labels the item targets; empty means "body".
	Representation string
	// Bundle says a request names a bundle: zero rows is a legitimately
	// empty bundle. Without it a request names one item: zero rows is
	// unavailable, and more than one is an error.
	Bundle bool
}

// queryRef is the private authorization data of a query-driven target.
type queryRef struct {
	Kind    string `json:"k"`
	Key     string `json:"key"`
	Version string `json:"v"`
	MIME    string `json:"m"`
	Text    bool   `json:"t"`
}

const queryKind = "q"

// checkSQL refuses empty SQL and a trailing semicolon, so that host SQL
// stays one statement inside the store's wrapper.
func checkSQL(field, sql string) error {
	s := strings.TrimSpace(sql)
	if s == "" || strings.HasSuffix(s, ";") {
		return core.NewConfigError(field, "must be one SQL statement without a trailing semicolon", nil)
	}
	return nil
}

// NewQueryResolver returns a resolver that plans with q.SQL over db.
// Each item target carries its key, version, MIME type and kind as private
// authorization data, for [NewQueryReader]. Errors are *core.ConfigError.
func NewQueryResolver(db DB, q QueryPlan, opts *Options) (core.Resolver, error) {
	s, err := newSession(db, opts)
	if err != nil {
		return nil, err
	}
	if err := checkSQL("QueryPlan.SQL", q.SQL); err != nil {
		return nil, err
	}
	if q.ItemURI == nil {
		return nil, core.NewConfigError("QueryPlan.ItemURI", "is nil", nil)
	}
	repr := q.Representation
	if repr == "" {
		repr = "body"
	}
	params := append([]string(nil), q.Params...)
	// Every capture is typed text here too, so a capture the SQL does not
	// use still binds (and one it compares to another type fails loudly).
	where := "true"
	for i := range params {
		where += " AND $" + strconv.Itoa(i+1) + "::text IS NOT NULL"
	}
	sql := `SELECT q.key::text, q.version::text, q.mime_type::text, q.is_text::boolean FROM (` + q.SQL +
		"\n) AS q(key, version, mime_type, is_text) WHERE " + where + " LIMIT $" + strconv.Itoa(len(params)+1)
	itemURI, bundle := q.ItemURI, q.Bundle
	return core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
		args := make([]any, 0, len(params)+1)
		for _, name := range params {
			v, ok := m.Var(name)
			if !ok {
				return core.ResourceReadPlan{}, fmt.Errorf("postgres: the template has no variable %q", name)
			}
			args = append(args, v)
		}
		args = append(args, s.maxItems+1)
		var refs []queryRef
		err := s.query(ctx, sql, args, func(rows pgx.Rows) error {
			r := queryRef{Kind: queryKind}
			if err := rows.Scan(&r.Key, &r.Version, &r.MIME, &r.Text); err != nil {
				return err
			}
			refs = append(refs, r)
			return nil
		})
		switch {
		case err != nil:
			return core.ResourceReadPlan{}, err
		case len(refs) > s.maxItems:
			return core.ResourceReadPlan{}, fmt.Errorf("postgres: the request plans more than %d items (Options.MaxPlanItems)", s.maxItems)
		case !bundle && len(refs) == 0:
			return core.ResourceReadPlan{}, core.Unavailable(ErrNotVisible)
		case !bundle && len(refs) > 1:
			return core.ResourceReadPlan{}, fmt.Errorf("postgres: the request names one item and the SQL returned %d", len(refs))
		}
		items := make([]core.ResourceTarget, len(refs))
		requested := -1
		for i, r := range refs {
			authz, err := json.Marshal(r)
			if err != nil {
				return core.ResourceReadPlan{}, err
			}
			if items[i], err = core.NewResourceTarget(itemURI(r.Key), repr, authz); err != nil {
				return core.ResourceReadPlan{}, err
			}
			if items[i].URI() == m.URI() {
				requested = i
			}
		}
		if requested >= 0 {
			return core.NewResourceReadPlan(items[requested], items...)
		}
		req, err := core.NewResourceTarget(m.URI(), repr, nil)
		if err != nil {
			return core.ResourceReadPlan{}, err
		}
		return core.NewResourceReadPlan(req, items...)
	}), nil
}

// NewQueryReader returns a reader of the targets that a resolver from
// [NewQueryResolver] plans. bodySQL selects the content of one item: it is
// bound with the planned key as $1 (typed text) and returns at most one row of two
// columns, the item's current version and its content (bytea or text), when
// the principal may read the item now, and no row otherwise. It must be one
// statement without a trailing semicolon.
//
// The store wraps it so that the statement returns the size always and the
// content only when the version is the planned one and the size fits
// core.ReadLimit(ctx): no row is core.Unavailable, another version is
// ErrChanged, too large is core.TooLarge, and neither a changed nor an
// oversized body is transferred. Each read is one read-only transaction in
// one round trip, as for [Store.Reader]. Errors are *core.ConfigError.
func NewQueryReader(db DB, bodySQL string, opts *Options) (core.Reader, error) {
	s, err := newSession(db, opts)
	if err != nil {
		return nil, err
	}
	if err := checkSQL("bodySQL", bodySQL); err != nil {
		return nil, err
	}
	sql := `SELECT q.version::text, octet_length(q.body),
	CASE WHEN q.version::text = $2 AND octet_length(q.body) <= $3 THEN q.body END
FROM (` + bodySQL + "\n) AS q(version, body) WHERE $1::text IS NOT NULL"
	return core.ReaderFunc(func(ctx context.Context, t core.ResourceTarget) (core.ResourcePayload, error) {
		var r queryRef
		if err := json.Unmarshal(t.AuthorizationData(), &r); err != nil || r.Kind != queryKind {
			return core.ResourcePayload{}, ErrBadTarget
		}
		limit := core.ReadLimit(ctx)
		var (
			rowsSeen int
			version  string
			size     *int64
			body     []byte
		)
		err := s.query(ctx, sql, []any{r.Key, r.Version, limit}, func(rows pgx.Rows) error {
			if rowsSeen++; rowsSeen > 1 {
				return errors.New("postgres: the body SQL returned more than one row")
			}
			return rows.Scan(&version, &size, &body)
		})
		if err != nil {
			return core.ResourcePayload{}, err
		}
		return decide(rowsSeen == 1, version == r.Version, size, body, limit, r.MIME, r.Text)
	}), nil
}
