package integration

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/benchutil"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
	"go.phpboyscout.uk/mcp/resources/stores/storetest"
)

// bundleDB makes project p with n text assets a000.. and a grant for alice.
func bundleDB(t testing.TB, n int) *pgDB {
	t.Helper()
	d := newPGDB(t)
	d.project(t, "p")
	d.exec(t, `INSERT INTO mcpres.assets (project_id, id, name, mime_type, body, body_is_text)
		SELECT 'p', 'a' || lpad(i::text, 3, '0'), 'n' || i, 'text/plain', convert_to(repeat('b', 100), 'UTF8'), true
		FROM generate_series(0, $1 - 1) i`, n)
	d.grant(t, "alice", "p", "")
	return d
}

// TestPGStoreReadsTheBodiesInOneRoundTrip proves, with a pgx tracer and at
// the connection, that planning costs one batch and the bodies of the
// items, however many, one batch in one round trip, and that nothing else
// is sent: no plain query, no separate prepare, no extra round trip. The
// reference file's reads plan their small items with their content, so
// they cost the plan alone (a 64-item project, a body, an asset's
// fields); a bundle whose plan carries no content (bodiesBundle) costs the
// plan and the one bodies statement.
func TestPGStoreReadsTheBodiesInOneRoundTrip(t *testing.T) {
	t.Parallel()
	const n = 64
	d := bundleDB(t, n)
	c := countedPool(t, d.url, 1)
	st := newStore(t, c.pool, nil)
	bodies, _ := bodiesBundle(t, c.pool, false)
	r := pgGateway(t, append(st.Bindings(), bodies), pgAllowAll(nil))
	ctx := as(t.Context(), "alice")
	read := func(uri string, items int) {
		t.Helper()
		res, err := r.Read(ctx, uri)
		if err != nil || res.Partial() || len(res.Items()) != items {
			t.Fatalf("read %s: %v", uri, err)
		}
	}
	// The first read on the connection also checks the store and prepares
	// the statements: each binding's plan and body statement once.
	read("asset://project/p", n)
	read("asset://project/p/asset/a000/body", 1)
	read("asset://project/p/asset/a000", 1)
	read("body://project/p", n)

	for _, tc := range []struct {
		uri   string
		items int
		want  int64 // one to plan, one for the bodies
	}{{"asset://project/p", n, 1}, {"asset://project/p/asset/a007/body", 1, 1}, {"asset://project/p/asset/a007", 1, 1}, {"body://project/p", n, 1 + 1}} {
		b0, q0, p0, rt0 := c.tracer.batches.Load(), c.tracer.queries.Load(), c.tracer.prepares.Load(), c.wire.roundTrips.Load()
		read(tc.uri, tc.items)
		batches, queries, prepares, trips := c.tracer.batches.Load()-b0, c.tracer.queries.Load()-q0, c.tracer.prepares.Load()-p0, c.wire.roundTrips.Load()-rt0
		want := tc.want
		if batches != want || trips != want || queries != 0 || prepares != 0 {
			t.Errorf("%s: %d batches, %d round trips, %d queries, %d prepares; want %d, %d, 0, 0",
				tc.uri, batches, trips, queries, prepares, want, want)
		}
	}
}

// benchStore prepares project p with n assets, a pool, a store and a gateway.
func benchStore(b *testing.B, n int) (*pgxpool.Pool, *refStore, *core.Resources, context.Context) {
	b.Helper()
	d := bundleDB(b, n)
	pool := newPool(b, d.url, func(cfg *pgxpool.Config) { cfg.MaxConns = 1 })
	st := newStore(b, pool, nil)
	r := pgGateway(b, st.Bindings(), pgAllowAll(nil))
	return pool, st, r, as(context.Background(), "alice")
}

const sqlRawRow = `SELECT version, name, title, mime_type, body FROM mcpres.assets WHERE project_id = $1 AND id = $2`

type rawRow struct {
	version               int64
	name, title, mimeType string
	body                  []byte
}

func queryRaw(ctx context.Context, pool *pgxpool.Pool, id string) (rawRow, error) {
	var r rawRow
	err := pool.QueryRow(ctx, sqlRawRow, "p", id).Scan(&r.version, &r.name, &r.title, &r.mimeType, &r.body)
	return r, err
}

// BenchmarkPGStoreOneRow compares, on one pool of one connection, a gateway
// read of one asset body (plan + read: two one-round-trip transactions),
// the same two store calls made directly (store), the store's reader alone
// (one transaction) and a raw pgx QueryRow of the same row.
func BenchmarkPGStoreOneRow(b *testing.B) {
	pool, st, r, ctx := benchStore(b, 1)
	b.Run("gateway", func(b *testing.B) {
		b.ReportAllocs()
		defer benchutil.CPU(b)()
		for b.Loop() {
			res, err := r.Read(ctx, "asset://project/p/asset/a000/body")
			if err != nil || len(res.Items()) != 1 {
				b.Fatal(err)
			}
		}
	})
	// gateway-grants: the same read under the store's grants policy: the
	// plan carries the grant flags, the recheck is folded into the bodies
	// statement (two round trips in all).
	grantsRead(b, pool, "asset://project/p/asset/a000/body", 1)
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		defer benchutil.CPU(b)()
		for b.Loop() {
			if _, err := queryRaw(ctx, pool, "a000"); err != nil {
				b.Fatal(err)
			}
		}
	})
	// grants-vs-raw: the ratio, the gateway-grants read and the raw
	// QueryRow timed in turns (benchutil.Ratio), reported as grants/base.
	gr := grantsGateway(b, pool)
	raw := func() {
		if _, err := queryRaw(ctx, pool, "a000"); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("grants-vs-raw", func(b *testing.B) {
		benchutil.Ratio(b, "grants", raw, func() {
			if res, err := gr.Read(ctx, "asset://project/p/asset/a000/body"); err != nil || len(res.Items()) != 1 {
				b.Fatal(err)
			}
		})
	})
	// floor-vs-raw: the batch the gateway-grants read sends (the set-up
	// statement, then the binding's plan, with the same arguments),
	// recorded from one read and sent again by pgx alone: the share of
	// grants/base that is PostgreSQL's and pgx's, not the gateway's.
	sent := sentBatch(b, "asset://project/p/asset/a000/body")
	b.Run("floor-vs-raw", func(b *testing.B) {
		benchutil.Ratio(b, "floor", raw, func() {
			var batch pgx.Batch
			for _, q := range sent {
				batch.Queue(q.SQL, q.Arguments...)
			}
			if err := pool.SendBatch(ctx, &batch).Close(); err != nil {
				b.Fatal(err)
			}
		})
	})
	// authorize-read: the plan (one transaction) through
	// Resources.Authorize, then the pinned read (one transaction) through
	// the store's reader, without the gateway's assembly of a result.
	b.Run("authorize-read", func(b *testing.B) {
		b.ReportAllocs()
		defer benchutil.CPU(b)()
		for b.Loop() {
			a, err := r.Authorize(ctx, "asset://project/p/asset/a000/body")
			if err != nil || a.Len() != 1 {
				b.Fatal(err)
			}
			if _, err := storetest.ReadOne(ctx, st.Reader(), whole(a.Item(0))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reader", func(b *testing.B) {
		target := planned(b, ctx, r, "asset://project/p/asset/a000/body")
		b.ReportAllocs()
		defer benchutil.CPU(b)()
		for b.Loop() {
			if _, err := storetest.ReadOne(ctx, st.Reader(), whole(target)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// batchRecorder keeps the queries of the batches sent on its connections.
type batchRecorder struct{ batches [][]pgx.QueuedQuery }

func (r *batchRecorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	var qs []pgx.QueuedQuery
	for _, q := range d.Batch.QueuedQueries {
		qs = append(qs, pgx.QueuedQuery{SQL: q.SQL, Arguments: slices.Clone(q.Arguments)})
	}
	r.batches = append(r.batches, qs)
	return ctx
}
func (r *batchRecorder) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *batchRecorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}
func (r *batchRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (r *batchRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// sentBatch returns the one batch a gateway-grants read of uri sends once
// its store is checked, as recorded on a pool of its own.
func sentBatch(b *testing.B, uri string) []pgx.QueuedQuery {
	b.Helper()
	rec := &batchRecorder{}
	pool := newPool(b, bundleDB(b, 1).url, func(cfg *pgxpool.Config) { cfg.MaxConns = 1; cfg.ConnConfig.Tracer = rec })
	gr := grantsGateway(b, pool)
	ctx := as(context.Background(), "alice")
	if _, err := gr.Read(ctx, uri); err != nil {
		b.Fatal(err)
	}
	rec.batches = nil
	if res, err := gr.Read(ctx, uri); err != nil || len(res.Items()) != 1 || len(rec.batches) != 1 {
		b.Fatalf("read %s: %v; %d batches, want 1", uri, err, len(rec.batches))
	}
	return rec.batches[0]
}

// BenchmarkPGStoreBundle64 compares a gateway read of a 64-item bundle
// (one plan, one bodies statement pinning the 64 items) with 64 raw pgx
// QueryRows of the same rows.
func BenchmarkPGStoreBundle64(b *testing.B) {
	const n = 64
	pool, _, r, ctx := benchStore(b, n)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("a%03d", i)
	}
	b.Run("gateway", func(b *testing.B) {
		b.ReportAllocs()
		defer benchutil.CPU(b)()
		for b.Loop() {
			res, err := r.Read(ctx, "asset://project/p")
			if err != nil || len(res.Items()) != n {
				b.Fatal(err)
			}
		}
	})
	grantsRead(b, pool, "asset://project/p", n)
	raw := func() {
		for _, id := range ids {
			if _, err := queryRaw(ctx, pool, id); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		defer benchutil.CPU(b)()
		for b.Loop() {
			raw()
		}
	})
	// grants-vs-raw: the ratio timed in turns (benchutil.Ratio).
	gr := grantsGateway(b, pool)
	b.Run("grants-vs-raw", func(b *testing.B) {
		benchutil.Ratio(b, "grants", raw, func() {
			if res, err := gr.Read(ctx, "asset://project/p"); err != nil || len(res.Items()) != n {
				b.Fatal(err)
			}
		})
	})
}

// grantsRead runs the sub-benchmark gateway-grants (the store's policy,
// its recheck taken with the bodies, as a resources file serves it) of a
// read of uri with items items, on a store of its own over pool.
func grantsRead(b *testing.B, pool *pgxpool.Pool, uri string, items int) {
	ctx := as(context.Background(), "alice")
	r := grantsGateway(b, pool)
	b.Run("gateway-grants", func(b *testing.B) {
		b.ReportAllocs()
		defer benchutil.CPU(b)()
		for b.Loop() {
			res, err := r.Read(ctx, uri)
			if err != nil || len(res.Items()) != items {
				b.Fatal(err)
			}
		}
	})
}

// grantsGateway serves the reference store over pool under the store's
// grants policy, as a resources file does.
func grantsGateway(b *testing.B, pool *pgxpool.Pool) *core.Resources {
	st := newStore(b, pool, &refOptions{Keyed: true})
	return pgGateway(b, st.Bindings(), st.Policy())
}

// TestPGStoreComputesEachBodyOnce proves the bodies statement computes a
// computed body once per item: a body whose expression PostgreSQL could
// pull up into the statement around it would be computed for each use of
// it there (its size, its fit, the body), so a bundle of JSON documents
// built per row would cost several times the work. The body here calls a
// function that raises a notice per call, counted on the connection.
func TestPGStoreComputesEachBodyOnce(t *testing.T) {
	t.Parallel()
	const n = 8
	d := newPGDB(t)
	d.exec(t, `CREATE TABLE notes (key text PRIMARY KEY, version int NOT NULL DEFAULT 1, body text NOT NULL)`)
	d.exec(t, `INSERT INTO notes (key, body) SELECT 'k' || i, 'note ' || i FROM generate_series(1, $1) i`, n)
	d.exec(t, `CREATE FUNCTION counted(s text) RETURNS text IMMUTABLE LANGUAGE plpgsql AS $$
		BEGIN RAISE NOTICE 'mcpres-counted'; RETURN s; END $$`)
	d.exec(t, `GRANT SELECT ON notes TO mcpres_reader`)
	d.exec(t, callerRLS("notes"))
	var calls atomic.Int64
	pool := newPool(t, d.url, func(cfg *pgxpool.Config) {
		cfg.MaxConns = 1
		cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
			if n.Message == "mcpres-counted" {
				calls.Add(1)
			}
		}
	})
	b := hostBinding(t, pool, postgres.SourceOptions{Name: "notes", Exempt: map[string]string{"public.counted": "counts its calls, reads nothing"}}, postgres.SQLBinding{
		Definition: core.ResourceDefinition{URI: "note://all", Name: "notes"},
		Bundle:     `SELECT key, version, 'text/plain' AS mime, true AS text FROM notes ORDER BY key`,
		ItemURI:    "note://item/{key}",
		Body:       `SELECT n.version, counted(n.body) AS body FROM notes n WHERE n.key = $key`,
	})
	r := pgGateway(t, []core.ResourceBinding{b}, pgAllowAll(nil))
	res, err := r.Read(as(t.Context(), "alice"), "note://all")
	if err != nil || res.Partial() || len(res.Items()) != n {
		t.Fatalf("read: %v", err)
	}
	if got := calls.Load(); got != n {
		t.Fatalf("the body function ran %d times for %d items, want once each", got, n)
	}
}
