package mcpsdk

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/live"
	"go.phpboyscout.uk/mcp/resources/stores/memory"
)

// listenAdapter serves res to alice with subscriptions, the listen bounds
// of opts, and its change sources running until the test ends; it returns
// once the hub watches st, so that a test's Revoke is not missed.
func listenAdapter(t *testing.T, st *memory.Store, res *core.Resources, opts Options) (*mcp.Server, *Adapter) {
	t.Helper()
	opts.Principal = func(context.Context, mcp.Request) string { return "alice" }
	opts.Live, opts.Sources = &live.Options{}, []core.ChangeSource{st}
	s, a := adapted(&mcp.Implementation{Name: "live", Version: "v0"}, nil, res, &opts)
	runWatching(t, a, st)
	return s, a
}

// sseStream is the response of one raw POST: its JSON-RPC messages, read
// as they arrive.
type sseStream struct {
	resp *http.Response
	msgs chan json.RawMessage
}

// rawPost POSTs body to url with the session id and protocol version (each
// may be empty) and reads the answer's messages in the background.
func rawPost(t *testing.T, ctx context.Context, url, session, version, body string) *sseStream {
	t.Helper()
	return bearerPost(t, ctx, url, "", session, version, body)
}

// bearerPost is rawPost with a bearer token (none when token is empty).
func bearerPost(t *testing.T, ctx context.Context, url, token, session, version, body string) *sseStream {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if version >= ListenProtocolVersion {
		var m struct{ Method string }
		_ = json.Unmarshal([]byte(body), &m)
		req.Header.Set("Mcp-Method", m.Method)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// Before the server's own cleanup, which waits for open streams.
	t.Cleanup(func() { resp.Body.Close() })
	s := &sseStream{resp: resp, msgs: make(chan json.RawMessage, 100)}
	go func() {
		defer close(s.msgs)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
		for sc.Scan() {
			line := sc.Text()
			if sse {
				d, ok := strings.CutPrefix(line, "data: ")
				if !ok {
					continue
				}
				line = d
			}
			if strings.TrimSpace(line) != "" {
				s.msgs <- json.RawMessage(line)
			}
		}
	}()
	return s
}

// next returns the next message, or fails the test after 10 s.
func (s *sseStream) next(t *testing.T) json.RawMessage {
	t.Helper()
	select {
	case m, ok := <-s.msgs:
		if !ok {
			t.Fatal("the stream ended without the expected message")
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10 s")
	}
	return nil
}

// answerTo reads until the response to id and returns it.
func (s *sseStream) answerTo(t *testing.T, id string) json.RawMessage {
	t.Helper()
	for {
		m := s.next(t)
		var w struct{ ID json.RawMessage }
		_ = json.Unmarshal(m, &w)
		if string(w.ID) == id {
			return m
		}
	}
}

func listenBody(id int, uri string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":[%q]}}}`, id, uri)
}

// statelessListenBody is a listen request of protocol 2026-07-28 without a
// session, whose _meta says who asks.
func statelessListenBody(id int, uri string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"_meta":{`+
		`"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},`+
		`"io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"resourceSubscriptions":[%q]}}}`, id, ListenProtocolVersion, uri)
}

const ackMethod = `"notifications/subscriptions/acknowledged"`

// openStateful initializes a session on a stateful server at url and
// returns its id.
func openStateful(t *testing.T, url string) string {
	t.Helper()
	init := rawPost(t, context.Background(), url, "", "",
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	init.answerTo(t, "0")
	sid := init.resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("no session id")
	}
	rawPost(t, context.Background(), url, sid, "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid
}

// waitListens waits until the adapter holds open listen streams.
func waitListens(t *testing.T, a *Adapter, open int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for a.Listens().Open != open {
		if time.Now().After(deadline) {
			t.Fatalf("%d listen streams open, want %d", a.Listens().Open, open)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Issue 39, defect 1: on a stateful session a listen request outlived the
// HTTP connection that carried it, with its goroutine, and nothing bounded
// how many a session kept.
func TestListenStreamsEndWithTheirConnectionAndAreBoundedPerSessionAndPrincipal(t *testing.T) {
	st, res := liveStore(t)
	s, a := listenAdapter(t, st, res, Options{MaxListensPerSession: 3, MaxListensPerPrincipal: 5})
	srv := httptest.NewServer(a.HTTPHandler(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)))
	t.Cleanup(srv.Close)
	sid := openStateful(t, srv.URL)

	// Clients that go away once acknowledged free their streams.
	for i := range 50 {
		ctx, cancel := context.WithCancel(context.Background())
		l := rawPost(t, ctx, srv.URL, sid, "2025-11-25", listenBody(i+1, liveDoc("a")))
		if m := l.next(t); !strings.Contains(string(m), ackMethod) {
			t.Fatalf("listen %d: %s, want the acknowledgement", i, m)
		}
		cancel()
		waitListens(t, a, 0)
	}
	if st := a.Listens(); st.Carrier != 50 || st.Refused != 0 {
		t.Fatalf("after 50 abandoned listens: %+v, want all 50 ended with their connection", st)
	}

	// Streams kept open count against the session's bound.
	for i := range 3 {
		l := rawPost(t, context.Background(), srv.URL, sid, "2025-11-25", listenBody(100+i, liveDoc("a")))
		if m := l.next(t); !strings.Contains(string(m), ackMethod) {
			t.Fatalf("listen %d: %s", i, m)
		}
	}
	waitListens(t, a, 3)
	over := rawPost(t, context.Background(), srv.URL, sid, "2025-11-25", listenBody(200, liveDoc("a"))).answerTo(t, "200")
	var e struct{ Error *jsonrpc.Error }
	if json.Unmarshal(over, &e); e.Error == nil || e.Error.Code != jsonrpc.CodeInternalError || e.Error.Message != ListenLimitMessage {
		t.Fatalf("a fourth listen in the session: %s, want %d %q", over, jsonrpc.CodeInternalError, ListenLimitMessage)
	}
	// Another session of the same principal has room for two more.
	sid2 := openStateful(t, srv.URL)
	for i := range 2 {
		l := rawPost(t, context.Background(), srv.URL, sid2, "2025-11-25", listenBody(300+i, liveDoc("a")))
		if m := l.next(t); !strings.Contains(string(m), ackMethod) {
			t.Fatalf("listen %d of the second session: %s", i, m)
		}
	}
	waitListens(t, a, 5)
	over = rawPost(t, context.Background(), srv.URL, sid2, "2025-11-25", listenBody(400, liveDoc("a"))).answerTo(t, "400")
	if json.Unmarshal(over, &e); e.Error == nil || e.Error.Message != ListenLimitMessage {
		t.Fatalf("a sixth listen of the principal: %s, want %q", over, ListenLimitMessage)
	}
	if st := a.Listens(); st.Open != 5 || st.Refused != 2 {
		t.Fatalf("listen stats %+v, want 5 open and 2 refused", st)
	}
}

// Two listen streams of one session on the same URI: when one ends, the
// other still holds its subscription.
func TestAListenStreamThatEndsLeavesAnotherStreamsSubscription(t *testing.T) {
	st, res := liveStore(t)
	s, a := listenAdapter(t, st, res, Options{})
	srv := httptest.NewServer(a.HTTPHandler(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)))
	t.Cleanup(srv.Close)
	sid := openStateful(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	first := rawPost(t, ctx, srv.URL, sid, "2025-11-25", listenBody(1, liveDoc("a")))
	first.next(t)
	second := rawPost(t, context.Background(), srv.URL, sid, "2025-11-25", listenBody(2, liveDoc("a")))
	second.next(t)
	waitListens(t, a, 2)
	cancel()
	waitListens(t, a, 1)
	if n := a.Subscriptions().Hub().Stats().Subscriptions; n != 1 {
		t.Fatalf("%d subscriptions after one of two streams on the URI ended, want 1", n)
	}
}

// Issue 39, defect 2: a listen whose subscriptions were all revoked was
// never answered (stateless HTTP closed the stream without a response; an
// in-memory or stdio session kept the request pending for ever).
func TestAListenWhoseSubscriptionsAreAllRevokedIsAnswered(t *testing.T) {
	t.Run("stateless HTTP", func(t *testing.T) {
		st, res := liveStore(t)
		s, a := listenAdapter(t, st, res, Options{ListenOnly: true})
		srv := httptest.NewServer(a.HTTPHandler(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
			&mcp.StreamableHTTPOptions{Stateless: true})))
		t.Cleanup(srv.Close)
		l := rawPost(t, context.Background(), srv.URL, "", ListenProtocolVersion, statelessListenBody(7, liveDoc("a")))
		if m := l.next(t); !strings.Contains(string(m), ackMethod) {
			t.Fatalf("listen: %s, want the acknowledgement", m)
		}
		waitSubscribed(t, a.Subscriptions(), 1)
		st.Revoke("a", "alice")
		answer := l.answerTo(t, "7")
		if !strings.Contains(string(answer), `"result"`) {
			t.Fatalf("the revoked listen was answered %s, want its result", answer)
		}
		if st := a.Listens(); st.Revoked != 1 || st.Open != 0 {
			t.Fatalf("listen stats %+v, want one revoked and none open", st)
		}
	})
	t.Run("one session", func(t *testing.T) {
		st, res := liveStore(t)
		if _, err := st.Put("b", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("v1")}); err != nil {
			t.Fatal(err)
		}
		st.Grant("b", "alice", memory.Access{Read: true})
		s, a := listenAdapter(t, st, res, Options{})
		conn := rawSession(t, s)
		// Two streams: one on a and b, which keeps b; one on a alone.
		conn.send(t, listenBody(8, liveDoc("a")))
		conn.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":[%q,%q]}}}`, liveDoc("a"), liveDoc("b")))
		// Both acknowledged: each stream's subscriptions are made (the hub
		// counts a once for the session, so its count says less).
		conn.acks(t, 2)
		waitListens(t, a, 2)
		waitSubscribed(t, a.Subscriptions(), 2)
		st.Revoke("a", "alice")
		if answer := conn.answerTo(t, "8"); !strings.Contains(string(answer), `"result"`) {
			t.Fatalf("the revoked listen was answered %s, want its result", answer)
		}
		waitListens(t, a, 1) // the stream that still holds b goes on
	})
}

// rawConn is a raw JSON-RPC client session over in-memory transports,
// initialized at 2025-11-25.
type rawConn struct {
	c    mcp.Connection
	msgs chan jsonrpc.Message
}

func rawSession(t *testing.T, s *mcp.Server) *rawConn {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	c, err := ct.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rc := &rawConn{c: c, msgs: make(chan jsonrpc.Message, 100)}
	go func() {
		defer close(rc.msgs)
		for {
			m, err := c.Read(context.Background())
			if err != nil {
				return
			}
			rc.msgs <- m
		}
	}()
	t.Cleanup(func() { c.Close() })
	rc.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	rc.answerTo(t, "0")
	rc.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return rc
}

func (rc *rawConn) send(t *testing.T, line string) {
	t.Helper()
	m, err := jsonrpc.DecodeMessage([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.c.Write(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

// acks reads n listen acknowledgements; a response before them fails t.
func (rc *rawConn) acks(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for n > 0 {
		select {
		case m, ok := <-rc.msgs:
			if !ok {
				t.Fatalf("the session ended with %d acknowledgements to come", n)
			}
			switch m := m.(type) {
			case *jsonrpc.Response:
				t.Fatalf("the answer to %v with %d acknowledgements to come", m.ID.Raw(), n)
			case *jsonrpc.Request:
				if m.Method == notificationSubscriptionsAck {
					n--
				}
			}
		case <-deadline:
			t.Fatalf("%d acknowledgements to come after 10 s", n)
		}
	}
}

// answerTo reads until the response to id and returns it encoded.
func (rc *rawConn) answerTo(t *testing.T, id string) json.RawMessage {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-rc.msgs:
			if !ok {
				t.Fatalf("the session ended before the answer to %s", id)
			}
			r, isResp := m.(*jsonrpc.Response)
			if !isResp {
				continue
			}
			if b, _ := json.Marshal(r.ID.Raw()); string(b) == id {
				enc, err := jsonrpc.EncodeMessage(r)
				if err != nil {
					t.Fatal(err)
				}
				return enc
			}
		case <-deadline:
			t.Fatalf("no answer to %s within 10 s", id)
		}
	}
}

// Issue 39, defect 3: open listen streams held a shutdown for its whole
// grace period. EndListens answers them, and every later one at once.
func TestEndListensAnswersOpenStreamsAndLaterOnes(t *testing.T) {
	st, res := liveStore(t)
	s, a := listenAdapter(t, st, res, Options{})
	conn := rawSession(t, s)
	conn.send(t, listenBody(1, liveDoc("a")))
	waitListens(t, a, 1)
	a.EndListens()
	if answer := conn.answerTo(t, "1"); !strings.Contains(string(answer), `"result"`) {
		t.Fatalf("an open listen at shutdown: %s, want its result", answer)
	}
	conn.send(t, listenBody(2, liveDoc("a")))
	if answer := conn.answerTo(t, "2"); !strings.Contains(string(answer), `"result"`) {
		t.Fatalf("a listen after shutdown began: %s, want its result", answer)
	}
	if st := a.Listens(); st.Shutdown != 2 || st.Open != 0 {
		t.Fatalf("listen stats %+v, want 2 answered at shutdown", st)
	}
}
