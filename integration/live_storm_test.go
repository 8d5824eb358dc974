package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/live"
	"go.phpboyscout.uk/mcp/resources/migrations"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// statementCounter is a pgx tracer that counts the statements a pool sends
// (the store sends each as a batch: its session set-up, then the
// statement), by their SQL, as they are sent.
type statementCounter struct {
	mu  sync.Mutex
	sql []string
}

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.add(d.SQL)
	return ctx
}
func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *statementCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	// Counted as sent, before PostgreSQL parses them: one it refuses counts.
	for _, q := range d.Batch.QueuedQueries {
		if !strings.Contains(q.SQL, "set_config") { // the session set-up of every batch
			c.add(q.SQL)
		}
	}
	return ctx
}
func (c *statementCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *statementCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

func (c *statementCounter) add(sql string) {
	c.mu.Lock()
	c.sql = append(c.sql, sql)
	c.mu.Unlock()
}

// since returns the statements counted after the first n.
func (c *statementCounter) since(n int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.sql[n:]...)
}

func (c *statementCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sql)
}

// TestLiveStormOverBusySessionsIsOneRecheckStatementPerSessionRecheck
// subscribes 10 sessions to 100 assets each and changes all 1,000 assets
// in one UPDATE: every subscription is notified, and the hub's rechecks
// send at most one statement each (all of one session's due subscriptions
// planned at once), within the per-session budget (SessionBurst, then one
// per SessionInterval).
func TestLiveStormOverBusySessionsIsOneRecheckStatementPerSessionRecheck(t *testing.T) {
	t.Parallel()
	const sessions, perSession = 10, 100
	d := liveDB(t)
	d.exec(t, `INSERT INTO mcpres.assets (project_id, id, name, title, mime_type, body, body_is_text)
		SELECT 'p', 's' || s || 'a' || a, 'x.txt', 'before', 'text/plain', 'x'::bytea, true
		FROM generate_series(0, $1 - 1) s, generate_series(0, $2 - 1) a`, sessions, perSession)
	counter := &statementCounter{}
	pool := newPool(t, d.url, func(c *pgxpool.Config) { c.ConnConfig.Tracer = counter })
	st := newStore(t, pool, nil)
	res := pgGateway(t, st.Bindings(), st.Policy())
	cfg, err := pgx.ParseConfig(d.url)
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.Listener(cfg, &postgres.ListenerOptions{MinBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	opts := &live.Options{}
	server, subs := liveServer(t, res, []core.ChangeSource{l}, opts, "alice")
	for deadline := time.Now().Add(10 * time.Second); l.PID() == 0 || subs.Hub().Stats().Changes < 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the listener did not connect within 10 s")
		}
	}
	in := &liveInstance{server: server, subs: subs, listener: l, res: res, ch: listenOn(t, d.url, migrations.KeyChannel)}
	in.base = subs.Hub().Stats().Changes
	clients := make([]*liveClient, sessions)
	for s := range clients {
		clients[s] = in.connect(t, "2025-11-25")
		for a := range perSession {
			clients[s].subscribe(t, fmt.Sprintf("asset://project/p/asset/s%da%d", s, a))
		}
	}
	waitLive(t, in, sessions*perSession)
	before := in.settle(t)
	n0 := counter.count()

	committed := commitStorm(t, writer(t, d))
	var last time.Time
	for s, lc := range clients {
		seen := map[string]bool{}
		deadline := time.After(60 * time.Second) // a safety bound, not the assertion
		for len(seen) < perSession {
			select {
			case u := <-lc.ch:
				seen[u.uri] = true
				if u.at.After(last) {
					last = u.at
				}
			case <-deadline:
				t.Fatalf("session %d: %d of %d subscriptions notified after 60 s (stats %+v)", s, len(seen), perSession, subs.Hub().Stats())
			}
		}
	}
	after := in.settle(t)
	wall := last.Sub(committed)
	stmts := counter.since(n0)
	batched := 0
	for _, s := range stmts {
		if strings.Contains(s, "mcpres_req") {
			batched++
		}
	}
	rechecks := after.Batches - before.Batches
	o := subs.Hub().Options()
	// The per-session budget over the storm: SessionBurst at once, then one
	// per SessionInterval, for as long as the storm was being handled.
	budget := int64(sessions) * (int64(o.SessionBurst) + int64((wall+o.SessionInterval-1)/o.SessionInterval))
	t.Logf("%d notifications to %d sessions x %d subscriptions, the last %v after the commit; %d rechecks, %d statements (%d batch plans), budget %d",
		after.Notified-before.Notified, sessions, perSession, wall, rechecks, len(stmts), batched, budget)
	if got := after.Notified - before.Notified; got < sessions*perSession {
		t.Fatalf("%d notifications, want at least %d", got, sessions*perSession)
	}
	if int64(len(stmts)) > rechecks {
		t.Fatalf("%d statements for %d rechecks, want at most one each: %q", len(stmts), rechecks, stmts)
	}
	if rechecks > budget {
		t.Fatalf("%d rechecks, more than the per-session budget allows (%d)", rechecks, budget)
	}
	if batched == 0 {
		t.Fatalf("no recheck planned its session's subscriptions at once: %q", stmts)
	}
}

// commitStorm changes every asset of project p in one UPDATE on conn and
// returns when it has committed.
func commitStorm(t *testing.T, conn *pgx.Conn) time.Time {
	t.Helper()
	if _, err := conn.Exec(context.Background(), `UPDATE mcpres.assets SET title = 'after' WHERE project_id = 'p' AND id LIKE 's%'`); err != nil {
		t.Fatalf("update: %v", err)
	}
	return time.Now()
}
