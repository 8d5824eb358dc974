package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/internal/httpguard"
)

// waitLog waits until the server's stderr holds want.
func (s *httpServer) waitLog(want string, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for !strings.Contains(s.stderr.String(), want) {
		if time.Now().After(deadline) || s.exited() {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Issue 39, defect 9: the SDK's INFO line "resource subscribed uri=..."
// carried capture values (SQL parameters), and nothing was logged when a
// stateful session expired. URIs are written at debug level only; a
// session's end is logged with its reason.
func TestLogsKeepURIsBelowInfoAndSaySessionsEndedAndWhy(t *testing.T) {
	subscribe := `{"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{"uri":"` + demoReadme + `"}}`
	t.Run("info", func(t *testing.T) {
		s := startHTTP(t, "--session-timeout=2s")
		sid := s.open()
		if _, _, msgs := s.post(subscribe, sid); len(msgs) != 1 || strings.Contains(string(msgs[0]), `"error"`) {
			t.Fatalf("subscribe: %s", msgs)
		}
		gone := s.open()
		req, _ := http.NewRequest(http.MethodDelete, "http://"+s.addr+"/mcp", nil)
		req.Header.Set(httpguard.SessionHeader, gone)
		req.Header.Set("MCP-Protocol-Version", testProtocol)
		if resp, err := s.hc.Do(req); err != nil {
			t.Fatal(err)
		} else {
			resp.Body.Close()
		}
		if !s.waitLog(`msg="session ended" reason="deleted by the client"`, 10*time.Second) {
			t.Errorf("no line for the deleted session:\n%s", tail(s.stderr.String(), 2048))
		}
		if !s.waitLog(`msg="session ended" reason="idle timeout"`, 15*time.Second) {
			t.Errorf("no line for the session that expired:\n%s", tail(s.stderr.String(), 2048))
		}
		if strings.Contains(s.stderr.String(), demoReadme) {
			t.Errorf("a URI in the info log:\n%s", tail(s.stderr.String(), 2048))
		}
	})
	t.Run("debug", func(t *testing.T) {
		s := startHTTP(t, "--log-level=debug")
		sid := s.open()
		s.post(subscribe, sid)
		if !s.waitLog(`level=DEBUG msg="resource subscribed" component=mcp uri=`+demoReadme, 10*time.Second) {
			t.Errorf("the SDK's subscribe line is not at debug level:\n%s", tail(s.stderr.String(), 2048))
		}
	})
}
