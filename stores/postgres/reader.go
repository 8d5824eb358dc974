package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/core"
)

// readable is true when the transaction's principal holds a grant that lets
// it read asset a now. Row-level security already hides assets without any
// grant; this adds the read flag.
const readable = `CROSS JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM mcpres.grants g
		WHERE g.principal = mcpres.current_principal() AND g.project_id = a.project_id
		  AND (g.asset_id IS NULL OR g.asset_id = a.id) AND g.can_read) AS ok) r`

// The pinned statements: one row while the asset is visible (zero rows when
// it is not), with its current version and size, and the content only when
// the version is the planned one ($3), the principal may read it and it fits
// the read limit ($4). So a body is never transferred for another version,
// another principal or over the limit.
const (
	sqlReadBody = `SELECT a.version, a.mime_type, a.body_is_text, r.ok, octet_length(a.body),
	CASE WHEN a.version = $3 AND r.ok AND octet_length(a.body) <= $4 THEN a.body END
FROM mcpres.assets a ` + readable + `
WHERE a.project_id = $1 AND a.id = $2`

	sqlReadFields = `SELECT a.version, 'application/json', true, r.ok, octet_length(f.doc),
	CASE WHEN a.version = $3 AND r.ok AND octet_length(f.doc) <= $4 THEN convert_to(f.doc, 'UTF8') END
FROM mcpres.assets a ` + readable + `
CROSS JOIN LATERAL (SELECT json_build_object(
	'project', a.project_id, 'id', a.id, 'version', a.version,
	'name', a.name, 'title', a.title, 'mimeType', a.mime_type, 'text', a.body_is_text,
	'bodySize', octet_length(a.body),
	'body', CASE WHEN a.body IS NOT NULL THEN 'asset://project/' || a.project_id || '/asset/' || a.id || '/body' END,
	'object', CASE WHEN a.object_bucket IS NOT NULL THEN json_build_object(
		'uri', 'asset://project/' || a.project_id || '/asset/' || a.id || '/object',
		'size', a.object_size) END,
	'updatedAt', a.updated_at)::text AS doc) f
WHERE a.project_id = $1 AND a.id = $2`

	sqlReadIndex = `SELECT octet_length(d.doc), CASE WHEN octet_length(d.doc) <= $1 THEN d.doc END
FROM (SELECT json_build_object('projects', coalesce(json_agg(json_build_object(
	'id', p.id, 'title', p.title, 'uri', 'asset://project/' || p.id) ORDER BY p.id), '[]'::json))::text AS doc
	FROM mcpres.projects p) d`
)

// Reader returns the reader of every target that the store's resolvers and
// bindings plan. Each read is one read-only transaction sent as one round
// trip: the role switch, the principal of ctx and a statement timeout from
// ctx's deadline set transaction-locally, then one statement pinned to the
// planned project, asset and version, bounded by core.ReadLimit(ctx).
//
// Outcomes: an asset the principal cannot see or read now is
// core.Unavailable; one that is visible with another version is ErrChanged
// (the gateway's read_failed); one larger than the limit is core.TooLarge
// with its size, and its content is never transferred.
func (s *Store) Reader() core.Reader {
	return core.ReaderFunc(s.read)
}

func (s *Store) read(ctx context.Context, t core.ResourceTarget) (core.ResourcePayload, error) {
	r, err := parseRef(t)
	if err != nil {
		return core.ResourcePayload{}, err
	}
	limit := core.ReadLimit(ctx)
	switch r.Kind {
	case ReprIndex:
		return s.readIndex(ctx, limit)
	case ReprFields:
		return s.readPinned(ctx, sqlReadFields, r, limit)
	case ReprBody:
		return s.readPinned(ctx, sqlReadBody, r, limit)
	case ReprObject:
		return s.readObject(ctx, t, r)
	}
	return core.ResourcePayload{}, ErrBadTarget
}

func (s *Store) readPinned(ctx context.Context, sql string, r ref, limit int64) (core.ResourcePayload, error) {
	var (
		found   bool
		version int64
		mime    string
		text    bool
		ok      bool
		size    *int64
		body    []byte
	)
	err := s.s.query(ctx, sql, []any{r.Project, r.Asset, r.Version, limit}, func(rows pgx.Rows) error {
		if found { // pinned to one key: a second row is not expected
			return nil
		}
		found = true
		return rows.Scan(&version, &mime, &text, &ok, &size, &body)
	})
	if err != nil {
		return core.ResourcePayload{}, err
	}
	return decide(found && ok, version == r.Version, size, body, limit, mime, text)
}

// decide turns what a pinned statement returned into a payload or error.
func decide(visible, samePlan bool, size *int64, body []byte, limit int64, mime string, text bool) (core.ResourcePayload, error) {
	switch {
	case !visible:
		return core.ResourcePayload{}, core.Unavailable(ErrNotVisible)
	case !samePlan:
		return core.ResourcePayload{}, ErrChanged
	case size == nil:
		return core.ResourcePayload{}, core.Unavailable(fmt.Errorf("%w: no content", ErrNotVisible))
	case *size > limit:
		return core.ResourcePayload{}, core.TooLarge(*size)
	case body == nil && *size > 0:
		return core.ResourcePayload{}, fmt.Errorf("postgres: content of %d bytes missing", *size)
	case text:
		return core.TextPayload(mime, string(body)), nil
	}
	return core.BlobPayload(mime, body), nil
}

func (s *Store) readIndex(ctx context.Context, limit int64) (core.ResourcePayload, error) {
	var size int64
	var doc *string
	found := false
	err := s.s.query(ctx, sqlReadIndex, []any{limit}, func(rows pgx.Rows) error {
		found = true
		return rows.Scan(&size, &doc)
	})
	switch {
	case err != nil:
		return core.ResourcePayload{}, err
	case !found: // the statement aggregates: it always returns one row
		return core.ResourcePayload{}, classify(pgx.ErrNoRows)
	}
	if size > limit || doc == nil {
		return core.ResourcePayload{}, core.TooLarge(size)
	}
	return core.TextPayload("application/json", *doc), nil
}
