package integration

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
	"go.phpboyscout.uk/mcp/resources/stores/storetest"
)

// The schema of the SQL-defined conformance binding: items a principal
// reads when it is one of the row's readers, under row-level security.
const conformanceSchema = `
DO $$ BEGIN CREATE ROLE conf_reader NOLOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
CREATE TABLE items (
	id      text PRIMARY KEY,
	version bigint NOT NULL DEFAULT 1,
	mime    text NOT NULL,
	is_text boolean NOT NULL,
	body    bytea NOT NULL,
	readers text[] NOT NULL
);
ALTER TABLE items ENABLE ROW LEVEL SECURITY;
CREATE POLICY readers ON items FOR SELECT TO conf_reader
	USING (NULLIF(current_setting('mcp.principal', true), '') = ANY (readers));
GRANT SELECT ON items TO conf_reader;`

// TestOwnSchemaSQLBindingPassesTheStoreConformanceSuite runs storetest on a
// binding defined by nothing but SQL the host wrote (a plan and a body
// statement) over its own table with its own row-level security.
func TestOwnSchemaSQLBindingPassesTheStoreConformanceSuite(t *testing.T) {
	t.Parallel()
	url := harness.Postgres(t)
	admin := newPool(t, url, nil)
	applySQL(t, admin, conformanceSchema)
	bodies := &bodyCounter{}
	pool := newPool(t, url, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = bodies })
	src, err := postgres.NewSource(pool, postgres.SourceOptions{Name: "conf", Role: "conf_reader"})
	if err != nil {
		t.Fatal(err)
	}
	binding, err := src.Binding(postgres.SQLBinding{
		Definition: core.ResourceDefinition{URITemplate: "item://conf/{id}", Name: "item"},
		Plan:       `SELECT i.id AS key, i.version, i.mime, i.is_text AS text, octet_length(i.body) AS size FROM items i WHERE i.id = $id`,
		Body:       `SELECT i.body, i.version FROM items i WHERE i.id = $key`,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	var next atomic.Int64
	storetest.Run(t, func(ctx context.Context, t *testing.T) (storetest.Harness, error) {
		return &sqlHarness{admin: admin, binding: binding, bodies: bodies, next: &next}, nil
	})
}

// bodyCounter counts the body statements a pool sends.
type bodyCounter struct {
	n atomic.Int64
}

func (b *bodyCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (b *bodyCounter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	if strings.Contains(data.SQL, "THEN b.body END") {
		b.n.Add(1)
	}
}
func (b *bodyCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
func (b *bodyCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (b *bodyCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// sqlHarness is storetest.Harness over the items table: a change bumps the
// version, readers are the row's readers array.
type sqlHarness struct {
	admin   *pgxpool.Pool
	binding core.ResourceBinding
	bodies  *bodyCounter
	next    *atomic.Int64
}

var (
	_ storetest.Harness     = (*sqlHarness)(nil)
	_ storetest.BodyCounter = (*sqlHarness)(nil)
)

func (h *sqlHarness) Binding() core.ResourceBinding { return h.binding }

func (h *sqlHarness) Create(ctx context.Context, it storetest.Item) (string, error) {
	id := fmt.Sprintf("item-%d", h.next.Add(1))
	body := it.Body
	if body == nil {
		body = []byte{}
	}
	readers := it.Readers
	if readers == nil {
		readers = []string{}
	}
	_, err := h.admin.Exec(ctx, `INSERT INTO items (id, mime, is_text, body, readers) VALUES ($1, $2, $3, $4, $5)`,
		id, it.MIMEType, it.Text, body, readers)
	return "item://conf/" + id, err
}

func (h *sqlHarness) exec(ctx context.Context, uri, sql string, args ...any) error {
	id, ok := strings.CutPrefix(uri, "item://conf/")
	if !ok {
		return fmt.Errorf("not an item URI: %s", uri)
	}
	tag, err := h.admin.Exec(ctx, sql, append([]any{id}, args...)...)
	if err == nil && tag.RowsAffected() != 1 {
		err = fmt.Errorf("%s changed %d rows", sql, tag.RowsAffected())
	}
	return err
}

func (h *sqlHarness) Change(ctx context.Context, uri string, body []byte) error {
	if body == nil {
		body = []byte{}
	}
	return h.exec(ctx, uri, `UPDATE items SET body = $2, version = version + 1 WHERE id = $1`, body)
}

func (h *sqlHarness) Revoke(ctx context.Context, uri, principal string) error {
	return h.exec(ctx, uri, `UPDATE items SET readers = array_remove(readers, $2) WHERE id = $1`, principal)
}

func (h *sqlHarness) Restore(ctx context.Context, uri, principal string) error {
	return h.exec(ctx, uri, `UPDATE items SET readers = array_append(array_remove(readers, $2), $2) WHERE id = $1`, principal)
}

func (h *sqlHarness) Delete(ctx context.Context, uri string) error {
	return h.exec(ctx, uri, `DELETE FROM items WHERE id = $1`)
}

func (h *sqlHarness) Context(ctx context.Context, principal string) context.Context {
	return core.WithCaller(ctx, core.Caller{Principal: principal})
}

func (h *sqlHarness) BodyReads() int64 { return h.bodies.n.Load() }

// TestOwnSchemaKeyFamilyBindingPassesTheStoreConformanceSuite runs storetest
// on a key-family binding (a literal and a captured segment before the
// key's own segments) over the same bucket, users and grants as the S3
// store's own conformance run.
func TestOwnSchemaKeyFamilyBindingPassesTheStoreConformanceSuite(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(ctx context.Context, t *testing.T) (storetest.Harness, error) {
		inner, err := newS3Harness(ctx, t)
		if err != nil {
			return nil, err
		}
		return &familyHarness{s3Harness: inner.(*s3Harness)}, nil
	})
}

// familyHarness serves the S3 harness's items/NAME keys through the key
// family s3fam://conf/{area}/... with Prefix "{area}/": the item at key
// items/NAME is s3fam://conf/items/NAME, planned by the family's depth-1
// template.
type familyHarness struct{ *s3Harness }

const familyPrefix = "s3fam://conf/"

func (h *familyHarness) Binding() core.ResourceBinding {
	bs, err := h.store.KeyBindings(s3storeFamily())
	if err != nil {
		panic(err) // a constant, valid configuration
	}
	return bs[0]
}

func (h *familyHarness) inner(uri string) string {
	return conformancePrefix + strings.TrimPrefix(uri, familyPrefix+"items/")
}

func (h *familyHarness) Create(ctx context.Context, it storetest.Item) (string, error) {
	uri, err := h.s3Harness.Create(ctx, it)
	return familyPrefix + "items/" + strings.TrimPrefix(uri, conformancePrefix), err
}

func (h *familyHarness) Change(ctx context.Context, uri string, body []byte) error {
	return h.s3Harness.Change(ctx, h.inner(uri), body)
}

func (h *familyHarness) Revoke(ctx context.Context, uri, principal string) error {
	return h.s3Harness.Revoke(ctx, h.inner(uri), principal)
}

func (h *familyHarness) Restore(ctx context.Context, uri, principal string) error {
	return h.s3Harness.Restore(ctx, h.inner(uri), principal)
}

func (h *familyHarness) Delete(ctx context.Context, uri string) error {
	return h.s3Harness.Delete(ctx, h.inner(uri))
}

func s3storeFamily() s3store.KeyFamily {
	return s3store.KeyFamily{Definition: core.ResourceDefinition{Name: "conf-item"},
		URI: familyPrefix + "{area}/...", Prefix: "{area}/", MaxDepth: 3}
}
