package integration

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"go.phpboyscout.uk/mcp/resources/mcpsdk"
)

// Issue 46, defect 4: an open subscriptions/listen stream outlived its
// token (12 s after expiry it still delivered every change). With a JWT
// signed by a key the issuer publishes and expiring 2 s after it is minted,
// the real server answers the open listen at the expiry with
// TokenExpiredCode, on stateless and on stateful HTTP: the acknowledgement
// first, then the answer, no earlier than exp, within 10 s of it.
func TestOAuthListenStreamEndsWhenItsTokenExpires(t *testing.T) {
	r := newOAuthRig(t)
	key := r.idp.publishedKey(t)
	for _, mode := range []struct {
		name  string
		extra []string
	}{{"stateless", []string{"--stateless", "--cursor-key", strings.Repeat("k", 32)}}, {"stateful", nil}} {
		t.Run(mode.name, func(t *testing.T) {
			s := r.serve(t, mode.extra...)
			exp := time.Now().Add(2 * time.Second).Truncate(time.Second)
			token := signJWT(t, jose.RS256, key.key, key.kid, map[string]any{"iss": r.idp.issuer, "sub": "alice",
				"aud": []string{r.resource}, "scp": []string{oauthScope}, "groups": []string{"eng"},
				"iat": time.Now().Unix(), "exp": exp.Unix()})
			const uri = "note://notes/eng-plan"
			var body, session, version string
			if mode.name == "stateless" {
				version = mcpsdk.ListenProtocolVersion
				body = `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"_meta":{` +
					`"io.modelcontextprotocol/protocolVersion":"` + version + `","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},` +
					`"io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"resourceSubscriptions":["` + uri + `"]}}}`
			} else {
				version = "2025-11-25"
				resp, b := postMCP(t, s.addr, token)
				if session = resp.Header.Get("Mcp-Session-Id"); resp.StatusCode != 200 || session == "" {
					t.Fatalf("initialize: %d %s", resp.StatusCode, b)
				}
				sseMessages(t, s.addr, token, session, version, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
				body = `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["` + uri + `"]}}}`
			}
			msgs := sseMessages(t, s.addr, token, session, version, body)
			next := func(what string) string {
				t.Helper()
				select {
				case m, ok := <-msgs:
					if !ok {
						t.Fatalf("the stream ended before %s", what)
					}
					return m
				case <-time.After(time.Until(exp) + 10*time.Second):
					t.Fatalf("no %s within 10 s of the token's expiry", what)
				}
				return ""
			}
			if m := next("acknowledgement"); !strings.Contains(m, "notifications/subscriptions/acknowledged") {
				t.Fatalf("listen: %s, want the acknowledgement", m)
			}
			answer := next("answer")
			at := time.Now()
			var m struct {
				ID    int
				Error *struct {
					Code    int64
					Message string
				}
			}
			if err := json.Unmarshal([]byte(answer), &m); err != nil || m.ID != 7 || m.Error == nil || m.Error.Code != mcpsdk.TokenExpiredCode {
				t.Fatalf("after the acknowledgement: %s, want the answer to 7 with error %d", answer, mcpsdk.TokenExpiredCode)
			}
			if at.Before(exp) {
				t.Fatalf("answered %v before the token expired", exp.Sub(at))
			}
			if n := s.metric(t, "mcpres_listen_streams_ended_total", `reason="expired"`); n != 1 {
				t.Fatalf("mcpres_listen_streams_ended_total{reason=expired} = %v, want 1", n)
			}
			t.Logf("%s: listen answered %v after its token expired", mode.name, at.Sub(exp).Round(time.Millisecond))
		})
	}
}

// sseMessages POSTs one message to /mcp and returns the JSON-RPC messages
// of its response as they arrive (the channel closes with the response).
func sseMessages(t *testing.T, addr, token, session, version, body string) <-chan string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("MCP-Protocol-Version", version)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if version >= mcpsdk.ListenProtocolVersion {
		var m struct{ Method string }
		_ = json.Unmarshal([]byte(body), &m)
		req.Header.Set("Mcp-Method", m.Method)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	out := make(chan string, 16)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.TrimSpace(d) != "" {
				out <- d
			} else if strings.HasPrefix(sc.Text(), "{") {
				out <- sc.Text()
			}
		}
	}()
	return out
}
