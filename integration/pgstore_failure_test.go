package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
	"go.phpboyscout.uk/mcp/resources/stores/storetest"
)

// TestPGStoreOversizeBodyIsNotTransferred proves a 64 MiB body under a
// 1 MiB item limit is refused by the statement itself: the reader returns
// TooLarge with the stored size while the connection receives less than
// 64 KiB for the item.
func TestPGStoreOversizeBodyIsNotTransferred(t *testing.T) {
	t.Parallel()
	const big = 64 << 20
	d := newPGDB(t)
	d.project(t, "p")
	d.exec(t, `INSERT INTO mcpres.assets (project_id, id, name, mime_type, body)
		VALUES ('p', 'big', 'big.bin', 'application/octet-stream', convert_to(repeat('x', $1), 'UTF8'))`, big)
	d.textAsset(t, "p", "small", "small")
	d.grant(t, "alice", "p", "")
	c := countedPool(t, d.url, 1)
	st := newStore(t, c.pool, nil)
	ctx := as(t.Context(), "alice")
	r := pgGateway(t, st.Bindings(), pgAllowAll(nil), core.WithResourceLimits(core.ResourceLimits{MaxItemBytes: 1 << 20}))
	target := planned(t, ctx, r, "asset://project/p/asset/big/body")
	// Prepare the statement on the pool's connection first.
	if _, err := storetest.ReadOne(ctx, st.Reader(), core.ReadItem{Target: target, Limit: 1 << 20}); err == nil {
		t.Fatal("warm-up read of the big body succeeded")
	}

	before := c.wire.received.Load()
	_, err := storetest.ReadOne(ctx, st.Reader(), core.ReadItem{Target: target, Limit: 1 << 20})
	received := c.wire.received.Load() - before
	var tooLarge *core.TooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Size != big {
		t.Fatalf("read: %v, want TooLarge(%d)", err, big)
	}
	if received >= 64<<10 {
		t.Fatalf("the oversize read received %d bytes, want under 64 KiB", received)
	}
	t.Logf("a refused 64 MiB body cost %d bytes on the pgWire", received)

	// Through the gateway with a 1 MiB item limit: budget_exceeded, and the
	// sibling still fits.
	before = c.wire.received.Load()
	_, err = r.Read(ctx, "asset://project/p/asset/big/body")
	if core.KindOf(err) != core.FailureNoItems {
		t.Fatalf("gateway read of the big body: %v, want no items (budget_exceeded)", err)
	}
	if received := c.wire.received.Load() - before; received >= 64<<10 {
		t.Fatalf("the gateway read received %d bytes, want under 64 KiB", received)
	}
}

// slowNotes makes a host table of notes a, slow, z whose body SQL sleeps on
// "slow" while the flag says so, and a bundle binding of all notes.
func slowNotes(t *testing.T, d *pgDB, db postgres.DB, opts postgres.SourceOptions) core.ResourceBinding {
	t.Helper()
	d.exec(t, `CREATE TABLE notes (key text PRIMARY KEY, version int NOT NULL DEFAULT 1, body text NOT NULL)`)
	d.exec(t, `CREATE TABLE sleepy (on_ boolean NOT NULL)`)
	d.exec(t, `INSERT INTO notes (key, body) VALUES ('a', 'note a'), ('slow', 'note slow'), ('z', 'note z')`)
	d.exec(t, `INSERT INTO sleepy VALUES (true)`)
	d.exec(t, `GRANT SELECT ON notes, sleepy TO mcpres_reader`)
	d.exec(t, callerRLS("notes", "sleepy"))
	return hostBinding(t, db, opts, slowNotesBinding(`(SELECT on_ FROM sleepy)`))
}

// slowNotesBinding is the bundle note://all of every note, whose body
// statement sleeps 30 s on note "slow" while the SQL condition sleepy holds.
func slowNotesBinding(sleepy string) postgres.SQLBinding {
	return postgres.SQLBinding{
		Definition: core.ResourceDefinition{URI: "note://all", Name: "notes"},
		Bundle:     `SELECT key, version, 'text/plain' AS mime, true AS text FROM notes ORDER BY key`,
		ItemURI:    "note://item/{key}",
		Body: `SELECT n.version, n.body FROM notes n
		CROSS JOIN LATERAL (SELECT pg_sleep(CASE WHEN n.key = 'slow' AND ` + sleepy + ` THEN 30 ELSE 0 END)) s
		WHERE n.key = $key`,
	}
}

// item returns the planned item of a bundle read of r with URI uri.
func item(t *testing.T, ctx context.Context, r *core.Resources, bundle, uri string) core.ResourceTarget {
	t.Helper()
	a, err := r.Authorize(ctx, bundle)
	if err != nil {
		t.Fatalf("plan %s: %v", bundle, err)
	}
	for i := range a.Len() {
		if a.Item(i).URI() == uri {
			return a.Item(i)
		}
	}
	t.Fatalf("%s plans no item %s", bundle, uri)
	return core.ResourceTarget{}
}

// TestPGStoreTerminatedBackendFailsOnlyThatRead proves a backend killed by
// pg_terminate_backend mid-read makes the items of the statement it ran
// read_failed (retryable): a bundle's bodies are one statement, so the
// siblings of the slow item share its fate; and the next read succeeds on
// the same pool.
func TestPGStoreTerminatedBackendFailsOnlyThatRead(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	pool := newPool(t, d.url, nil)
	r := pgGateway(t, []core.ResourceBinding{slowNotes(t, d, pool, postgres.SourceOptions{})}, pgAllowAll(nil))
	ctx := as(t.Context(), "alice")

	killed := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(8 * time.Second)
		for time.Now().Before(deadline) {
			var n int
			err := d.admin.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event = 'PgSleep' AND pid <> pg_backend_pid()`).Scan(&n)
			if err != nil || n > 0 {
				killed <- err
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		killed <- errors.New("no sleeping backend seen")
	}()
	res, err := r.Read(ctx, "note://all")
	if kerr := <-killed; kerr != nil {
		t.Fatalf("terminate: %v", kerr)
	}
	f, ok := errors.AsType[*core.Failure](err)
	if !ok || f.Kind != core.FailureNoItems || !f.Retryable() || res != nil {
		t.Fatalf("read: %v, want no items, retryable", err)
	}
	for _, is := range f.Issues() {
		if is.Code() != core.IssueReadFailed {
			t.Errorf("%s: %s, want read_failed", is.ResourceURI(), is.Code())
		}
	}
	if len(f.Issues()) != 3 {
		t.Errorf("%d issues, want the 3 items of the terminated statement", len(f.Issues()))
	}

	d.exec(t, `UPDATE sleepy SET on_ = false`)
	res, err = r.Read(ctx, "note://all")
	if err != nil || res.Partial() || len(itemTexts(res)) != 3 {
		t.Fatalf("the next read on the same pool: %v, partial %v", err, res != nil && res.Partial())
	}
}

// TestPGStoreStatementOverItsTimeoutIsTheItemsTimeout proves the statement
// timeout taken from the item deadline cancels a slow statement in the
// server: the items it reads (a bundle's bodies are one statement, under
// one item timeout) are the gateway's timeout, and the reader alone
// reports ErrStatementTimeout (matching DeadlineExceeded) and leaves the
// pool usable.
func TestPGStoreStatementOverItsTimeoutIsTheItemsTimeout(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	pool := newPool(t, d.url, func(cfg *pgxpool.Config) { cfg.MaxConns = 1 })
	binding := slowNotes(t, d, pool, postgres.SourceOptions{})
	r := pgGateway(t, []core.ResourceBinding{binding}, pgAllowAll(nil),
		core.WithResourceLimits(core.ResourceLimits{ItemTimeout: 400 * time.Millisecond}))
	ctx := as(t.Context(), "alice")
	start := time.Now()
	_, err := r.Read(ctx, "note://all")
	f, ok := errors.AsType[*core.Failure](err)
	if !ok || f.Kind != core.FailureNoItems || len(f.Issues()) != 3 {
		t.Fatalf("read: %v, want no items: the 3 items of the statement timed out", err)
	}
	for _, is := range f.Issues() {
		if is.Code() != core.IssueTimeout {
			t.Errorf("%s: %s, want timeout", is.ResourceURI(), is.Code())
		}
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the read took %v; the statement was not cut at its timeout", took)
	}

	// The reader alone, without a context deadline: the store's own
	// statement timeout applies and the server cancels the statement.
	shortB := hostBinding(t, pool, postgres.SourceOptions{Name: "short", StatementTimeout: 200 * time.Millisecond}, slowNotesBinding("true"))
	short, rd := pgGateway(t, []core.ResourceBinding{shortB}, pgAllowAll(nil)), shortB.Reader
	slow := item(t, ctx, short, "note://all", "note://item/slow")
	_, err = storetest.ReadOne(ctx, rd, whole(slow))
	if !errors.Is(err, postgres.ErrStatementTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow statement: %v, want ErrStatementTimeout", err)
	}
	fast := item(t, ctx, short, "note://all", "note://item/a")
	if p, err := storetest.ReadOne(ctx, rd, whole(fast)); err != nil || !strings.HasPrefix(p.Text(), "note a") {
		t.Fatalf("the next read on the one-connection pool: %v", err)
	}
}

// TestPGStoreSingleConnectionRecoversAfterAFailedRead proves a store over a
// single *pgx.Conn (not a pool) leaves no aborted transaction behind: after
// a statement timeout the next read on the same connection succeeds.
func TestPGStoreSingleConnectionRecoversAfterAFailedRead(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	slowNotes(t, d, d.admin, postgres.SourceOptions{})
	conn := connect(t, d.url)
	oneB := hostBinding(t, conn, postgres.SourceOptions{StatementTimeout: 100 * time.Millisecond}, slowNotesBinding("true"))
	one, rd := pgGateway(t, []core.ResourceBinding{oneB}, pgAllowAll(nil)), oneB.Reader
	ctx := as(t.Context(), "alice")
	slow := item(t, ctx, one, "note://all", "note://item/slow")
	if _, err := storetest.ReadOne(ctx, rd, whole(slow)); !errors.Is(err, postgres.ErrStatementTimeout) {
		t.Fatalf("slow read: %v, want ErrStatementTimeout", err)
	}
	if status := conn.PgConn().TxStatus(); status != 'I' {
		t.Fatalf("the connection was left in transaction status %q", status)
	}
	fast := item(t, ctx, one, "note://all", "note://item/a")
	if p, err := storetest.ReadOne(ctx, rd, whole(fast)); err != nil || p.Text() != "note a" {
		t.Fatalf("the next read on the same connection: %v", err)
	}
}
