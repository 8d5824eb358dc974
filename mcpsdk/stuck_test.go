package mcpsdk

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/live"
	"go.phpboyscout.uk/mcp/resources/stores/memory"
)

// stuckTransport is a server transport whose client stops reading once it
// has subscribed: every resources/updated write blocks until its deadline
// passes, as a write to a full socket with a write deadline does (the
// command's HTTP guard and stdio transport set one from the context).
type stuckTransport struct{ mcp.Transport }

func (t stuckTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &stuckConn{Connection: c, closed: make(chan struct{})}, nil
}

type stuckConn struct {
	mcp.Connection
	closed chan struct{}
	once   bool
}

func (c *stuckConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Request); ok && r.Method == NotificationResourceUpdated {
		select {
		case <-c.closed:
			return context.Canceled
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return c.Connection.Write(ctx, m)
}

func (c *stuckConn) Close() error {
	if !c.once {
		c.once = true
		close(c.closed)
	}
	return c.Connection.Close()
}

func TestAStuckSubscriberDelaysOnlyItselfAndIsDroppedAfterItsWriteDeadline(t *testing.T) {
	st, res := liveStore(t)
	const writeTimeout = 300 * time.Millisecond
	s, a := adapted(&mcp.Implementation{Name: "live", Version: "v0"}, nil, res, &Options{Principal: func(context.Context, mcp.Request) string { return "alice" },
		Live: &live.Options{MinInterval: 20 * time.Millisecond, WriteTimeout: writeTimeout}, Sources: []core.ChangeSource{st}})
	subs := a.Subscriptions()
	runWatching(t, a, st)

	// The stuck subscriber, connected first so that the SDK meets it first
	// when it walks the subscribers of the URI.
	sst, sct := mcp.NewInMemoryTransports()
	stuck, err := s.Connect(context.Background(), stuckTransport{sst}, nil)
	if err != nil {
		t.Fatal(err)
	}
	stuckClient, err := mcp.NewClient(&mcp.Implementation{Name: "stuck", Version: "v0"}, nil).Connect(context.Background(), sct,
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer stuckClient.Close()
	if err := stuckClient.Subscribe(context.Background(), &mcp.SubscribeParams{URI: liveDoc("a")}); err != nil {
		t.Fatal(err)
	}
	reader := connectLive(t, s, "2025-11-25")
	if err := reader.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: liveDoc("a")}); err != nil {
		t.Fatal(err)
	}

	const changes = 10
	start := time.Now()
	for i := range changes {
		st.Put("a", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte{byte('0' + i)}})
		// Spaced beyond the coalescing interval: alone, the reader would
		// get one notification per change.
		reader.await(t, liveDoc("a"), 2*time.Second)
	}
	t.Logf("the reader got %d notifications of %d changes in %v beside a stuck subscriber", reader.count(), changes, time.Since(start))
	if n := reader.count(); n != changes {
		t.Fatalf("the reader got %d notifications, want %d", n, changes)
	}

	waited := make(chan struct{})
	go func() { stuck.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(writeTimeout + 2*time.Second):
		t.Fatalf("the stuck session is still open %v after its write deadline", writeTimeout+2*time.Second)
	}
	if n := subs.DroppedSessions(); n != 1 {
		t.Fatalf("DroppedSessions = %d, want 1", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for subs.Hub().Stats().Sessions != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := subs.Hub().Stats(); st.Sessions != 1 || st.Subscriptions != 1 {
		t.Fatalf("hub stats %+v: want only the reader's subscription left", st)
	}
}
