package mcpsdk

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/httpguard"
	"go.phpboyscout.uk/mcp/resources/live"
	"go.phpboyscout.uk/mcp/resources/stores/memory"
)

// smallBuffers makes every accepted TCP connection's send buffer small, so
// that a client that stops reading fills it after a few notifications.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// stallingBody passes a listen stream's first bytes (the acknowledgement)
// and then stops reading, as a client that went away without closing does.
type stallingBody struct {
	io.ReadCloser
	read    int
	release chan struct{}
}

func (b *stallingBody) Read(p []byte) (int, error) {
	if b.read > 0 {
		<-b.release
		return 0, io.EOF
	}
	n, err := b.ReadCloser.Read(p)
	b.read += n
	return n, err
}

// stallListens stalls the response of every subscriptions/listen request.
type stallListens struct {
	next    http.RoundTripper
	release chan struct{}
}

func (s stallListens) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := s.next.RoundTrip(r)
	if err == nil && bytes.Contains(body, []byte(`"`+MethodSubscriptionsListen+`"`)) {
		resp.Body = &stallingBody{ReadCloser: resp.Body, release: s.release}
	}
	return resp, err
}

// TestAStuckListenStreamOnStatelessHTTPDelaysOnlyItselfAndEnds serves
// subscriptions on stateless streamable HTTP behind the command's HTTP
// guard: of two 2026-07-28 clients listening to one URI, one stops reading
// its listen stream. The other is notified of every change, and the stuck
// stream's session ends after the write deadline, freeing its subscription.
func TestAStuckListenStreamOnStatelessHTTPDelaysOnlyItselfAndEnds(t *testing.T) {
	st, res := liveStore(t)
	// A document with a 1,500-byte id, so that each notification is about
	// 1.6 KiB: the changes below write some 300 KiB to the stuck stream,
	// far more than its socket buffers hold (about 30 KiB, which 200
	// notifications of a short URI did not always fill, so that the stuck
	// stream was sometimes never stuck).
	doc := strings.Repeat("x", 1500)
	if _, err := st.Put(doc, memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("v1")}); err != nil {
		t.Fatal(err)
	}
	st.Grant(doc, "alice", memory.Access{Read: true})
	const writeTimeout = 300 * time.Millisecond
	s, a := adapted(&mcp.Implementation{Name: "live", Version: "v0"}, nil, res, &Options{Principal: func(context.Context, mcp.Request) string { return "alice" },
		Live:    &live.Options{MinInterval: time.Millisecond, SessionBurst: 1000, SessionInterval: time.Millisecond, WriteTimeout: writeTimeout},
		Sources: []core.ChangeSource{st}, ListenOnly: true})
	subs := a.Subscriptions()
	runWatching(t, a, st)

	h := httpguard.Handler(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true}), httpguard.Options{WriteTimeout: writeTimeout})
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = smallBuffers{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)

	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	dial := &net.Dialer{}
	stuckHTTP := &http.Client{Transport: stallListens{release: release, next: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial.DialContext(ctx, network, addr)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(4096)
			}
			return c, err
		}}}}
	connect := func(hc *http.Client) (*mcp.ClientSession, chan string) {
		t.Helper()
		ch := make(chan string, 10000)
		c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, &mcp.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
				select {
				case ch <- r.Params.URI:
				default:
				}
			},
		})
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		if v := cs.InitializeResult().ProtocolVersion; v != ListenProtocolVersion {
			t.Fatalf("negotiated %q, want %s", v, ListenProtocolVersion)
		}
		if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: liveDoc(doc)}); err != nil {
			t.Fatal(err)
		}
		return cs, ch
	}
	_, _ = connect(stuckHTTP)
	waitSubscribed(t, subs, 1)
	_, readerCh := connect(http.DefaultClient)
	waitSubscribed(t, subs, 2)

	// Changes spaced beyond the coalescing interval: each reaches the
	// reader, while the stuck stream's socket fills and its write stalls.
	const changes = 200
	start := time.Now()
	got := 0
	for i := range changes {
		if _, err := st.Put(doc, memory.Item{MIMEType: "text/plain", Text: true, Body: bytes.Repeat([]byte{byte('0' + i%10)}, i+1)}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-readerCh:
			got++
		case <-time.After(5 * time.Second):
			t.Fatalf("change %d: the reader got no notification within 5 s beside a stuck stream", i)
		}
	}
	t.Logf("the reader got %d notifications of %d changes in %v beside a stuck listen stream", got, changes, time.Since(start))

	deadline := time.Now().Add(writeTimeout + 3*time.Second)
	for subs.Hub().Stats().Sessions != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := subs.Hub().Stats(); st.Sessions != 1 || st.Subscriptions != 1 {
		t.Fatalf("hub stats %+v after the write deadline: want only the reader's listen stream left", st)
	}
	t.Logf("dropped sessions: %d", subs.DroppedSessions())
}

// statelessServer serves res to alice with ListenOnly subscriptions on
// stateless streamable HTTP.
func statelessServer(t *testing.T, st *memory.Store, res *core.Resources) (*mcp.Server, *Subscriptions, string) {
	t.Helper()
	s, a := adapted(&mcp.Implementation{Name: "live", Version: "v0"}, nil, res, &Options{Principal: func(context.Context, mcp.Request) string { return "alice" },
		Live: &live.Options{}, Sources: []core.ChangeSource{st}, ListenOnly: true})
	subs := a.Subscriptions()
	runWatching(t, a, st)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	return s, subs, srv.URL
}

func TestARevokedListenStreamEndsAndEarlierRevisionsAreNotOfferedSubscriptions(t *testing.T) {
	st, res := liveStore(t)
	s, subs, url := statelessServer(t, st, res)
	open := func() int {
		n := 0
		for range s.Sessions() {
			n++
		}
		return n
	}
	for _, v := range []string{"2025-11-25", ListenProtocolVersion} {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: v})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		r := cs.InitializeResult()
		if r.ProtocolVersion != v {
			t.Fatalf("asked for %s, negotiated %s", v, r.ProtocolVersion)
		}
		declared := r.Capabilities != nil && r.Capabilities.Resources != nil && r.Capabilities.Resources.Subscribe
		if want := v == ListenProtocolVersion; declared != want {
			t.Fatalf("%s: resources.subscribe declared %v, want %v", v, declared, want)
		}
		err = cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: liveDoc("a")})
		if v != ListenProtocolVersion {
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != jsonrpc.CodeMethodNotFound {
				t.Fatalf("%s resources/subscribe on a stateless server: %v, want -32601", v, err)
			}
			if n := subs.Hub().Stats().Subscriptions; n != 0 {
				t.Fatalf("%s: a refused subscribe left %d subscriptions", v, n)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		waitSubscribed(t, subs, 1)
		// Each request of a stateless server has a session of its own,
		// closed once it is answered, and the server may still be closing
		// the subscribe request's when the client has its answer: wait for
		// the one that lasts, the listen stream's.
		for deadline := time.Now().Add(10 * time.Second); open() != 1 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		if n := open(); n != 1 {
			t.Fatalf("%d sessions open while listening, want the listen stream's one", n)
		}
		st.Revoke("a", "alice")
		// The bound only limits a failing run: the loop ends as soon as
		// the stream has ended.
		deadline := time.Now().Add(10 * time.Second)
		for (open() != 0 || subs.Hub().Stats().Sessions != 0) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n, hs := open(), subs.Hub().Stats(); n != 0 || hs.Sessions != 0 || hs.Subscriptions != 0 || hs.Dropped != 1 {
			t.Fatalf("after the revocation: %d sessions open, hub %+v; want the listen stream ended and its subscription dropped", n, hs)
		}
	}
}
