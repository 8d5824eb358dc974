package mcpsdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/stores/memory"
)

// Issue 46, defect 1: a stateful streamable HTTP session that never opens
// the standalone GET stream (optional in the 2025-11-25 transport; mcp-go
// opens none by default) was ended by its first notification, as if it
// had missed the write deadline, and its next request got 404. The
// notification has nowhere to go: it is dropped and counted, as the go-sdk
// server drops its own, and the session keeps answering.
func TestStatefulSessionWithoutAStandaloneStreamSurvivesItsNotifications(t *testing.T) {
	st, res := liveStore(t)
	s, subs := liveServer(t, st, res, "alice", mcp.ServerOptions{})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: liveDoc("a")}); err != nil {
		t.Fatal(err)
	}
	waitSubscribed(t, subs, 1)
	for i := range 3 {
		before := settled(t, subs).Notified
		st.Put("a", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte(fmt.Sprint("v", i+2))})
		if settled(t, subs).Notified == before {
			t.Fatalf("change %d: no notification was sent", i)
		}
		waitUndelivered(t, subs, int64(i+1))
		if _, err := cs.ListResources(context.Background(), nil); err != nil {
			t.Fatalf("after notification %d, the session no longer answers: %v", i+1, err)
		}
	}
	if n := subs.DroppedSessions(); n != 0 {
		t.Errorf("%d sessions ended, want 0", n)
	}
	if !subs.Hub().Subscribed(sessionOf(t, s), liveDoc("a")) {
		t.Error("the session lost its subscription")
	}
}

// The same by hand, as mcp-go's client does it: POST initialize,
// notifications/initialized and resources/subscribe, change the item, POST
// another request.
func TestStatefulSessionWithoutAStandaloneStreamByHand(t *testing.T) {
	st, res := liveStore(t)
	s, subs := liveServer(t, st, res, "alice", mcp.ServerOptions{})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: true}))
	t.Cleanup(srv.Close)
	sid := ""
	post := func(body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			sid = id
		}
		return resp.StatusCode, string(bytes.TrimSpace(b))
	}
	if code, b := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"byhand","version":"1"}}}`); code != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", code, b)
	}
	if code, b := post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", code, b)
	}
	if code, b := post(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"` + liveDoc("a") + `"}}`); code != 200 || !strings.Contains(b, `"result"`) {
		t.Fatalf("subscribe: %d %s", code, b)
	}
	waitSubscribed(t, subs, 1)
	st.Put("a", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("v2")})
	settled(t, subs)
	waitUndelivered(t, subs, 1)
	code, b := post(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"` + liveDoc("a") + `"}}`)
	var m struct {
		Result struct{ Contents []struct{ Text string } }
	}
	if code != 200 || json.Unmarshal([]byte(b), &m) != nil || len(m.Result.Contents) != 1 || m.Result.Contents[0].Text != "v2" {
		t.Fatalf("read after the notification: %d %s", code, b)
	}
}

// waitUndelivered waits until subs has dropped n notifications that had no
// stream to go to; the writer runs apart from the hub.
func waitUndelivered(t *testing.T, subs *Subscriptions, n int64) {
	t.Helper()
	waitFor(t, func() bool { return subs.UndeliveredNotifications() >= n || subs.DroppedSessions() > 0 })
	if got := subs.UndeliveredNotifications(); got != n {
		t.Fatalf("%d notifications undelivered (%d sessions ended), want %d", got, subs.DroppedSessions(), n)
	}
}

// sessionOf returns s's only session.
func sessionOf(t *testing.T, s *mcp.Server) *mcp.ServerSession {
	t.Helper()
	var one *mcp.ServerSession
	for ss := range s.Sessions() {
		if one != nil {
			t.Fatal("more than one session")
		}
		one = ss
	}
	if one == nil {
		t.Fatal("no session")
	}
	return one
}

// waitFor polls cond for at most 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met after 10 s")
		}
	}
}
