package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/internal/serverproc"
)

// fleetExecMode is the pgx query exec mode of the replicas' pooled URL.
// PgBouncer 1.18 in transaction mode gives each transaction any server
// connection, so pgx's default (a named prepared statement per query,
// cached per connection) fails there; cache_describe sends unnamed
// statements only, and caches their descriptions on the client
// (TestPgBouncerTransactionModeAndPgx; docs/deployment.md).
const fleetExecMode = "cache_describe"

// fleetDirect, as startFleet's exec mode, leaves PgBouncer out.
const fleetDirect = "direct"

// fleetReads are the URIs the fleet's load reads: rows and S3 objects that
// the test's commits (to the handbook's welcome asset) do not change.
var fleetReads = []string{
	"asset://projects",
	"asset://project/launch",
	"asset://project/launch/asset/plan",
	"asset://project/launch/asset/budget",
	"asset://project/launch/asset/budget/object",
	"asset://project/handbook/asset/architecture/object",
}

// fleet is n stateless replicas of the binary on the reference schema,
// sharing a cursor key, a tokens file and the bucket, each with its pool
// through PgBouncer in transaction mode and its LISTEN connection direct,
// behind HAProxy.
type fleet struct {
	dbURL  string // direct, as the test's own connections
	dbName string
	reps   []*runningServer
	lb     *haproxy
	pooled bool // the replicas' pools go through PgBouncer
}

// startFleet starts the fleet with execMode in the pooled URL ("" keeps
// pgx's default); with execMode fleetDirect the replicas' pools connect
// to PostgreSQL directly, in pgx's default mode, with no PgBouncer. extra
// are more flags of every replica.
func startFleet(t testing.TB, n int, execMode string, extra ...string) *fleet {
	t.Helper()
	dbURL, _, flags := migratedAndSeeded(t)
	return startFleetOn(t, dbURL, flags, n, execMode, extra...)
}

// startFleetOn starts the fleet on the database and bucket of dbURL and
// flags (migratedAndSeeded's).
func startFleetOn(t testing.TB, dbURL string, flags []string, n int, execMode string, extra ...string) *fleet {
	t.Helper()
	flags = append([]string(nil), flags...)
	u, _ := url.Parse(dbURL)
	f := &fleet{dbURL: withParams(t, dbURL, "application_name", fleetTestApp), dbName: strings.TrimPrefix(u.Path, "/")}
	pooled := dbURL
	f.pooled = execMode != fleetDirect
	if f.pooled {
		// A backend whose PgBouncer server connection is closed under a
		// killed client's statement notices only when it next writes to
		// the socket; with a check interval it ends within one, so the
		// backend sampler does not count it beside its successor.
		sql := fmt.Sprintf("ALTER DATABASE %s SET client_connection_check_interval = '20ms'", pgx.Identifier{f.dbName}.Sanitize())
		if _, err := f.conn(t).Exec(context.Background(), sql); err != nil {
			t.Fatal(err)
		}
	}
	switch execMode {
	case fleetDirect:
	case "":
		pooled = startPgBouncer(t, dbURL, fleetPoolSize)
	default:
		pooled = withParams(t, startPgBouncer(t, dbURL, fleetPoolSize), "default_query_exec_mode", execMode)
	}
	for i, fl := range flags {
		if strings.HasPrefix(fl, "--postgres=") {
			flags[i] = "--postgres=" + pooled
		}
	}
	args := append(flags, "--stateless", "--cursor-key="+strings.Repeat("k", 32),
		"--tokens="+tokensFile(t, "alice", "bob"),
		"--listen-postgres="+withParams(t, dbURL, "application_name", fleetListenApp))
	args = append(args, extra...)
	addrs := make([]string, n)
	for i := range n {
		f.reps = append(f.reps, startServer(t, args...))
		addrs[i] = f.reps[i].addr
	}
	f.lb = startHAProxy(t, addrs...)
	return f
}

// conn opens a direct connection of the test's own to the fleet's database.
func (f *fleet) conn(t testing.TB) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), f.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// dial opens a go-sdk client session to endpoint (a replica or the
// balancer) as alice; hc, when given, sends its requests.
func dial(ctx context.Context, endpoint string, hc *http.Client) (*mcp.ClientSession, error) {
	if hc == nil {
		hc = &http.Client{Transport: serverproc.Bearer{Token: "alice-token", Next: http.DefaultTransport}}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "fleet-test", Version: "1"}, nil)
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint + "/mcp", HTTPClient: hc}, nil)
}

// body is a read's contents as JSON, the value compared.
func body(r *mcp.ReadResourceResult) string {
	b, _ := json.Marshal(r.Contents)
	return string(b)
}

// wantBodies reads every URI of fleetReads from every replica directly and
// returns the bodies, failing unless all replicas agree.
func (f *fleet) wantBodies(t testing.TB) map[string]string {
	t.Helper()
	want := map[string]string{}
	for i, r := range f.reps {
		cs, err := dial(t.Context(), "http://"+r.addr, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, uri := range fleetReads {
			res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
			if err != nil {
				t.Fatalf("replica %d: read %s: %v", i, uri, err)
			}
			b := body(res)
			if i == 0 {
				want[uri] = b
			} else if want[uri] != b {
				t.Fatalf("replica %d reads %s as\n%s\nreplica 0 as\n%s", i, uri, b, want[uri])
			}
		}
		_ = cs.Close()
	}
	return want
}

// load is the outcome of clients reading through the balancer.
type load struct {
	ok, wrong, failed atomic.Int64
	mu                sync.Mutex
	phase             string         // what the test is doing now, in the failure messages
	errs              map[string]int // failure messages by phase, cut short
	wg                sync.WaitGroup
	stop              context.CancelFunc
}

// startLoad runs clients go-sdk sessions through endpoint, each reading
// fleetReads in turn and comparing every body with want, until stopped. A
// failed request is counted and the client dials again (a new session
// through the balancer) and goes on: a client's retry.
func startLoad(ctx context.Context, endpoint string, clients int, want map[string]string) *load {
	ctx, cancel := context.WithCancel(ctx)
	l := &load{errs: map[string]int{}, stop: cancel, phase: "before the faults"}
	for c := range clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			var cs *mcp.ClientSession
			defer func() {
				if cs != nil {
					_ = cs.Close()
				}
			}()
			for i := c; ctx.Err() == nil; i++ {
				if cs == nil {
					var err error
					dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					cs, err = dial(dctx, endpoint, nil)
					cancel()
					if err != nil {
						if ctx.Err() == nil {
							l.fail(err)
							time.Sleep(20 * time.Millisecond) // back off before the retry
						}
						continue
					}
				}
				uri := fleetReads[i%len(fleetReads)]
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				res, err := cs.ReadResource(rctx, &mcp.ReadResourceParams{URI: uri})
				cancel()
				switch {
				case ctx.Err() != nil:
				case err != nil:
					l.fail(err)
					_ = cs.Close()
					cs = nil
				case body(res) != want[uri]:
					l.wrong.Add(1)
				default:
					l.ok.Add(1)
				}
			}
		}()
	}
	return l
}

func (l *load) fail(err error) {
	l.failed.Add(1)
	msg := err.Error()
	if len(msg) > 120 {
		msg = msg[:120]
	}
	l.mu.Lock()
	l.errs[l.phase+": "+msg]++
	l.mu.Unlock()
}

// setPhase names what the test does from now on, for the failure
// messages.
func (l *load) setPhase(p string) {
	l.mu.Lock()
	l.phase = p
	l.mu.Unlock()
}

// finish stops the clients and waits for them.
func (l *load) finish() {
	l.stop()
	l.wg.Wait()
}

// waitOK waits until n more reads than at the call have succeeded, or
// fails after 30 s.
func (l *load) waitOK(t testing.TB, n int64, what string) {
	t.Helper()
	want := l.ok.Load() + n
	deadline := time.Now().Add(30 * time.Second)
	for l.ok.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d reads succeeded, want %d within 30 s (failed %d: %v)", what, l.ok.Load(), want, l.failed.Load(), l.errors())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// errors returns the failure messages seen, with their counts.
func (l *load) errors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for m, n := range l.errs {
		out = append(out, fmt.Sprintf("%d× %s", n, m))
	}
	sort.Strings(out)
	return out
}

// retryable reports whether a failure message is one a client retries: the
// balancer's 502/503/504 for a replica that died under the request, or the
// connection cut.
func retryable(msg string) bool {
	for _, s := range []string{"502", "503", "504", "Bad Gateway", "Service Unavailable", "EOF", "connection reset", "connection refused", "broken pipe"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// backendSampler records the most PostgreSQL backends of the fleet's
// database seen while it runs, every 20 ms. A backend PgBouncer has just
// replaced (a server connection closed under a killed client's
// transaction) may still be finishing its statement when its successor is
// counted, so the figures compared are those held across heldSamples
// samples in a row (the lowest of them); the most seen in one sample is
// kept too, with the backends listed then.
// heldSamples is how many samples in a row a backend count must hold for
// (about 100 ms) to be compared.
const heldSamples = 5

type backendSampler struct {
	maxListen, maxPooled atomic.Int64 // held across heldSamples samples
	rawPooled            atomic.Int64 // in one sample
	mu                   sync.Mutex
	atMax                string // the backends when rawPooled was seen
	done                 chan struct{}
	stop                 context.CancelFunc
}

func (f *fleet) sampleBackends(t testing.TB) *backendSampler {
	t.Helper()
	conn := f.conn(t)
	ctx, cancel := context.WithCancel(context.Background())
	s := &backendSampler{done: make(chan struct{}), stop: cancel}
	raise := func(v *atomic.Int64, n int64) bool {
		if n > v.Load() {
			v.Store(n)
			return true
		}
		return false
	}
	go func() {
		defer close(s.done)
		var lastListen, lastPooled []int64 // the latest samples, at most heldSamples
		for ctx.Err() == nil {
			var listen, pooled int64
			err := conn.QueryRow(ctx, sqlBackends, f.dbName, fleetListenApp, fleetTestApp).Scan(&listen, &pooled)
			if err != nil {
				return
			}
			lastListen = append(lastListen[max(0, len(lastListen)+1-heldSamples):], listen)
			lastPooled = append(lastPooled[max(0, len(lastPooled)+1-heldSamples):], pooled)
			if len(lastPooled) == heldSamples {
				raise(&s.maxListen, slices.Min(lastListen))
				raise(&s.maxPooled, slices.Min(lastPooled))
			}
			if raise(&s.rawPooled, pooled) {
				var rows string
				if conn.QueryRow(ctx, sqlBackendRows, f.dbName).Scan(&rows) == nil {
					s.mu.Lock()
					s.atMax = rows
					s.mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return s
}

// finish stops the sampler and returns the most LISTEN and pooled backends
// held across heldSamples samples.
func (s *backendSampler) finish() (listen, pooled int64) {
	s.stop()
	<-s.done
	return s.maxListen.Load(), s.maxPooled.Load()
}

// peak returns the most pooled backends of one sample, and the backends
// listed then.
func (s *backendSampler) peak() (int64, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rawPooled.Load(), s.atMax
}

// holderOf waits until exactly one of the live replicas holds n
// subscriptions and returns its index.
func (f *fleet) holderOf(t testing.TB, live []int, n int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h, held := -1, 0
		var seen []int
		for _, i := range live {
			g := f.reps[i].gauges(t)["mcpres_subscriptions_active"]
			seen = append(seen, g)
			if g > 0 {
				h, held = i, held+1
			}
		}
		if held == 1 && f.reps[h].gauges(t)["mcpres_subscriptions_active"] == n {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscriptions held by replicas %v: %v, want %d on one", live, seen, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFleetBehindHAProxyAndPgBouncer runs four stateless replicas of the
// binary behind HAProxy (round robin, health-checked on /readyz), their
// pools through PgBouncer 1.18 in transaction mode and their LISTEN
// connections direct. A list cursor issued by one replica continues on
// another. Under load from eight go-sdk clients through the balancer, the
// replica holding a listen stream is killed (SIGKILL) and another stopped
// (SIGTERM): no body is ever wrong; the few requests that fail around
// each fault (at most one per client) fail retryably, as a cut connection
// or a 502, and the clients go on (none fails once the faults are over);
// the listen stream, listened again, lands on a survivor and is notified
// of the next commit; and PostgreSQL never has more pooled backends than
// PgBouncer's pool, with one LISTEN backend per replica.
func TestFleetBehindHAProxyAndPgBouncer(t *testing.T) {
	t.Parallel()
	const replicas, clients = 4, 8
	f := startFleet(t, replicas, fleetExecMode, "--list-page-size=1")
	ctx := t.Context()
	want := f.wantBodies(t)

	// A cursor one replica signs, another continues (the templates list:
	// alice's resources/list is the one index).
	first, err := dial(ctx, "http://"+f.reps[0].addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	var all []string
	for r, err := range first.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, r.URITemplate)
	}
	page, err := first.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 2 || len(page.ResourceTemplates) != 1 || page.NextCursor == "" {
		t.Fatalf("listed %v, first page %+v: want pages of one template and a cursor", all, page)
	}
	got := []string{page.ResourceTemplates[0].URITemplate}
	for i, cursor := 1, page.NextCursor; cursor != ""; i++ {
		cs, err := dial(ctx, "http://"+f.reps[i%replicas].addr, nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		_ = cs.Close()
		if err != nil {
			t.Fatalf("page %d on replica %d, with the cursor of replica %d: %v", i, i%replicas, (i-1)%replicas, err)
		}
		for _, r := range p.ResourceTemplates {
			got = append(got, r.URITemplate)
		}
		cursor = p.NextCursor
	}
	if strings.Join(got, " ") != strings.Join(all, " ") {
		t.Fatalf("pages across the replicas listed %v, one replica %v", got, all)
	}
	t.Logf("%d list pages, each continued on the next replica from the cursor of the one before", len(got))

	// A listen stream through the balancer.
	lst := connectListener(t, f.lb.url, "alice-token")
	if err := lst.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: statelessWelcome}); err != nil {
		t.Fatal(err)
	}
	allReps := []int{0, 1, 2, 3}
	h := f.holderOf(t, allReps, 1)
	writer := f.conn(t)
	commitWelcome(t, writer, "before")
	lst.expect(t, statelessWelcome, 10*time.Second, "a commit before the faults")

	sampler := f.sampleBackends(t)
	ld := startLoad(ctx, f.lb.url, clients, want)
	defer ld.finish()
	start := time.Now()
	ld.waitOK(t, 300, "before the faults")

	// SIGKILL the replica that holds the listen stream.
	beforeKill := ld.failed.Load()
	ld.setPhase("SIGKILL")
	if err := f.reps[h].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	err = <-f.reps[h].done
	f.reps[h].done <- err
	f.lb.waitStatus(t, "the killed replica DOWN", func(st map[string]string) bool { return strings.HasPrefix(st[f.lb.names[h]], "DOWN") })
	down := time.Since(killed)
	ld.waitOK(t, 300, "after the SIGKILL")
	killFailed := ld.failed.Load() - beforeKill
	ld.setPhase("after the SIGKILL")

	// The listen stream, listened again, lands on a survivor.
	var live []int
	for _, i := range allReps {
		if i != h {
			live = append(live, i)
		}
	}
	if err := lst.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: statelessWelcome}); err != nil {
		t.Fatal(err)
	}
	lst.drain()
	if err := lst.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: statelessWelcome}); err != nil {
		t.Fatalf("listen again after the SIGKILL: %v", err)
	}
	h2 := f.holderOf(t, live, 1)
	begun := time.Now()
	commitWelcome(t, writer, "after the kill")
	lst.expect(t, statelessWelcome, 10*time.Second, "a commit after the listen stream moved")
	notified := time.Since(begun)

	// SIGTERM another replica (not the new holder): it drains and exits 0.
	term := live[0]
	if term == h2 {
		term = live[1]
	}
	beforeTerm := ld.failed.Load()
	ld.setPhase("SIGTERM")
	if err := f.reps[term].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-f.reps[term].done:
		f.reps[term].done <- err
		if err != nil {
			t.Fatalf("the replica stopped with SIGTERM exited with %v\n%s", err, f.reps[term].stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the replica stopped with SIGTERM did not exit within 20 s")
	}
	f.lb.waitStatus(t, "the stopped replica DOWN", func(st map[string]string) bool { return strings.HasPrefix(st[f.lb.names[term]], "DOWN") })
	ld.waitOK(t, 300, "after the SIGTERM")
	termFailed := ld.failed.Load() - beforeTerm
	ld.setPhase("after the SIGTERM")

	// Recovery: two replicas left, no failure at all.
	beforeRecovery := ld.failed.Load()
	ld.setPhase("recovery")
	ld.waitOK(t, 500, "recovery")
	recoveryFailed := ld.failed.Load() - beforeRecovery
	ld.finish()
	elapsed := time.Since(start)
	maxListen, maxPooled := sampler.finish()

	t.Logf("%d clients through HAProxy for %v: %d reads right, %d wrong, %d failed (SIGKILL of replica %d: %d failed, DOWN after %v; SIGTERM of replica %d: %d failed; recovery: %d failed)",
		clients, elapsed.Round(time.Millisecond), ld.ok.Load(), ld.wrong.Load(), ld.failed.Load(), h, killFailed, down.Round(time.Millisecond), term, termFailed, recoveryFailed)
	t.Logf("failures: %v", ld.errors())
	t.Logf("listen stream moved from replica %d to %d, notified %v after the commit began", h, h2, notified.Round(time.Millisecond))
	peak, peakRows := sampler.peak()
	t.Logf("PostgreSQL backends of the database: at most %d pooled (%d in one sample; PgBouncer default_pool_size %d, %d replicas × pgx pool of 4) and %d LISTEN", maxPooled, peak, fleetPoolSize, replicas, maxListen)

	if n := ld.wrong.Load(); n != 0 {
		t.Errorf("%d wrong bodies", n)
	}
	for _, m := range ld.errors() {
		if !retryable(m) {
			t.Errorf("a failure that is not retryable: %s", m)
		}
	}
	if killFailed > clients {
		t.Errorf("%d requests failed around the SIGKILL; at most one per client (%d) may", killFailed, clients)
	}
	if termFailed > clients {
		t.Errorf("%d requests failed around the SIGTERM; at most one per client (%d) may", termFailed, clients)
	}
	if recoveryFailed != 0 {
		t.Errorf("%d requests failed with two replicas left and no fault", recoveryFailed)
	}
	if maxPooled > fleetPoolSize || maxPooled < 1 {
		t.Errorf("at most %d pooled backends seen: want 1 to PgBouncer's pool of %d; at the peak of one sample: %s", maxPooled, fleetPoolSize, peakRows)
	}
	if maxListen > replicas {
		t.Errorf("%d LISTEN backends seen for %d replicas", maxListen, replicas)
	}
}

// sqlBackends counts the client backends of a database: the replicas'
// direct LISTEN connections ($2), and the rest but the test's own ($3):
// PgBouncer's server connections.
const sqlBackends = `SELECT count(*) FILTER (WHERE application_name = $2),
	count(*) FILTER (WHERE application_name IS DISTINCT FROM $2 AND application_name IS DISTINCT FROM $3)
	FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'`

// sqlBackendRows describes the client backends of a database ($1).
const sqlBackendRows = `SELECT coalesce(string_agg(format('%s %s/%s %s %s', pid, application_name, client_port, state, backend_start::time), '; ' ORDER BY pid), '')
	FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'`

// TestPgBouncerTransactionModeAndPgx shows what pgx may and may not rely
// on through PgBouncer 1.18 in transaction mode, on a pool of one server
// connection shared by two clients: pgx's default exec mode (named
// prepared statements, cached per client connection) fails, as the second
// client prepares the name the first left on the server; exec and
// cache_describe (unnamed statements) work; settings made with
// set_config(..., true) in the store's one-round-trip batch end with its
// implicit transaction, so the next client on the same server connection
// does not see them, where a session setting (false) would leak to it.
func TestPgBouncerTransactionModeAndPgx(t *testing.T) {
	t.Parallel()
	dbURL := harness.Postgres(t)
	pooled := startPgBouncer(t, dbURL, 1)
	ctx := t.Context()
	open := func(t *testing.T, mode string) *pgx.Conn {
		t.Helper()
		u := pooled
		if mode != "" {
			u = withParams(t, pooled, "default_query_exec_mode", mode)
		}
		c, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	const q = `SELECT $1::int + 1, pg_backend_pid()`

	t.Run("default mode fails", func(t *testing.T) {
		a, b := open(t, ""), open(t, "")
		var n, pidA, pidB int
		if err := a.QueryRow(ctx, q, 1).Scan(&n, &pidA); err != nil {
			t.Fatalf("the first client: %v", err)
		}
		err := b.QueryRow(ctx, q, 1).Scan(&n, &pidB)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42P05" {
			t.Fatalf("the second client on the same server connection: %v; want 42P05 (prepared statement already exists)", err)
		}
		t.Logf("pgx's default mode through PgBouncer: %v", err)
	})
	for _, mode := range []string{"exec", "cache_describe"} {
		t.Run(mode+" works", func(t *testing.T) {
			a, b := open(t, mode), open(t, mode)
			pids := map[int]bool{}
			for i := range 20 {
				c := a
				if i%2 == 1 {
					c = b
				}
				var n, pid int
				if err := c.QueryRow(ctx, q, i).Scan(&n, &pid); err != nil || n != i+1 {
					t.Fatalf("query %d: %d, %v", i, n, err)
				}
				pids[pid] = true
			}
			if len(pids) != 1 {
				t.Fatalf("server backends %v: want the pool's one", pids)
			}
		})
	}
	t.Run("transaction-local settings stay in their transaction", func(t *testing.T) {
		a, b := open(t, fleetExecMode), open(t, fleetExecMode)
		set := func(local bool) int {
			t.Helper()
			batch := &pgx.Batch{}
			batch.Queue(`SELECT set_config('mcp.principal', 'alice', $1), set_config('statement_timeout', '1234', $1)`, local)
			batch.Queue(`SELECT current_setting('mcp.principal'), current_setting('statement_timeout'), pg_backend_pid()`)
			br := a.SendBatch(ctx, batch)
			if _, err := br.Exec(); err != nil {
				t.Fatal(err)
			}
			var principal, timeout string
			var pid int
			if err := br.QueryRow().Scan(&principal, &timeout, &pid); err != nil {
				t.Fatal(err)
			}
			if err := br.Close(); err != nil {
				t.Fatal(err)
			}
			if principal != "alice" || timeout != "1234ms" {
				t.Fatalf("inside the batch: principal %q, statement_timeout %q", principal, timeout)
			}
			return pid
		}
		seen := func() (string, string, int) {
			t.Helper()
			var principal, timeout string
			var pid int
			if err := b.QueryRow(ctx, `SELECT coalesce(current_setting('mcp.principal', true), ''), current_setting('statement_timeout'), pg_backend_pid()`).Scan(&principal, &timeout, &pid); err != nil {
				t.Fatal(err)
			}
			return principal, timeout, pid
		}
		pidA := set(true)
		principal, timeout, pidB := seen()
		if pidA != pidB {
			t.Fatalf("the two clients ran on backends %d and %d: want the pool's one", pidA, pidB)
		}
		if principal != "" || timeout == "1234ms" {
			t.Fatalf("the next client on the same backend sees principal %q, statement_timeout %q: a transaction-local setting leaked", principal, timeout)
		}
		// The contrast: a session setting stays on the server connection
		// and reaches whichever client gets it next.
		set(false)
		if principal, timeout, _ := seen(); principal != "alice" || timeout != "1234ms" {
			t.Fatalf("a session setting: the next client sees principal %q, statement_timeout %q; want it leaked (the pool is not shared?)", principal, timeout)
		}
	})
}
