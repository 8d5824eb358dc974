package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/live"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
	"go.phpboyscout.uk/mcp/resources/migrations"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// liveInstance is one server instance on a test database: its own pool,
// gateway, source listener (Source.Listener, on migration 3's key channel)
// and subscriptions, serving every client as one principal.
type liveInstance struct {
	server   *mcp.Server
	subs     *mcpsdk.Subscriptions
	listener *postgres.Listener
	res      *core.Resources
	ch       *pgChannel // the test's own listener on the same channel
	base     int64      // the hub's change reports when ch started listening
}

func newLiveInstance(t *testing.T, d *pgDB, principal string, opts *live.Options) *liveInstance {
	t.Helper()
	st := newStore(t, newPool(t, d.url, nil), nil)
	res := pgGateway(t, st.Bindings(), st.Policy())
	cfg, err := pgx.ParseConfig(d.url)
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.Listener(cfg, &postgres.ListenerOptions{MinBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	server, subs := liveServer(t, res, []core.ChangeSource{l}, opts, principal)
	// Connected, and its connection reported (one change, the recheck of
	// every subscription): from here on, the test's own listener and the
	// store's see the same notifications.
	for deadline := time.Now().Add(10 * time.Second); l.PID() == 0 || subs.Hub().Stats().Changes < 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the listener did not connect within 10 s")
		}
	}
	in := &liveInstance{server: server, subs: subs, listener: l, res: res, ch: listenOn(t, d.url, migrations.KeyChannel)}
	in.base = subs.Hub().Stats().Changes
	return in
}

// settle waits until the instance's hub has received every notification
// committed so far on its channel (up to a marker the test's own listener
// sends and reads) and has handled them all: no check pending, every
// notification they cause sent. It returns the hub's counters then. What a
// test asserts about the effect of a commit, it asserts after this, never
// after a window of time.
func (in *liveInstance) settle(t *testing.T) live.Stats {
	t.Helper()
	in.ch.since(t)
	want := in.base + int64(in.ch.delivered)
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := in.subs.Hub().Stats()
		if st.Changes >= want && st.Pending == 0 {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s the hub counted %d changes (want %d) with %d checks pending", st.Changes, want, st.Pending)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// liveServer serves res as principal with completion and with
// subscriptions fed by sources (opts nil: the defaults), through the one
// adapter value; the subscriptions run until the test ends.
func liveServer(t *testing.T, res *core.Resources, sources []core.ChangeSource, opts *live.Options, principal string) (*mcp.Server, *mcpsdk.Subscriptions) {
	t.Helper()
	if opts == nil {
		opts = &live.Options{}
	}
	a := mcpsdk.New(res, &mcpsdk.Options{
		Principal:   func(context.Context, mcp.Request) string { return principal },
		Completions: true, Live: opts, Sources: sources,
	})
	server := a.NewServer(&mcp.Implementation{Name: "live", Version: "v0"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return server, a.Subscriptions()
}

// liveClient is a client session that records the updates it receives.
type liveClient struct {
	cs *mcp.ClientSession
	ch chan update
	mu sync.Mutex
	n  int
}

type update struct {
	uri string
	at  time.Time
}

func (in *liveInstance) connect(t *testing.T, version string) *liveClient {
	t.Helper()
	lc := &liveClient{ch: make(chan update, 10000)}
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			lc.mu.Lock()
			lc.n++
			lc.mu.Unlock()
			lc.ch <- update{r.Params.URI, time.Now()}
		},
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := in.server.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := c.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	lc.cs = cs
	return lc
}

func (lc *liveClient) subscribe(t *testing.T, uri string) {
	t.Helper()
	if err := lc.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("subscribe %s: %v", uri, err)
	}
}

func (lc *liveClient) count() int {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.n
}

// await returns the first update of uri within d, or fails.
func (lc *liveClient) await(t *testing.T, uri string, d time.Duration) update {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case u := <-lc.ch:
			if u.uri == uri {
				return u
			}
		case <-deadline:
			t.Fatalf("no resources/updated for %s within %v", uri, d)
			return update{}
		}
	}
}

// none fails if in's hub, settled, has sent a notification since it had
// sent notified in all, or if lc holds one.
func (lc *liveClient) none(t *testing.T, in *liveInstance, notified int64) {
	t.Helper()
	if st := in.settle(t); st.Notified != notified {
		t.Fatalf("%d resources/updated sent, want none", st.Notified-notified)
	}
	select {
	case u := <-lc.ch:
		t.Fatalf("unexpected resources/updated for %s", u.uri)
	default:
	}
}

// drain discards the updates received so far.
func (lc *liveClient) drain() {
	for {
		select {
		case <-lc.ch:
		default:
			return
		}
	}
}

// commitUpdate updates an asset's title on a connection of its own (not
// the servers') and returns when the UPDATE has committed.
func commitUpdate(t *testing.T, conn *pgx.Conn, project, asset, title string) time.Time {
	t.Helper()
	if _, err := conn.Exec(context.Background(), `UPDATE mcpres.assets SET title = $3 WHERE project_id = $1 AND id = $2`, project, asset, title); err != nil {
		t.Fatalf("update: %v", err)
	}
	return time.Now()
}

func writer(t *testing.T, d *pgDB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), d.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// liveDB is a database with project p, assets a1 and a2, alice and bob
// granted the whole project.
func liveDB(t *testing.T) *pgDB {
	t.Helper()
	d := newPGDB(t)
	d.project(t, "p")
	d.textAsset(t, "p", "a1", "one")
	d.textAsset(t, "p", "a2", "two")
	d.grant(t, "alice", "p", "")
	d.grant(t, "bob", "p", "")
	return d
}

const liveA1 = "asset://project/p/asset/a1"

// pgChannel is a LISTEN connection of the test's own on one channel. It
// gives the order of events that PostgreSQL itself provides: notifications
// reach every listener in commit order, so once a marker notification sent
// after a change has arrived, every notification of that change has
// arrived before it, here and on every other listener of the channel.
type pgChannel struct {
	conn      *pgx.Conn
	channel   string
	delivered int // notifications read so far, markers included
}

// listenOn LISTENs on channel on a connection of its own.
func listenOn(t *testing.T, url, channel string) *pgChannel {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(context.Background(), "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return &pgChannel{conn: conn, channel: channel}
}

// since returns the payloads delivered on the channel since the last call
// (or since LISTEN), in order: it sends a marker notification and reads up
// to it, within 10 s. The marker is delivered to every listener too, and
// counts in delivered.
func (c *pgChannel) since(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	marker := fmt.Sprintf("mcpres-test-marker-%d", c.delivered)
	if _, err := c.conn.Exec(ctx, `SELECT pg_notify($1, $2)`, c.channel, marker); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		n, err := c.conn.WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("the marker notification on %s did not arrive within 10 s (got %q): %v", c.channel, got, err)
		}
		c.delivered++
		if n.Payload == marker {
			return got
		}
		got = append(got, n.Payload)
	}
}
