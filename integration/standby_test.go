package integration

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// envStandbyURL is the URL of a streaming hot standby of the server of
// MCPRES_POSTGRES_URL (scripts/services.sh up --standby).
const envStandbyURL = "MCPRES_POSTGRES_STANDBY_URL"

// bodyStatements counts the bodies statements a pool sent (the store's
// batch body read, recognised by its items' alias); sending calls the
// hook, when set, before the batch is sent.
type bodyStatements struct {
	n    atomic.Int64
	hook atomic.Pointer[func()]
}

func (c *bodyStatements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (c *bodyStatements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *bodyStatements) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	if h := c.hook.Load(); h != nil && d.Batch != nil {
		for _, q := range d.Batch.QueuedQueries {
			if strings.Contains(q.SQL, "mcpres_item") {
				(*h)()
			}
		}
	}
	return ctx
}
func (c *bodyStatements) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	if strings.Contains(d.SQL, "mcpres_item") {
		c.n.Add(1)
	}
}
func (c *bodyStatements) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// standbyRig is one test database on the primary, read through a source
// whose bodies may come from the standby.
type standbyRig struct {
	primaryURL, standbyURL string
	admin                  *pgxpool.Pool // the primary, as the superuser
	standbyAdmin           *pgxpool.Pool // the standby, as the superuser
	primaryBodies          bodyStatements
	standbyBodies          bodyStatements
	pool, spool            *pgxpool.Pool
}

// standbyServer returns the standby's URL for the database of primaryURL,
// or skips (fails under require) without one.
func standbyServer(t testing.TB, primaryURL string) string {
	t.Helper()
	raw := os.Getenv(envStandbyURL)
	if raw == "" {
		harness.Unavailable(t, envStandbyURL+" is unset: start the services with `scripts/services.sh up --standby`")
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("%s: %v", envStandbyURL, err)
	}
	p, err := url.Parse(primaryURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = p.Path
	return u.String()
}

// servicesScript runs scripts/services.sh with args (standby-stop,
// standby-start).
func servicesScript(t *testing.T, args ...string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "scripts", "services.sh")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, script, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("services.sh %v: %v\n%s", args, err, out)
	}
}

const standbySchema = `
DO $$ BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mcpres_standby_reader') THEN
		CREATE ROLE mcpres_standby_reader NOLOGIN;
	END IF;
END $$;
CREATE TABLE docs (id text PRIMARY KEY, body text NOT NULL, ver int NOT NULL DEFAULT 1);
CREATE TABLE grants (principal text NOT NULL, doc_id text NOT NULL, PRIMARY KEY (principal, doc_id));
ALTER TABLE docs ENABLE ROW LEVEL SECURITY;
ALTER TABLE grants ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_grants ON grants FOR SELECT TO mcpres_standby_reader
	USING (principal = current_setting('mcp.principal', true));
CREATE POLICY granted_docs ON docs FOR SELECT TO mcpres_standby_reader
	USING (EXISTS (SELECT 1 FROM grants g WHERE g.doc_id = docs.id));
GRANT USAGE ON SCHEMA public TO mcpres_standby_reader;
GRANT SELECT ON docs, grants TO mcpres_standby_reader;
`

// standbyBody is the body of document id at version ver: a few KiB, so
// that it is read by the body statement, and unique to its version.
func standbyBody(id string, ver int) string {
	head := fmt.Sprintf("%s@v%d:", id, ver)
	return head + strings.Repeat("x", 4096-len(head))
}

func newStandbyRig(t testing.TB) *standbyRig {
	t.Helper()
	r := &standbyRig{primaryURL: harness.Postgres(t)}
	r.standbyURL = standbyServer(t, r.primaryURL)
	r.admin = newPool(t, r.primaryURL, nil)
	if _, err := r.admin.Exec(t.Context(), standbySchema); err != nil {
		t.Fatal(err)
	}
	r.waitReplayed(t)
	r.standbyAdmin = newPool(t, r.standbyURL, nil)
	r.pool = newPool(t, r.primaryURL, func(c *pgxpool.Config) { c.ConnConfig.Tracer = &r.primaryBodies })
	r.spool = newPool(t, r.standbyURL, func(c *pgxpool.Config) { c.ConnConfig.Tracer = &r.standbyBodies })
	return r
}

// waitReplayed waits until the standby has replayed everything the
// primary has written.
func (r *standbyRig) waitReplayed(t testing.TB) {
	t.Helper()
	var lsn string
	if err := r.admin.QueryRow(t.Context(), `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := pgx.Connect(t.Context(), r.standbyURL)
		if err == nil {
			var ok bool
			err = conn.QueryRow(t.Context(), `SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn`, lsn).Scan(&ok)
			_ = conn.Close(t.Context())
			if err == nil && ok {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby did not replay up to %s: %v", lsn, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *standbyRig) exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	if _, err := r.admin.Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// source builds the source, its one binding and the gateway over them,
// with the source's decide statement as the policy; resolved, when set,
// runs after each plan.
func (r *standbyRig) source(t testing.TB, opts postgres.SourceOptions, resolved func(uri string)) (*postgres.Source, *core.Resources) {
	t.Helper()
	opts.Standbys = []postgres.DB{r.spool}
	return r.sourceOn(t, opts, resolved)
}

// sourceOn is source with opts.Standbys as given.
func (r *standbyRig) sourceOn(t testing.TB, opts postgres.SourceOptions, resolved func(uri string)) (*postgres.Source, *core.Resources) {
	t.Helper()
	opts.Role = "mcpres_standby_reader"
	src, err := postgres.NewSource(r.pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := src.Binding(postgres.SQLBinding{
		Definition: core.ResourceDefinition{URITemplate: "sb://docs/{id}", Name: "doc", MIMEType: "text/plain"},
		Plan:       `SELECT id AS key, ver::text AS version, 'text/plain' AS mime FROM docs WHERE id = $id`,
		Body:       `SELECT body, ver::text AS version FROM docs WHERE id = $key`,
	})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := src.Policy(`SELECT k.key, bool_or(g.doc_id IS NOT NULL) AS visible, bool_or(g.doc_id IS NOT NULL) AS read
		FROM unnest($keys) AS k(key) LEFT JOIN grants g ON g.doc_id = k.key GROUP BY k.key`)
	if err != nil {
		t.Fatal(err)
	}
	if resolved != nil {
		inner := b.Resolver
		b.Resolver = core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
			p, err := inner.Resolve(ctx, m)
			if err == nil {
				resolved(m.URI())
			}
			return p, err
		})
	}
	if err := src.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := core.NewResources([]core.ResourceBinding{b}, pol)
	if err != nil {
		t.Fatal(err)
	}
	return src, res
}

// readOutcome is one read, judged.
type readOutcome struct {
	body      string // the one item's text, "" when none was served
	why       string // the error or the issues of a failure
	failed    bool   // no body: an error or an issue
	retryable bool   // the failure may succeed when retried
}

func standbyRead(ctx context.Context, res *core.Resources, principal, id string) readOutcome {
	ctx, cancel := context.WithTimeout(core.WithCaller(ctx, core.Caller{Principal: principal}), 10*time.Second)
	defer cancel()
	got, err := res.Read(ctx, "sb://docs/"+id)
	if err != nil {
		var f *core.Failure
		return readOutcome{failed: true, retryable: errors.As(err, &f) && f.Retryable(), why: err.Error()}
	}
	out := readOutcome{}
	for _, it := range got.Items() {
		if strings.HasPrefix(it.Text(), id+"@") {
			out.body = it.Text()
		}
	}
	if out.body == "" || got.Partial() {
		out.failed, out.retryable = true, true
		for _, is := range got.Issues() {
			out.why += string(is.Code()) + " "
			out.retryable = out.retryable && is.Retryable()
		}
	}
	return out
}

// waitState waits until the source's standby is in state.
func waitState(t *testing.T, src *postgres.Source, res *core.Resources, state string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		standbyRead(t.Context(), res, "alice", "d0") // reads start the probes
		st := src.StandbyStats().Standbys[0]
		if st.State == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby is %s (lag %v), not %s", st.State, st.Lag, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStandbyServesPinnedBodiesWhileThePrimaryDecides runs concurrent
// readers through a source with a real streaming standby: the bodies come
// from the standby (counted on its pool's statements, not the primary's);
// with replay paused, an updated document is read at its new version from
// the primary and never at its old one from the standby, a new document
// is read from the primary, and a grant revoked on the primary (before the
// plan, and between the plan and the recheck while the standby still
// holds it) is refused with 0 revoked bodies served; a standby over its
// lag bound is not used; a standby killed mid-run costs retryable failures
// at most, then the reads go on from the primary. Every body served is
// checked against the document's current version.
func TestStandbyServesPinnedBodiesWhileThePrimaryDecides(t *testing.T) {
	r := newStandbyRig(t)
	const docs = 16
	for i := range docs {
		id := fmt.Sprintf("d%d", i)
		r.exec(t, `INSERT INTO docs (id, body) VALUES ($1, $2)`, id, standbyBody(id, 1))
		r.exec(t, `INSERT INTO grants (principal, doc_id) VALUES ('alice', $1)`, id)
	}
	r.waitReplayed(t)
	src, res := r.source(t, postgres.SourceOptions{StandbyMaxLag: time.Hour, StandbyProbeInterval: 50 * time.Millisecond}, nil)

	// current holds each document's version after its last committed
	// update: a body of any other version is wrong once it is set.
	var mu sync.Mutex
	current := map[string]int{}
	for i := range docs {
		current[fmt.Sprintf("d%d", i)] = 1
	}
	revoked := map[string]bool{}
	var wrong, served, refused, failed, unretryable atomic.Int64 // failed: documents not revoked
	check := func(id string, o readOutcome) {
		mu.Lock()
		want, gone := current[id], revoked[id]
		mu.Unlock()
		switch {
		case o.failed && gone:
			refused.Add(1)
		case o.failed:
			if failed.Add(1) <= 5 {
				t.Logf("%s: failed: %s", id, o.why)
			}
			if !o.retryable {
				unretryable.Add(1)
			}
		case gone || o.body != standbyBody(id, want):
			wrong.Add(1)
			t.Errorf("%s: served %.12q, want version %d (revoked %v)", id, o.body, want, gone)
		default:
			served.Add(1)
		}
	}
	// load reads the documents ids with 6 concurrent readers for d (at
	// most 5000 reads each), checking every answer.
	load := func(d time.Duration, ids []string, during func()) {
		ctx, cancel := context.WithTimeout(t.Context(), d)
		defer cancel()
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Go(func() {
				for n := 0; n < 5000 && ctx.Err() == nil; n++ {
					id := ids[(w+n)%len(ids)]
					o := standbyRead(t.Context(), res, "alice", id)
					check(id, o)
				}
			})
		}
		if during != nil {
			during()
		}
		wg.Wait()
	}
	all := make([]string, docs)
	for i := range all {
		all[i] = fmt.Sprintf("d%d", i)
	}
	waitState(t, src, res, "ready")

	// 1. Bodies come from the standby.
	p0, s0 := r.primaryBodies.n.Load(), r.standbyBodies.n.Load()
	before := src.StandbyStats()
	load(1500*time.Millisecond, all, nil)
	after := src.StandbyStats()
	onStandby, onPrimary := r.standbyBodies.n.Load()-s0, r.primaryBodies.n.Load()-p0
	fromStandby := after.Standbys[0].Bodies - before.Standbys[0].Bodies
	t.Logf("steady: %d reads served, %d bodies statements on the standby, %d on the primary, %d bodies from the standby, %d from the primary",
		served.Load(), onStandby, onPrimary, fromStandby, after.PrimaryBodies-before.PrimaryBodies)
	if onStandby == 0 || fromStandby == 0 || onPrimary != 0 {
		t.Fatalf("steady: %d bodies statements on the standby, %d on the primary; want them all on the standby", onStandby, onPrimary)
	}

	// 2. Replay paused: an update and an insert on the primary.
	if _, err := r.standbyAdmin.Exec(t.Context(), `SELECT pg_wal_replay_pause()`); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if _, err := r.standbyAdmin.Exec(context.Background(), `SELECT pg_wal_replay_resume()`); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(resume)
	r.exec(t, `UPDATE docs SET ver = 2, body = $2 WHERE id = $1`, "d1", standbyBody("d1", 2))
	r.exec(t, `INSERT INTO docs (id, body) VALUES ('new', $1)`, standbyBody("new", 1))
	r.exec(t, `INSERT INTO grants (principal, doc_id) VALUES ('alice', 'new')`)
	mu.Lock()
	current["d1"], current["new"] = 2, 1
	mu.Unlock()
	var staleOnStandby int
	if err := r.standbyAdmin.QueryRow(t.Context(), `SELECT ver FROM docs WHERE id = 'd1'`).Scan(&staleOnStandby); err != nil || staleOnStandby != 1 {
		t.Fatalf("the paused standby holds d1 at version %d (%v); want 1", staleOnStandby, err)
	}
	before = src.StandbyStats()
	load(1*time.Second, []string{"d1", "new", "d2", "d3"}, nil)
	after = src.StandbyStats()
	other := after.Fallbacks[postgres.FallbackOtherVersion] - before.Fallbacks[postgres.FallbackOtherVersion]
	missing := after.Fallbacks[postgres.FallbackMissing] - before.Fallbacks[postgres.FallbackMissing]
	t.Logf("paused: %d other_version and %d missing fallbacks, %d bodies from the standby", other, missing, after.Standbys[0].Bodies-before.Standbys[0].Bodies)
	if other == 0 || missing == 0 || after.Standbys[0].Bodies == before.Standbys[0].Bodies {
		t.Fatalf("paused: %d other_version, %d missing fallbacks, standby bodies %d -> %d; want each to grow", other, missing, before.Standbys[0].Bodies, after.Standbys[0].Bodies)
	}

	// 3. Still paused: a grant revoked before the plan, and one revoked
	// after the decision before the reads (as the body statement is sent
	// to the standby), whose body the standby, which still holds the
	// grant, returns: the recheck on the primary refuses it.
	r.exec(t, `DELETE FROM grants WHERE doc_id = 'd4'`)
	mu.Lock()
	revoked["d4"], revoked["d5"] = true, true
	mu.Unlock()
	for range 20 {
		if o := standbyRead(t.Context(), res, "alice", "d4"); !o.failed {
			t.Fatalf("d4 served after its grant was revoked: %.12q", o.body)
		}
	}
	before = src.StandbyStats()
	revoke := func() { r.exec(t, `DELETE FROM grants WHERE doc_id = 'd5'`) }
	r.standbyBodies.hook.Store(&revoke)
	o := standbyRead(t.Context(), res, "alice", "d5")
	r.standbyBodies.hook.Store(nil)
	if !o.failed {
		t.Fatalf("d5 served after its grant was revoked between the plan and the recheck: %.12q", o.body)
	}
	if got := src.StandbyStats().Standbys[0].Bodies - before.Standbys[0].Bodies; got != 1 {
		t.Fatalf("the standby served %d bodies of d5; want 1 (it still holds the grant), withheld by the recheck", got)
	}
	load(500*time.Millisecond, []string{"d4", "d5", "d6"}, nil)

	// 4. Over the lag bound, a standby is not used.
	bounded, bres := r.source(t, postgres.SourceOptions{StandbyMaxLag: 200 * time.Millisecond, StandbyProbeInterval: 50 * time.Millisecond}, nil)
	time.Sleep(300 * time.Millisecond) // the paused standby's last replayed transaction ages past the bound
	waitState(t, bounded, bres, "lagging")
	lb := bounded.StandbyStats()
	for range 10 {
		check("d6", standbyRead(t.Context(), bres, "alice", "d6"))
	}
	la := bounded.StandbyStats()
	if la.Fallbacks[postgres.FallbackLagging] <= lb.Fallbacks[postgres.FallbackLagging] || la.Standbys[0].Bodies != lb.Standbys[0].Bodies {
		t.Fatalf("lagging: fallbacks %d -> %d, standby bodies %d -> %d", lb.Fallbacks[postgres.FallbackLagging], la.Fallbacks[postgres.FallbackLagging], lb.Standbys[0].Bodies, la.Standbys[0].Bodies)
	}
	resume()
	r.waitReplayed(t)
	waitState(t, bounded, bres, "ready")

	// 5. The standby killed mid-run.
	waitState(t, src, res, "ready")
	t.Cleanup(func() { servicesScript(t, "standby-start") })
	failedBefore := failed.Load()
	before = src.StandbyStats()
	load(2*time.Second, all, func() {
		time.Sleep(500 * time.Millisecond)
		servicesScript(t, "standby-stop")
	})
	after = src.StandbyStats()
	down := after.Fallbacks[postgres.FallbackDown] - before.Fallbacks[postgres.FallbackDown]
	t.Logf("killed: %d failed reads (%d not retryable), %d down fallbacks, %d bodies from the primary, standby %s",
		failed.Load()-failedBefore, unretryable.Load(), down, after.PrimaryBodies-before.PrimaryBodies, after.Standbys[0].State)
	if down == 0 || after.PrimaryBodies == before.PrimaryBodies || after.Standbys[0].State != "down" {
		t.Fatalf("killed: %d down fallbacks, primary bodies %d -> %d, standby %s", down, before.PrimaryBodies, after.PrimaryBodies, after.Standbys[0].State)
	}
	p1 := r.primaryBodies.n.Load()
	load(500*time.Millisecond, all, nil)
	if r.primaryBodies.n.Load() == p1 {
		t.Fatal("after the kill, no body was read on the primary")
	}
	servicesScript(t, "standby-start")
	waitState(t, src, res, "ready")

	t.Logf("whole run: %d reads served, %d refused (revoked), %d failed, %d wrong", served.Load(), refused.Load(), failed.Load(), wrong.Load())
	if wrong.Load() != 0 || unretryable.Load() != 0 {
		t.Fatalf("%d wrong bodies, %d failures that are not retryable", wrong.Load(), unretryable.Load())
	}
}

// TestStandbyServeFlagsServeBodiesFromTheStandbyAndReadinessIgnoresIt runs
// serve --postgres with --postgres-standby as an operator would: a body
// larger than a plan inlines is served from the standby (its metrics count
// it under standby="0", never the URL), and a second server whose standby
// refuses connections is ready all the same and serves the body from the
// primary, counted as a down fallback.
func TestStandbyServeFlagsServeBodiesFromTheStandbyAndReadinessIgnoresIt(t *testing.T) {
	dbURL, _, flags := migratedAndSeeded(t)
	standbyURL := standbyServer(t, dbURL)
	admin := newPool(t, dbURL, nil)
	big := "standby body " + strings.Repeat("b", 20<<10)
	if _, err := admin.Exec(t.Context(), `INSERT INTO mcpres.assets (project_id, id, name, title, mime_type, body, body_is_text)
		VALUES ('handbook', 'big', 'big.txt', 'Big', 'text/plain', convert_to($1, 'UTF8'), true)`, big); err != nil {
		t.Fatal(err)
	}
	r := &standbyRig{primaryURL: dbURL, standbyURL: standbyURL, admin: admin}
	r.waitReplayed(t)
	tokens := tokensFile(t, "alice")
	const uri = "asset://project/handbook/asset/big/body"
	metric := func(srv *runningServer, name string) string {
		_, body := srv.get(t, "/metrics")
		if host := strings.Split(strings.Split(standbyURL, "@")[1], "/")[0]; strings.Contains(body, host) {
			t.Fatalf("/metrics names the standby's address:\n%s", body)
		}
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, name) {
				return l
			}
		}
		return ""
	}
	read := func(srv *runningServer) {
		alice := srv.connect(t, "alice-token")
		for range 5 {
			got, err := readAll(t, alice, uri)
			if err != nil || len(got.Contents) != 1 || got.Contents[0].Text != big {
				t.Fatalf("read %s: %v", uri, err)
			}
		}
	}

	srv := startServer(t, append(flags, "--tokens="+tokens, "--postgres-standby="+standbyURL, "--standby-max-lag=1m")...)
	read(srv)
	if l := metric(srv, `mcpres_standby_bodies_total{source="postgres",standby="0"}`); l == "" || strings.HasSuffix(l, " 0") {
		t.Fatalf("the standby served no body: %q", l)
	}

	dead := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", freePort(t))
	down := startServer(t, append(flags, "--tokens="+tokens, "--postgres-standby="+dead)...)
	if code, body := down.get(t, "/readyz"); code != 200 {
		t.Fatalf("/readyz with the standby down: %d %s", code, body)
	}
	read(down)
	if l := metric(down, `mcpres_standby_fallbacks_total{reason="down",source="postgres"}`); l == "" || strings.HasSuffix(l, " 0") {
		t.Fatalf("no down fallback counted: %q", l)
	}
	if l := metric(down, `mcpres_standby_ready{source="postgres",standby="0"}`); !strings.HasSuffix(l, " 0") {
		t.Fatalf("the dead standby is reported ready: %q", l)
	}
}

// TestStandbyNotUsedWhereTheDatabaseDecides: under postgres.DatabaseDecides
// the body statement's row-level security is the decision, which a lagging
// standby must not take: the bodies stay on the primary.
func TestStandbyNotUsedWhereTheDatabaseDecides(t *testing.T) {
	r := newStandbyRig(t)
	r.exec(t, `INSERT INTO docs (id, body) VALUES ('d0', $1)`, standbyBody("d0", 1))
	r.exec(t, `INSERT INTO grants (principal, doc_id) VALUES ('alice', 'd0')`)
	r.waitReplayed(t)
	src, err := postgres.NewSource(r.pool, postgres.SourceOptions{Role: "mcpres_standby_reader", Standbys: []postgres.DB{r.spool}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := src.Binding(postgres.SQLBinding{
		Definition: core.ResourceDefinition{URITemplate: "sb://docs/{id}", Name: "doc", MIMEType: "text/plain"},
		Plan:       `SELECT id AS key, ver::text AS version, 'text/plain' AS mime FROM docs WHERE id = $id`,
		Body:       `SELECT body, ver::text AS version FROM docs WHERE id = $key`,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := core.NewResources([]core.ResourceBinding{b}, postgres.DatabaseDecides())
	if err != nil {
		t.Fatal(err)
	}
	s0 := r.standbyBodies.n.Load()
	for range 20 {
		if o := standbyRead(t.Context(), res, "alice", "d0"); o.body != standbyBody("d0", 1) {
			t.Fatalf("read: %+v", o)
		}
	}
	if st := src.StandbyStats(); r.standbyBodies.n.Load() != s0 || st.Standbys[0].Bodies != 0 || st.Standbys[0].State != "ready" {
		t.Fatalf("the ready standby got %d bodies statements, served %d bodies; want none", r.standbyBodies.n.Load()-s0, st.Standbys[0].Bodies)
	}
}

// TestStandbyWhoseLoginBypassesRowLevelSecurityIsRefused: each standby's
// login passes the primary's role check: a source that keeps its login
// role (LoginRole), whose standby URL logs in as a superuser, is refused
// by Check, naming the standby.
func TestStandbyWhoseLoginBypassesRowLevelSecurityIsRefused(t *testing.T) {
	r := newStandbyRig(t)
	r.exec(t, `DO $$ BEGIN
		IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mcpres_standby_login') THEN
			CREATE ROLE mcpres_standby_login LOGIN IN ROLE mcpres_standby_reader;
		END IF; END $$`)
	r.waitReplayed(t)
	u, err := url.Parse(r.primaryURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User("mcpres_standby_login")
	login := newPool(t, u.String(), nil)
	src, err := postgres.NewSource(login, postgres.SourceOptions{LoginRole: true, Standbys: []postgres.DB{r.spool}}) // spool logs in as the superuser
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Binding(postgres.SQLBinding{
		Definition: core.ResourceDefinition{URITemplate: "sb://docs/{id}", Name: "doc", MIMEType: "text/plain"},
		Plan:       `SELECT id AS key, ver::text AS version, 'text/plain' AS mime FROM docs WHERE id = $id`,
		Body:       `SELECT body, ver::text AS version FROM docs WHERE id = $key`,
	}); err != nil {
		t.Fatal(err)
	}
	err = src.Check(t.Context())
	if err == nil || !strings.Contains(err.Error(), "standby 0") || !strings.Contains(err.Error(), "bypasses row-level security") {
		t.Fatalf("Check: %v; want the standby's login refused", err)
	}
	if st := src.StandbyStats().Standbys[0].State; st != "refused" {
		t.Fatalf("the standby is %s; want refused", st)
	}
}
