package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/internal/serverproc"
	"go.phpboyscout.uk/mcp/resources/live"
	"go.phpboyscout.uk/mcp/resources/migrations"
)

// roundRobin is a reverse proxy on loopback that sends each request to the
// next live backend in turn, like a load balancer without affinity. A
// backend marked down (its health check failed) gets nothing; a request
// whose backend refuses the connection is sent to the next one.
type roundRobin struct {
	srv      *httptest.Server
	backends []*runningServer
	next     atomic.Uint64

	mu   sync.Mutex
	down map[int]bool
	seen []served
}

// served is one request a backend got: its JSON-RPC method.
type served struct {
	backend int
	method  string
}

func newRoundRobin(t *testing.T, backends ...*runningServer) *roundRobin {
	t.Helper()
	rr := &roundRobin{backends: backends, down: map[int]bool{}}
	rr.srv = httptest.NewServer(http.HandlerFunc(rr.serve))
	t.Cleanup(rr.srv.Close)
	return rr
}

func (rr *roundRobin) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	for range len(rr.backends) {
		i := int(rr.next.Add(1)-1) % len(rr.backends)
		rr.mu.Lock()
		down := rr.down[i]
		rr.mu.Unlock()
		if down {
			continue
		}
		failed := false
		target, _ := url.Parse("http://" + rr.backends[i].addr)
		p := httputil.NewSingleHostReverseProxy(target)
		p.FlushInterval = -1 // SSE: every event at once
		p.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) { failed = true }
		req := r.Clone(r.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		rr.mu.Lock()
		rr.seen = append(rr.seen, served{i, msg.Method})
		rr.mu.Unlock()
		p.ServeHTTP(w, req)
		if !failed || r.Context().Err() != nil {
			return
		}
	}
	http.Error(w, "no backend", http.StatusBadGateway)
}

// markDown takes backend i out of the rotation.
func (rr *roundRobin) markDown(i int) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.down[i] = true
}

// servedBy returns the backends that got a request for method.
func (rr *roundRobin) servedBy(method string) map[int]int {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	out := map[int]int{}
	for _, s := range rr.seen {
		if s.method == method {
			out[s.backend]++
		}
	}
	return out
}

// lastFor returns the backend that got the latest request for method, or -1.
func (rr *roundRobin) lastFor(method string) int {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	for i := len(rr.seen) - 1; i >= 0; i-- {
		if rr.seen[i].method == method {
			return rr.seen[i].backend
		}
	}
	return -1
}

var metricLine = regexp.MustCompile(`(?m)^(mcpres_subscriptions_active|mcpres_subscribers_active|mcpres_sessions_active|mcpres_live_changes_total|mcpres_live_checks_pending|mcpres_live_notifications_total|mcpres_live_notifications_undelivered_total|go_goroutines) (\S+)$`)

// gauges reads the server's subscription, session, live-change and
// goroutine metrics.
func (s *runningServer) gauges(t testing.TB) map[string]int {
	t.Helper()
	code, body := s.get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", code)
	}
	out := map[string]int{}
	for _, m := range metricLine.FindAllStringSubmatch(body, -1) {
		f, _ := strconv.ParseFloat(m[2], 64)
		out[m[1]] = int(f)
	}
	return out
}

// waitGauges polls the server's gauges until ok accepts them, or fails
// after 10 s.
func (s *runningServer) waitGauges(t *testing.T, what string, ok func(map[string]int) bool) map[string]int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		g := s.gauges(t)
		if ok(g) {
			return g
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: gauges %v after 10 s", what, g)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// listener is a 2026-07-28 go-sdk client through the proxy whose
// resources/updated notifications are counted.
type listener struct {
	cs      *mcp.ClientSession
	updates chan string
	n       atomic.Int64
}

func connectListener(t *testing.T, endpoint, token string) *listener {
	t.Helper()
	l := &listener{updates: make(chan string, 1024)}
	client := mcp.NewClient(&mcp.Implementation{Name: "stateless-test", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			l.n.Add(1)
			select {
			case l.updates <- r.Params.URI:
			default:
			}
		},
	})
	hc := &http.Client{Transport: serverproc.Bearer{Token: token, Next: http.DefaultTransport}}
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: endpoint + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	l.cs = cs
	return l
}

// expect waits up to within for a notification of uri.
func (l *listener) expect(t *testing.T, uri string, within time.Duration, what string) {
	t.Helper()
	select {
	case got := <-l.updates:
		if got != uri {
			t.Fatalf("%s: notified of %q, want %q", what, got, uri)
		}
	case <-time.After(within):
		t.Fatalf("%s: no resources/updated within %v", what, within)
	}
}

// serverLive ties a running server's live counters to a LISTEN
// connection of the test's own on the server's change channel: both see
// the same notifications, in commit order.
type serverLive struct {
	s    *runningServer
	ch   *pgChannel
	base int // the server's change reports when ch started listening
}

// watchServer waits until s's Postgres listener has connected (its first
// change report) and starts the test's own listener on channel.
func watchServer(t *testing.T, s *runningServer, dbURL, channel string) *serverLive {
	t.Helper()
	g := s.waitGauges(t, "the server's listener connected", func(g map[string]int) bool { return g["mcpres_live_changes_total"] >= 1 })
	w := &serverLive{s: s, ch: listenOn(t, dbURL, channel)}
	w.base = g["mcpres_live_changes_total"]
	return w
}

// settle waits until the server has received every notification committed
// so far on the channel (up to a marker the test's listener sends and
// reads) and has handled them all, and returns its counters then.
func (w *serverLive) settle(t *testing.T, what string) map[string]int {
	t.Helper()
	w.ch.since(t)
	want := w.base + w.ch.delivered
	return w.s.waitGauges(t, what, func(g map[string]int) bool {
		return g["mcpres_live_changes_total"] >= want && g["mcpres_live_checks_pending"] == 0
	})
}

func (l *listener) drain() {
	for {
		select {
		case <-l.updates:
		default:
			return
		}
	}
}

const statelessWelcome = "asset://project/handbook/asset/welcome/body"

// statelessPair starts two stateless replicas over one seeded database,
// sharing a cursor key and a tokens file, behind a round-robin proxy.
func statelessPair(t *testing.T) (string, [2]*runningServer, *roundRobin) {
	t.Helper()
	dbURL, _, flags := migratedAndSeeded(t)
	args := append(flags, "--stateless", "--cursor-key="+strings.Repeat("k", 32), "--tokens="+tokensFile(t, "alice", "bob"))
	var reps [2]*runningServer
	for i := range reps {
		reps[i] = startServer(t, args...)
		if !strings.Contains(reps[i].stderr.String(), "over subscriptions/listen streams (protocol 2026-07-28)") {
			t.Fatalf("replica %d start-up log does not say where subscriptions are served:\n%s", i, reps[i].stderr.String())
		}
	}
	return dbURL, reps, newRoundRobin(t, reps[0], reps[1])
}

func commitWelcome(t *testing.T, conn *pgx.Conn, suffix string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), `UPDATE mcpres.assets SET title = $1 WHERE project_id = 'handbook' AND id = 'welcome'`, "Welcome "+suffix); err != nil {
		t.Fatal(err)
	}
}

// holder waits until exactly one replica holds n subscriptions and returns
// its index.
func holder(t *testing.T, reps [2]*runningServer, n int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		a, b := reps[0].gauges(t)["mcpres_subscriptions_active"], reps[1].gauges(t)["mcpres_subscriptions_active"]
		switch {
		case a == n && b == 0:
			return 0
		case b == n && a == 0:
			return 1
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscriptions held: %d and %d, want %d on one replica", a, b, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStatelessListenStreamOnOneReplicaHearsCommitsAndRevocation runs two
// stateless replicas behind a round-robin proxy: a 2026-07-28 client's
// listen stream lands on one, its reads on both; a commit made by another
// connection is notified within a second; a storm of commits is bounded
// per listen stream; revoking the grant notifies nothing and ends the
// stream; closing a stream frees its subscriptions and goroutines on the
// replica that held it.
func TestStatelessListenStreamOnOneReplicaHearsCommitsAndRevocation(t *testing.T) {
	t.Parallel()
	dbURL, reps, rr := statelessPair(t)
	ctx := t.Context()
	base := [2]map[string]int{reps[0].gauges(t), reps[1].gauges(t)}

	l := connectListener(t, rr.srv.URL, "alice-token")
	init := l.cs.InitializeResult()
	if init.ProtocolVersion != "2026-07-28" {
		t.Fatalf("negotiated %q: want the 2026-07-28 revision", init.ProtocolVersion)
	}
	if c := init.Capabilities; c == nil || c.Resources == nil || !c.Resources.Subscribe {
		t.Fatalf("capabilities %+v: a stateless replica must declare resources.subscribe to a 2026-07-28 client", c)
	}
	if err := l.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: statelessWelcome}); err != nil {
		t.Fatal(err)
	}
	h := holder(t, reps, 1)
	if got := rr.lastFor("subscriptions/listen"); got != h {
		t.Fatalf("the listen request went to replica %d, but replica %d holds the subscription", got, h)
	}
	for range 4 {
		if _, err := l.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: statelessWelcome}); err != nil {
			t.Fatal(err)
		}
	}
	if by := rr.servedBy("resources/read"); by[0] == 0 || by[1] == 0 {
		t.Fatalf("reads served by replica %v: want both", by)
	}

	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	w := watchServer(t, reps[h], dbURL, migrations.KeyChannel)
	begun := time.Now()
	commitWelcome(t, conn, "1")
	l.expect(t, statelessWelcome, 10*time.Second, "a commit by another connection")
	t.Logf("notified %v after the commit began, through replica %d", time.Since(begun), h)

	// The write-storm bound, per listen stream.
	sent := w.settle(t, "before the storm")["mcpres_live_notifications_total"]
	l.drain()
	if _, err := conn.Exec(ctx, `SET synchronous_commit = off`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 1000 {
		commitWelcome(t, conn, fmt.Sprint("storm ", i))
		if ahead := time.Duration(i+1)*time.Millisecond - time.Since(start); ahead > 0 {
			time.Sleep(ahead)
		}
	}
	storm := time.Since(start)
	// The bound holds from the first commit until the replica has handled
	// the last (it may receive the storm later than it was committed).
	after := w.settle(t, "after the storm")["mcpres_live_notifications_total"]
	span := time.Since(start)
	n := after - sent
	bound := 1 + int((span+live.DefaultMinInterval-1)/live.DefaultMinInterval)
	t.Logf("1000 commits in %v, handled after %v: %d notifications on the listen stream (bound 1+ceil(d/500ms) = %d)", storm, span, n, bound)
	if n < 1 || n > bound {
		t.Fatalf("%d notifications for 1000 commits handled in %v; want 1..%d", n, span, bound)
	}
	sent = after
	l.drain()

	// Revocation: the grant goes, the next change notifies nothing, and the
	// listen stream ends on the replica that held it.
	if _, err := conn.Exec(ctx, `DELETE FROM mcpres.grants WHERE principal = 'alice' AND project_id = 'handbook'`); err != nil {
		t.Fatal(err)
	}
	reps[h].waitGauges(t, "after the revocation", func(g map[string]int) bool {
		return g["mcpres_subscriptions_active"] == 0 && g["mcpres_subscribers_active"] == 0 &&
			g["mcpres_sessions_active"] == base[h]["mcpres_sessions_active"]
	})
	sent = w.settle(t, "after the revocation")["mcpres_live_notifications_total"]
	commitWelcome(t, conn, "after the revocation")
	if n := w.settle(t, "a change after the revocation")["mcpres_live_notifications_total"] - sent; n != 0 {
		t.Fatalf("a change after the revocation: %d notifications, want none", n)
	}

	// Closing a stream frees what it held: grant again, listen, close.
	if _, err := conn.Exec(ctx, `INSERT INTO mcpres.grants (principal, project_id, asset_id, can_discover, can_read, disclose_issue_uri) VALUES ('alice', 'handbook', NULL, true, true, true)`); err != nil {
		t.Fatal(err)
	}
	if err := l.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: statelessWelcome}); err != nil {
		t.Fatal(err) // the client's own record of the ended listen
	}
	if err := l.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: statelessWelcome}); err != nil {
		t.Fatal(err)
	}
	h = holder(t, reps, 1)
	if g := reps[h].gauges(t); g["mcpres_subscribers_active"] != 1 {
		t.Fatalf("replica %d gauges %v: want one listen stream", h, g)
	}
	commitWelcome(t, conn, "granted again")
	l.expect(t, statelessWelcome, 10*time.Second, "a commit after the grant came back")
	if err := l.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: statelessWelcome}); err != nil {
		t.Fatal(err)
	}
	g := reps[h].waitGauges(t, "after the stream closed", func(g map[string]int) bool {
		return g["mcpres_subscriptions_active"] == 0 && g["mcpres_subscribers_active"] == 0 &&
			g["mcpres_sessions_active"] == base[h]["mcpres_sessions_active"] &&
			g["go_goroutines"] <= base[h]["go_goroutines"]+2
	})
	t.Logf("replica %d after the stream closed: %v (baseline %v)", h, g, base[h])
}

// TestStatelessListenMovesToTheOtherReplicaWhenItsReplicaDies kills the
// replica that holds a listen stream: the client listens again (the go-sdk
// v1.8.0 client does not reconnect a listen stream by itself: its stream
// has no event ids to resume from, so the test re-issues the listen), the
// proxy sends it to the surviving replica, which subscribes it and
// notifies the next change.
func TestStatelessListenMovesToTheOtherReplicaWhenItsReplicaDies(t *testing.T) {
	t.Parallel()
	dbURL, reps, rr := statelessPair(t)
	ctx := t.Context()
	l := connectListener(t, rr.srv.URL, "alice-token")
	if err := l.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: statelessWelcome}); err != nil {
		t.Fatal(err)
	}
	h := holder(t, reps, 1)
	other := 1 - h
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	commitWelcome(t, conn, "before")
	l.expect(t, statelessWelcome, 10*time.Second, "a commit before the kill")

	if err := reps[h].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err = <-reps[h].done
	reps[h].done <- err
	rr.markDown(h)

	if err := l.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: statelessWelcome}); err != nil {
		t.Fatal(err)
	}
	if err := l.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: statelessWelcome}); err != nil {
		t.Fatal(err)
	}
	reps[other].waitGauges(t, "the surviving replica", func(g map[string]int) bool { return g["mcpres_subscriptions_active"] == 1 })
	if got := rr.lastFor("subscriptions/listen"); got != other {
		t.Fatalf("the second listen went to replica %d, want the survivor %d", got, other)
	}
	begun := time.Now()
	commitWelcome(t, conn, "after")
	l.expect(t, statelessWelcome, 10*time.Second, "a commit after the kill")
	t.Logf("the survivor notified %v after the commit began", time.Since(begun))
	if _, err := l.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: statelessWelcome}); err != nil {
		t.Fatalf("a read after the kill: %v", err)
	}
}

// TestStatelessRefusesSessionSubscriptionsOfEarlierRevisions: a
// 2025-11-25 client of a stateless replica is not offered resources.subscribe
// and a resources/subscribe is refused, since its session ends with the
// request; it keeps its session subscriptions on a stateful server (see
// TestServerSubscriptionsAndCompletionFollowTheGrants).
func TestStatelessRefusesSessionSubscriptionsOfEarlierRevisions(t *testing.T) {
	t.Parallel()
	_, reps, _ := statelessPair(t)
	body := func(method, params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	}
	post := func(msg string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "http://"+reps[0].addr+"/mcp", strings.NewReader(msg))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer alice-token")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	init := post(body("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}`))
	if !strings.Contains(init, `"resources"`) || strings.Contains(init, `"subscribe":true`) {
		t.Fatalf("2025-11-25 initialize on a stateless replica: %s\nwant resources without subscribe", init)
	}
	sub := post(body("resources/subscribe", `{"uri":"`+statelessWelcome+`"}`))
	if !strings.Contains(sub, `"code":-32601`) || strings.Contains(sub, `"result"`) {
		t.Fatalf("2025-11-25 resources/subscribe on a stateless replica: %s\nwant -32601 (method not found)", sub)
	}
	if g := reps[0].gauges(t); g["mcpres_subscriptions_active"] != 0 {
		t.Fatalf("gauges %v: a refused subscribe is kept", g)
	}
}
