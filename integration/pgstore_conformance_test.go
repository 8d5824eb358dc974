package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/storetest"
)

// TestPGStoreConformance runs the store conformance suite against the
// reference schema's body binding on the real PostgreSQL: every case gets a
// project of its own in one migrated database.
func TestPGStoreConformance(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	bodies := &bodyTracer{}
	pool := newPool(t, d.url, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = bodies })
	st := newStore(t, pool, nil)
	storetest.Run(t, func(ctx context.Context, t *testing.T) (storetest.Harness, error) {
		var random [6]byte
		_, _ = rand.Read(random[:])
		project := "conf-" + hex.EncodeToString(random[:])
		if _, err := d.admin.Exec(ctx, `INSERT INTO mcpres.projects (id) VALUES ($1)`, project); err != nil {
			return nil, err
		}
		return &pgHarness{d: d, st: st, project: project, bodies: bodies, items: map[string]string{}}, nil
	})
}

// bodyTracer counts the statements that can transfer an asset body: the
// body binding's pinned read, which selects a.body and returns it under
// the store's CASE.
type bodyTracer struct{ n atomic.Int64 }

func (b *bodyTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (b *bodyTracer) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	if strings.Contains(data.SQL, "THEN b.body END") && strings.Contains(data.SQL, "SELECT a.body, a.version") {
		b.n.Add(1)
	}
}
func (b *bodyTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TraceQueryStart and TraceQueryEnd make bodyTracer a pgx.QueryTracer,
// which pgx requires of ConnConfig.Tracer.
func (b *bodyTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (b *bodyTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// pgHarness is storetest.Harness over the reference schema: items are assets
// of one project, readers are asset grants, changes are updates (the
// trigger bumps the version).
type pgHarness struct {
	d       *pgDB
	st      *refStore
	project string
	bodies  *bodyTracer

	mu    sync.Mutex
	next  int
	items map[string]string // body URI -> asset id
}

var (
	_ storetest.Harness     = (*pgHarness)(nil)
	_ storetest.BodyCounter = (*pgHarness)(nil)
)

func (h *pgHarness) Binding() core.ResourceBinding { return h.st.BodyBinding() }

func (h *pgHarness) Create(ctx context.Context, it storetest.Item) (string, error) {
	h.mu.Lock()
	h.next++
	id := fmt.Sprintf("item-%d", h.next)
	h.mu.Unlock()
	body := it.Body
	if body == nil {
		body = []byte{} // an explicit empty body, not "no inline body"
	}
	tx, err := h.d.admin.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `INSERT INTO mcpres.assets (project_id, id, name, mime_type, body, body_is_text) VALUES ($1, $2, $2, $3, $4, $5)`,
		h.project, id, it.MIMEType, body, it.Text); err != nil {
		return "", err
	}
	for _, p := range it.Readers {
		if _, err := tx.Exec(ctx, `INSERT INTO mcpres.grants (principal, project_id, asset_id) VALUES ($1, $2, $3)`, p, h.project, id); err != nil {
			return "", err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return "", err
	}
	uri := "asset://project/" + h.project + "/asset/" + id + "/body"
	h.mu.Lock()
	h.items[uri] = id
	h.mu.Unlock()
	return uri, nil
}

func (h *pgHarness) asset(uri string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	id, ok := h.items[uri]
	if !ok {
		return "", fmt.Errorf("no item at %s", uri)
	}
	return id, nil
}

// exec runs sql on the item at uri and insists that it changed one row.
func (h *pgHarness) exec(ctx context.Context, uri, sql string, args ...any) error {
	id, err := h.asset(uri)
	if err != nil {
		return err
	}
	tag, err := h.d.admin.Exec(ctx, sql, append([]any{h.project, id}, args...)...)
	if err == nil && tag.RowsAffected() != 1 {
		err = fmt.Errorf("%s changed %d rows, want 1", tag.String(), tag.RowsAffected())
	}
	return err
}

func (h *pgHarness) Change(ctx context.Context, uri string, body []byte) error {
	if body == nil {
		body = []byte{}
	}
	return h.exec(ctx, uri, `UPDATE mcpres.assets SET body = $3 WHERE project_id = $1 AND id = $2`, body)
}

func (h *pgHarness) Revoke(ctx context.Context, uri, principal string) error {
	return h.exec(ctx, uri, `DELETE FROM mcpres.grants WHERE project_id = $1 AND asset_id = $2 AND principal = $3`, principal)
}

func (h *pgHarness) Restore(ctx context.Context, uri, principal string) error {
	return h.exec(ctx, uri, `INSERT INTO mcpres.grants (principal, project_id, asset_id) VALUES ($3, $1, $2)`, principal)
}

func (h *pgHarness) Delete(ctx context.Context, uri string) error {
	return h.exec(ctx, uri, `DELETE FROM mcpres.assets WHERE project_id = $1 AND id = $2`)
}

func (h *pgHarness) Context(ctx context.Context, principal string) context.Context {
	return core.WithCaller(ctx, core.Caller{Principal: principal})
}

func (h *pgHarness) BodyReads() int64 { return h.bodies.n.Load() }
