package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
)

// The tests of this file run against a real PostgreSQL (the integration
// harness: scripts/services.sh up, or testcontainers); without one they
// are skipped, or fail under MCPRES_INTEGRATION=require.
func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

// wireCount counts, at the connections of one pool, the batches pgx sends
// and the round trips: each write that follows a read starts a new one.
type wireCount struct {
	batches, trips atomic.Int64
}

type countedConn struct {
	net.Conn
	w         *wireCount
	mu        sync.Mutex
	afterRead bool
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.afterRead = true
	c.mu.Unlock()
	return n, err
}

func (c *countedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.afterRead {
		c.w.trips.Add(1)
		c.afterRead = false
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (w *wireCount) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (w *wireCount) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (w *wireCount) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	w.batches.Add(1)
	return ctx
}
func (w *wireCount) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (w *wireCount) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// bodiesDB is a fresh database with a docs table, a grants table and a
// session over a pool of one counted connection that keeps the login role
// (the harness's, which owns the tables).
type bodiesDB struct {
	pool *pgxpool.Pool
	s    *session
	w    *wireCount
}

func newBodiesDB(t *testing.T) *bodiesDB {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(harness.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	d := &bodiesDB{w: &wireCount{}}
	cfg.MaxConns = 1
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	cfg.ConnConfig.Tracer = d.w
	dialer := &net.Dialer{}
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countedConn{Conn: c, w: d.w}, nil
	}
	if d.pool, err = pgxpool.NewWithConfig(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.pool.Close)
	if d.s, err = newSession(d.pool, &sessionOptions{LoginRole: true}); err != nil {
		t.Fatal(err)
	}
	d.exec(t, `CREATE TABLE docs (id text PRIMARY KEY, version int NOT NULL, body bytea)`)
	d.exec(t, `CREATE TABLE grants (principal text, doc text, visible bool, read bool, disclose bool)`)
	// Under row-level security that lets every caller with a principal
	// through, so that a Source's proof accepts the tables (these tests
	// are about reads, not access).
	for _, table := range []string{"docs", "grants"} {
		d.exec(t, `ALTER TABLE `+table+` ENABLE ROW LEVEL SECURITY`)
		d.exec(t, `CREATE POLICY callers ON `+table+` FOR SELECT USING (current_setting('mcp.principal', true) <> '')`)
	}
	return d
}

func (d *bodiesDB) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := d.pool.Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// doc stores id at version with body (nil: NULL).
func (d *bodiesDB) doc(t *testing.T, id string, version int, body []byte) {
	t.Helper()
	d.exec(t, `INSERT INTO docs (id, version, body) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET version = excluded.version, body = excluded.body`, id, version, body)
}

// statement builds the bodies statement of the body statement sql.
func bodiesOf(t *testing.T, sql string, versionColumn bool, recheck *bodiesRecheck) *bodiesStatement {
	t.Helper()
	named, err := rewriteNamed(sql, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := buildBodies(named, versionColumn, recheck)
	if err != nil {
		t.Fatalf("buildBodies: %v", err)
	}
	return st
}

const bodyByKey = `SELECT body, version FROM docs WHERE id = $key`

// read runs st for items under budget as alice and returns each item's
// payload or error.
func (d *bodiesDB) read(t *testing.T, st *bodiesStatement, items []bodyItem, budget int64) ([]bodyResult, []core.ResourcePayload, []error) {
	t.Helper()
	res, err := d.s.bodies(core.WithCaller(t.Context(), core.Caller{Principal: "alice"}), st, items, budget, bodiesPass{})
	if err != nil {
		t.Fatalf("bodies: %v\n%s", err, st.sql)
	}
	if len(res) != len(items) {
		t.Fatalf("%d results for %d items", len(res), len(items))
	}
	ps, errs := make([]core.ResourcePayload, len(items)), make([]error, len(items))
	for i, r := range res {
		ps[i], errs[i] = r.payload(items[i], "text/plain", true)
	}
	return res, ps, errs
}

func body(n int, c byte) []byte { return []byte(strings.Repeat(string(c), n)) }

func wantText(t *testing.T, i int, p core.ResourcePayload, err error, text string) {
	t.Helper()
	if err != nil || p.Text() != text {
		t.Errorf("item %d: %q, %v; want %q", i, p.Text(), err, text)
	}
}

func wantTooLarge(t *testing.T, i int, r bodyResult, err error, size int64) {
	t.Helper()
	var tl *core.TooLargeError
	if !errors.As(err, &tl) || tl.Size != size || r.body != nil {
		t.Errorf("item %d: %v (%d body bytes transferred); want TooLarge(%d), no body", i, err, len(r.body), size)
	}
}

// TestBodiesPinEachItemToItsVersion proves that each item is read at its
// planned version: an item whose row has another version is reported
// (ErrChanged, with the row's version) and its body is not returned, with a
// version column and with a statement that compares $version itself (which
// returns no row: unavailable).
func TestBodiesPinEachItemToItsVersion(t *testing.T) {
	t.Parallel()
	d := newBodiesDB(t)
	d.doc(t, "a", 1, []byte("alpha"))
	d.doc(t, "b", 2, []byte("beta"))
	items := []bodyItem{{"a", "1", 100}, {"b", "1", 100}, {"a", "1", 100}}

	res, ps, errs := d.read(t, bodiesOf(t, bodyByKey, true, nil), items, 1000)
	wantText(t, 0, ps[0], errs[0], "alpha")
	wantText(t, 2, ps[2], errs[2], "alpha")
	if !errors.Is(errs[1], ErrChanged) || res[1].version != "2" || res[1].body != nil {
		t.Errorf("changed item: %v, version %q, %d body bytes; want ErrChanged, version 2, no body", errs[1], res[1].version, len(res[1].body))
	}

	pinned := bodiesOf(t, `SELECT body FROM docs WHERE id = $key AND version::text = $version`, false, nil)
	res, ps, errs = d.read(t, pinned, items, 1000)
	wantText(t, 0, ps[0], errs[0], "alpha")
	if !(core.KindOf(errs[1]) == core.FailureUnavailable) || res[1].found {
		t.Errorf("changed item without a version column: %v, found %v; want unavailable", errs[1], res[1].found)
	}
}

// TestBodiesBoundEachItemByItsLimit proves that a body over its own item's
// limit is not transferred, is reported TooLarge with its size, and spends
// nothing of the budget: the items after it are still read.
func TestBodiesBoundEachItemByItsLimit(t *testing.T) {
	t.Parallel()
	d := newBodiesDB(t)
	d.doc(t, "big", 1, body(100, 'x'))
	d.doc(t, "small", 1, body(60, 'y'))
	d.doc(t, "fits", 1, body(80, 'z'))
	items := []bodyItem{{"big", "1", 99}, {"small", "1", 60}, {"fits", "1", 1000}}
	res, ps, errs := d.read(t, bodiesOf(t, bodyByKey, true, nil), items, 140)
	wantTooLarge(t, 0, res[0], errs[0], 100)
	wantText(t, 1, ps[1], errs[1], string(body(60, 'y')))
	wantText(t, 2, ps[2], errs[2], string(body(80, 'z')))
	if res[0].cut {
		t.Errorf("an item over its own limit is reported cut by the budget")
	}
}

// TestBodiesStopAtTheBudget proves the budget cut: bodies are returned in
// plan order while their running sum stays within the budget; the first
// past it and every one after it are cut (TooLarge, not transferred), even
// a small one that would fit what is left, as the gateway's sequential
// admission stops; items that are changed, missing or over their own
// limit spend nothing.
func TestBodiesStopAtTheBudget(t *testing.T) {
	t.Parallel()
	d := newBodiesDB(t)
	for i := range 6 {
		d.doc(t, fmt.Sprint(i), 1, body(100, byte('a'+i)))
	}
	d.doc(t, "tiny", 1, body(1, 't'))
	d.doc(t, "changed", 2, body(100, 'c'))
	items := []bodyItem{
		{"0", "1", 1000},       // 100
		{"changed", "1", 1000}, // not counted
		{"1", "1", 50},         // over its limit: not counted
		{"missing", "1", 1000}, // not counted
		{"2", "1", 1000},       // 200
		{"3", "1", 1000},       // 300: past 250, cut
		{"tiny", "1", 1000},    // would fit what is left: cut all the same
		{"4", "1", 50},         // over its own limit: TooLarge, not cut
	}
	res, ps, errs := d.read(t, bodiesOf(t, bodyByKey, true, nil), items, 250)
	wantText(t, 0, ps[0], errs[0], string(body(100, 'a')))
	if !errors.Is(errs[1], ErrChanged) {
		t.Errorf("item 1: %v, want ErrChanged", errs[1])
	}
	wantTooLarge(t, 2, res[2], errs[2], 100)
	if !(core.KindOf(errs[3]) == core.FailureUnavailable) {
		t.Errorf("item 3: %v, want unavailable", errs[3])
	}
	wantText(t, 4, ps[4], errs[4], string(body(100, 'c')))
	wantTooLarge(t, 5, res[5], errs[5], 100)
	wantTooLarge(t, 6, res[6], errs[6], 1)
	wantTooLarge(t, 7, res[7], errs[7], 100)
	for i, want := range []bool{false, false, false, false, false, true, true, false} {
		if res[i].cut != want {
			t.Errorf("item %d: cut %v, want %v", i, res[i].cut, want)
		}
	}
	// Exactly at the budget is within it.
	_, ps, errs = d.read(t, bodiesOf(t, bodyByKey, true, nil), items[:5], 200)
	wantText(t, 4, ps[4], errs[4], string(body(100, 'c')))
}

// TestBodiesNullAndMissingRows proves what an item without a row, with a
// NULL body and with an empty body becomes, and that an item the body
// statement returns several rows for fails alone.
func TestBodiesNullAndMissingRows(t *testing.T) {
	t.Parallel()
	d := newBodiesDB(t)
	d.doc(t, "null", 1, nil)
	d.doc(t, "empty", 1, []byte{})
	d.doc(t, "a", 1, []byte("alpha"))
	items := []bodyItem{{"missing", "1", 100}, {"null", "1", 100}, {"empty", "1", 0}, {"a", "1", 100}}
	res, ps, errs := d.read(t, bodiesOf(t, bodyByKey, true, nil), items, 5)
	if !(core.KindOf(errs[0]) == core.FailureUnavailable) || res[0].found || res[0].rows != 1 {
		t.Errorf("missing: %v, found %v, rows %d; want unavailable", errs[0], res[0].found, res[0].rows)
	}
	if !(core.KindOf(errs[1]) == core.FailureUnavailable) || !res[1].found || res[1].size != nil {
		t.Errorf("NULL body: %v, found %v, size %v; want unavailable", errs[1], res[1].found, res[1].size)
	}
	wantText(t, 2, ps[2], errs[2], "")
	wantText(t, 3, ps[3], errs[3], "alpha")

	twice := bodiesOf(t, `SELECT body, version FROM docs WHERE id = $key UNION ALL SELECT body, version FROM docs WHERE id = $key AND id = 'a'`, true, nil)
	_, ps, errs = d.read(t, twice, []bodyItem{{"empty", "1", 10}, {"a", "1", 10}}, 100)
	wantText(t, 0, ps[0], errs[0], "")
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "more than one row") {
		t.Errorf("an item of two rows: %v, want an error", errs[1])
	}
}

// TestBodiesReadSixtyFourItemsInOneRoundTrip proves that 64 items cost one
// batch in one round trip (after the connection prepared the statement
// once), and come back in plan order.
func TestBodiesReadSixtyFourItemsInOneRoundTrip(t *testing.T) {
	t.Parallel()
	d := newBodiesDB(t)
	d.exec(t, `INSERT INTO docs (id, version, body) SELECT 'd' || i, i, convert_to('body ' || i, 'UTF8') FROM generate_series(0, 63) i`)
	items := make([]bodyItem, 64)
	for i := range items {
		j := 63 - i // plan order is not key order
		items[i] = bodyItem{fmt.Sprintf("d%d", j), fmt.Sprint(j), 100}
	}
	st := bodiesOf(t, bodyByKey, true, nil)
	d.read(t, st, items, 1<<20) // prepares the statement on the connection
	b0, t0 := d.w.batches.Load(), d.w.trips.Load()
	_, ps, errs := d.read(t, st, items, 1<<20)
	if b, trips := d.w.batches.Load()-b0, d.w.trips.Load()-t0; b != 1 || trips != 1 {
		t.Errorf("64 items: %d batches, %d round trips; want 1, 1", b, trips)
	}
	for i := range items {
		wantText(t, i, ps[i], errs[i], fmt.Sprintf("body %d", 63-i))
	}
}

// TestBodiesFoldTheRecheck proves that the decide statement folded into
// the bodies statement answers for each item's key as the policy's own
// statement does (no row hides; several rows take the most restrictive
// answer; optional columns default), with $principal, $binding and
// $captures bound, in the same one round trip.
func TestBodiesFoldTheRecheck(t *testing.T) {
	t.Parallel()
	d := newBodiesDB(t)
	for _, id := range []string{"a", "b", "c", "d"} {
		d.doc(t, id, 1, []byte("body of "+id))
	}
	d.exec(t, `INSERT INTO grants (principal, doc, visible, read, disclose) VALUES
		('alice', 'a', true, true, true), ('alice', 'b', true, false, NULL),
		('alice', 'c', true, true, true), ('alice', 'c', true, NULL, true),
		('bob', 'd', true, true, true)`)
	decideSQL := `SELECT doc AS key, visible, read, disclose FROM grants
		WHERE principal = $principal AND doc = ANY($keys) AND $binding = 'docs' AND ($captures::jsonb ->> 'tenant') = 'acme'`
	decide, err := rewriteNamed(decideSQL, decideCast)
	if err != nil {
		t.Fatal(err)
	}
	st := bodiesOf(t, bodyByKey, true, &bodiesRecheck{decide: decide, disclose: true})
	items := []bodyItem{{"a", "1", 100}, {"b", "1", 100}, {"c", "1", 100}, {"d", "1", 100}}
	ctx := core.WithCaller(t.Context(), core.Caller{Principal: "alice"})
	d.s.bodies(ctx, st, items, 1000, bodiesPass{binding: "docs", captures: `{"tenant":"acme"}`}) // prepares
	b0, t0 := d.w.batches.Load(), d.w.trips.Load()
	res, err := d.s.bodies(ctx, st, items, 1000, bodiesPass{binding: "docs", captures: `{"tenant":"acme"}`})
	if err != nil {
		t.Fatalf("bodies: %v\n%s", err, st.sql)
	}
	if b, trips := d.w.batches.Load()-b0, d.w.trips.Load()-t0; b != 1 || trips != 1 {
		t.Errorf("bodies and recheck: %d batches, %d round trips; want 1, 1", b, trips)
	}
	want := []struct {
		decided bool
		f       flags
	}{
		{true, flags{discover: true, visible: true, read: true, disclose: true}},
		{true, flags{discover: true, visible: true}},
		{true, flags{discover: true, visible: true, disclose: true}},
		{false, flags{}},
	}
	for i, w := range want {
		if res[i].decided != w.decided || res[i].answer != w.f {
			t.Errorf("item %s: decided %v %+v, want %v %+v", items[i].key, res[i].decided, res[i].answer, w.decided, w.f)
		}
		if string(res[i].body) != "body of "+items[i].key {
			t.Errorf("item %s: body %q", items[i].key, res[i].body)
		}
	}
	// Another pass binds its own binding and captures: the same grants
	// decide nothing for it.
	res, err = d.s.bodies(ctx, st, items, 1000, bodiesPass{binding: "docs", captures: `{"tenant":"other"}`})
	if err != nil {
		t.Fatal(err)
	}
	for i := range items {
		if res[i].decided {
			t.Errorf("item %s decided for another tenant", items[i].key)
		}
	}
}

// TestBodiesKeepTheBodyStatementsMeaning proves that only the uses of
// parameters are replaced: '$key' constants and comments stay as written, and $principal stays a bound parameter.
func TestBodiesKeepTheBodyStatementsMeaning(t *testing.T) {
	t.Parallel()
	d := newBodiesDB(t)
	d.doc(t, "a", 1, []byte("alpha"))
	sql := `SELECT d.body, d.version /* $version */ FROM docs d -- $key
		WHERE d.id = $key AND '$key' = E'\$key' AND $principal = 'alice' AND $key = d.id`
	named, err := rewriteNamed(sql, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := buildBodies(named, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, kept := range []string{"/* $version */", "-- $key", `'$key' = E'\$key'`} {
		if !strings.Contains(st.sql, kept) {
			t.Errorf("the statement lost %s:\n%s", kept, st.sql)
		}
	}
	if len(st.params) != 1 || st.params[0] != "principal" || strings.Count(st.sql, "(mcpres_item.mcpres_key)") != 2 {
		t.Errorf("params %v, statement:\n%s", st.params, st.sql)
	}
	_, ps, errs := d.read(t, st, []bodyItem{{"a", "1", 10}}, 10)
	wantText(t, 0, ps[0], errs[0], "alpha")
	res, err := d.s.bodies(core.WithCaller(t.Context(), core.Caller{Principal: "bob"}), st, []bodyItem{{"a", "1", 10}}, 10, bodiesPass{})
	if err != nil || res[0].found {
		t.Errorf("bob: found %v, %v; want no row", res[0].found, err)
	}
}

// TestBuildBodiesRefusesAnUnpinnedStatement covers what buildBodies
// refuses without a database.
func TestBuildBodiesRefusesAnUnpinnedStatement(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sql           string
		versionColumn bool
	}{
		{`SELECT body FROM docs WHERE id = 'a'`, true},
		{`SELECT body FROM docs WHERE id = $key`, false},
	} {
		named, err := rewriteNamed(tc.sql, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := buildBodies(named, tc.versionColumn, nil); err == nil {
			t.Errorf("%s: built", tc.sql)
		}
	}
}

// BenchmarkBodies compares, on one pool of one connection, with and
// without the recheck folded in:
//
//   - 64/bodies: the bodies of 64 row items read by one bodies statement
//     (one round trip: set-up and statement);
//   - 64/sequential: 64 pinned body statements as the store's reader sends
//     them today (64 round trips);
//   - 64/raw: 64 raw pgx QueryRows of the same rows, without a set-up;
//   - 1/bodies-recheck: one item's body and its recheck (the decide
//     statement) in one bodies statement, one round trip;
//   - 1/pinned-then-decide: today's body statement, then the decide
//     statement (two round trips);
//   - 1/raw: one raw QueryRow.
func BenchmarkBodies(b *testing.B) {
	const n = 64
	cfg, err := pgxpool.ParseConfig(harness.Postgres(b))
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(b.Context(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	s, err := newSession(pool, &sessionOptions{LoginRole: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx := core.WithCaller(context.Background(), core.Caller{Principal: "alice"})
	for _, sql := range []string{
		`CREATE TABLE docs (id text PRIMARY KEY, version int NOT NULL, body bytea)`,
		`INSERT INTO docs SELECT 'd' || lpad(i::text, 3, '0'), 1, convert_to(repeat('b', 100), 'UTF8') FROM generate_series(0, 63) i`,
		`CREATE TABLE grants (principal text, doc text, visible bool, read bool, disclose bool, PRIMARY KEY (principal, doc))`,
		`INSERT INTO grants SELECT 'alice', id, true, true, true FROM docs`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			b.Fatal(err)
		}
	}
	items := make([]bodyItem, n)
	for i := range items {
		items[i] = bodyItem{fmt.Sprintf("d%03d", i), "1", 1 << 20}
	}
	const decideSQL = `SELECT doc AS key, visible, read, disclose FROM grants WHERE principal = $principal AND doc = ANY($keys)`
	decide, err := rewriteNamed(decideSQL, decideCast)
	if err != nil {
		b.Fatal(err)
	}
	st, withRecheck := bodiesOfB(b, bodyByKey, nil), bodiesOfB(b, bodyByKey, &bodiesRecheck{decide: decide, disclose: true})
	one, err := rewriteNamed(bodyByKey, nil)
	if err != nil {
		b.Fatal(err)
	}
	// The reader's statement today (prepareBody's form, version column)
	// and the policy's (prepareSelect's form).
	pinned := "SELECT q.version::text, octet_length(q.body), CASE WHEN q.version::text = $2::text AND octet_length(q.body) <= $3::int8 THEN q.body END FROM (" + one.SQL + "\n) AS q"
	decided := `SELECT "key"::text, "visible", "read", "disclose" FROM (` + decide.SQL + "\n) AS q"
	readPinned := func(it bodyItem) {
		var version string
		var size *int64
		var body []byte
		if err := s.query(ctx, pinned, []any{it.key, it.version, it.limit}, func(r pgx.Rows) error {
			return r.Scan(&version, &size, &body)
		}); err != nil || len(body) != 100 {
			b.Fatal(err)
		}
	}
	readRaw := func(it bodyItem) {
		var body []byte
		var version int
		if err := pool.QueryRow(ctx, `SELECT version, body FROM docs WHERE id = $1`, it.key).Scan(&version, &body); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("64/bodies", func(b *testing.B) {
		b.ReportAllocs()
		defer serverCPU(b, pool)()
		for b.Loop() {
			res, err := s.bodies(ctx, st, items, 1<<30, bodiesPass{})
			if err != nil || len(res) != n || len(res[n-1].body) != 100 {
				b.Fatal(err)
			}
		}
	})
	b.Run("64/sequential", func(b *testing.B) {
		b.ReportAllocs()
		defer serverCPU(b, pool)()
		for b.Loop() {
			for _, it := range items {
				readPinned(it)
			}
		}
	})
	b.Run("64/raw", func(b *testing.B) {
		b.ReportAllocs()
		defer serverCPU(b, pool)()
		for b.Loop() {
			for _, it := range items {
				readRaw(it)
			}
		}
	})
	b.Run("1/bodies-recheck", func(b *testing.B) {
		b.ReportAllocs()
		defer serverCPU(b, pool)()
		for b.Loop() {
			res, err := s.bodies(ctx, withRecheck, items[:1], 1<<30, bodiesPass{})
			if err != nil || len(res[0].body) != 100 || !res[0].answer.read {
				b.Fatal(err)
			}
		}
	})
	b.Run("1/pinned-then-decide", func(b *testing.B) {
		b.ReportAllocs()
		defer serverCPU(b, pool)()
		for b.Loop() {
			readPinned(items[0])
			seen := 0
			if err := s.query(ctx, decided, []any{"alice", []string{items[0].key}}, func(r pgx.Rows) error {
				var key string
				var visible, read, disclose *bool
				seen++
				return r.Scan(&key, &visible, &read, &disclose)
			}); err != nil || seen != 1 {
				b.Fatal(err)
			}
		}
	})
	b.Run("1/raw", func(b *testing.B) {
		b.ReportAllocs()
		defer serverCPU(b, pool)()
		for b.Loop() {
			readRaw(items[0])
		}
	})
}

// serverCPU starts measuring the CPU time of the server process behind
// pool's one connection (user and system, from /proc: a server on this
// machine); call the function it returns right after the loop to report
// it as srv-ns/op. A shared machine disturbs it far less than wall time.
// It reports nothing when the server's process is not visible.
func serverCPU(b *testing.B, pool *pgxpool.Pool) (stop func()) {
	var pid int
	if err := pool.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		b.Fatal(err)
	}
	read := func() (int64, bool) {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, false
		}
		i := bytes.LastIndexByte(raw, ')')
		f := strings.Fields(string(raw[i+2:]))
		if len(f) < 13 {
			return 0, false
		}
		u, err1 := strconv.ParseInt(f[11], 10, 64)
		s, err2 := strconv.ParseInt(f[12], 10, 64)
		return (u + s) * 10_000_000, err1 == nil && err2 == nil // clock ticks of 10 ms
	}
	start, ok := read()
	return func() {
		if end, ok2 := read(); ok && ok2 && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "srv-ns/op")
		}
	}
}

func bodiesOfB(b *testing.B, sql string, recheck *bodiesRecheck) *bodiesStatement {
	named, err := rewriteNamed(sql, nil)
	if err != nil {
		b.Fatal(err)
	}
	st, err := buildBodies(named, true, recheck)
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// TestBodiesRunOnTheirGenericPlan proves that a bodies statement is not
// planned again for each call: PostgreSQL would keep making a custom plan
// for a statement over a one-element array parameter (its default
// estimate is ten), which costs more server time than the read; the
// generic set-up makes every execution use the generic plan.
func TestBodiesRunOnTheirGenericPlan(t *testing.T) {
	t.Parallel()
	d := newBodiesDB(t)
	d.doc(t, "a", 1, []byte("alpha"))
	st := bodiesOf(t, bodyByKey, true, nil)
	for range 12 {
		d.read(t, st, []bodyItem{{"a", "1", 100}}, 100)
	}
	var generic, custom int64
	if err := d.pool.QueryRow(t.Context(), `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`, st.sql).Scan(&generic, &custom); err != nil {
		t.Fatal(err)
	}
	if generic != 12 || custom != 0 {
		t.Errorf("12 reads: %d generic plans, %d custom; want 12, 0", generic, custom)
	}
	// The setting ends with the transaction.
	var mode string
	if err := d.pool.QueryRow(t.Context(), `SELECT current_setting('plan_cache_mode')`).Scan(&mode); err != nil || mode != "auto" {
		t.Errorf("after the read plan_cache_mode is %q (%v), want auto", mode, err)
	}
}
