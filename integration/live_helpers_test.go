package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/live"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// liveInstance is one server instance on a test database: its own pool,
// gateway, store listener (Store.Listener, on migration 3's key channel)
// and subscriptions, serving every client as one principal.
type liveInstance struct {
	server   *mcp.Server
	subs     *mcpsdk.Subscriptions
	listener *postgres.Listener
	res      *core.Resources
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
	for deadline := time.Now().Add(5 * time.Second); l.PID() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the listener did not connect within 5 s")
		}
	}
	return &liveInstance{server: server, subs: subs, listener: l, res: res}
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
	server := mcp.NewServer(&mcp.Implementation{Name: "live", Version: "v0"}, a.ServerOptions(nil))
	a.Install(server)
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

// none fails if any update arrives within d.
func (lc *liveClient) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case u := <-lc.ch:
		t.Fatalf("unexpected resources/updated for %s", u.uri)
	case <-time.After(d):
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
