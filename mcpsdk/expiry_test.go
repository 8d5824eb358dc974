package mcpsdk

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/stores/memory"
)

// expiringToken returns a token of alice's that the test verifier takes
// to expire at exp.
func expiringToken(exp time.Time) string { return "exp-" + strconv.FormatInt(exp.UnixNano(), 10) }

// expiryVerifier is a bearer-token verifier whose tokens say when they
// expire (expiringToken): a short-lived OAuth token without an issuer.
func expiryVerifier(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	n, err := strconv.ParseInt(strings.TrimPrefix(token, "exp-"), 10, 64)
	if err != nil || !strings.HasPrefix(token, "exp-") {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: "alice", Expiration: time.Unix(0, n)}, nil
}

// expiryServer serves a's server behind bearer-token checks with the
// test verifier, stateless or stateful.
func expiryServer(t *testing.T, s *mcp.Server, a *Adapter, stateless bool) string {
	t.Helper()
	h := a.HTTPHandler(auth.RequireBearerToken(expiryVerifier, nil)(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: stateless})))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// Issue 46, defect 4: 12 s after a token expired, its open
// subscriptions/listen stream still delivered every change. At the
// token's expiry the stream ends, answered with TokenExpiredCode, on
// stateless and stateful HTTP; the answer comes no earlier than the
// expiry, and nothing follows it.
func TestAListenStreamEndsAnsweredWhenItsTokenExpires(t *testing.T) {
	for _, stateless := range []bool{true, false} {
		t.Run(map[bool]string{true: "stateless", false: "stateful"}[stateless], func(t *testing.T) {
			st, res := liveStore(t)
			s, a := listenAdapter(t, st, res, Options{ListenOnly: stateless})
			url := expiryServer(t, s, a, stateless)
			exp := time.Now().Add(time.Second)
			token := expiringToken(exp)
			var l *sseStream
			if stateless {
				l = bearerPost(t, context.Background(), url, token, "", ListenProtocolVersion, statelessListenBody(7, liveDoc("a")))
			} else {
				sid := openStatefulWith(t, url, token)
				l = bearerPost(t, context.Background(), url, token, sid, "2025-11-25", listenBody(7, liveDoc("a")))
			}
			if m := l.next(t); !strings.Contains(string(m), ackMethod) {
				t.Fatalf("listen: %s, want the acknowledgement", m)
			}
			waitSubscribed(t, a.Subscriptions(), 1)
			answer := l.answerTo(t, "7") // within 10 s of the acknowledgement
			at := time.Now()
			var m struct {
				Error *struct {
					Code    int64
					Message string
				}
			}
			if err := json.Unmarshal(answer, &m); err != nil || m.Error == nil || m.Error.Code != TokenExpiredCode || m.Error.Message != TokenExpiredMessage {
				t.Fatalf("the listen was answered %s, want error %d %q", answer, TokenExpiredCode, TokenExpiredMessage)
			}
			if at.Before(exp) {
				t.Fatalf("answered %v before the token expired", exp.Sub(at))
			}
			waitSubscribed(t, a.Subscriptions(), 0)
			if ls := a.Listens(); ls.Expired != 1 || ls.Open != 0 {
				t.Fatalf("listen stats %+v, want one expired and none open", ls)
			}
			// A change after the expiry reaches no one.
			before := settled(t, a.Subscriptions()).Notified
			st.Put("a", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("v2")})
			if n := settled(t, a.Subscriptions()).Notified; n != before {
				t.Fatalf("%d notifications after the token expired, want none", n-before)
			}
			if m, ok := <-l.msgs; ok {
				t.Fatalf("the stream went on after its answer: %s", m)
			}
		})
	}
}

// Issue 46, defect 4: stateful subscriptions kept the claims of a token
// that had expired and went on notifying. At the expiry of the token that
// made it, a resources/subscribe subscription ends and notifies no more;
// the session goes on, and subscribing again with a fresh token works.
func TestSessionSubscriptionsEndWhenTheirTokenExpires(t *testing.T) {
	st, res := liveStore(t)
	s, a := listenAdapter(t, st, res, Options{})
	subs := a.Subscriptions()
	url := expiryServer(t, s, a, false)
	exp := time.Now().Add(time.Second)
	short := expiringToken(exp)
	sid := openStatefulWith(t, url, short)
	subscribe := fmt.Sprintf(`{"jsonrpc":"2.0","id":%%d,"method":"resources/subscribe","params":{"uri":%q}}`, liveDoc("a"))
	if r := bearerPost(t, context.Background(), url, short, sid, "2025-11-25", fmt.Sprintf(subscribe, 2)).answerTo(t, "2"); !strings.Contains(string(r), `"result"`) {
		t.Fatalf("subscribe: %s", r)
	}
	waitSubscribed(t, subs, 1)
	waitFor(t, func() bool { return subs.Hub().Stats().Subscriptions == 0 })
	if time.Now().Before(exp) {
		t.Fatal("the subscription ended before its token expired")
	}
	if n := subs.ExpiredSubscriptions(); n != 1 {
		t.Fatalf("%d subscriptions expired, want 1", n)
	}
	before := settled(t, subs).Notified
	st.Put("a", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("v2")})
	if n := settled(t, subs).Notified; n != before {
		t.Fatalf("%d notifications after the token expired, want none", n-before)
	}
	// The expired token is refused; a fresh one subscribes again, on the
	// same session.
	if r := bearerPost(t, context.Background(), url, short, sid, "2025-11-25", fmt.Sprintf(subscribe, 4)); r.resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a request with the expired token: HTTP %d, want 401", r.resp.StatusCode)
	}
	fresh := expiringToken(time.Now().Add(time.Hour))
	if r := bearerPost(t, context.Background(), url, fresh, sid, "2025-11-25", fmt.Sprintf(subscribe, 3)).answerTo(t, "3"); !strings.Contains(string(r), `"result"`) {
		t.Fatalf("subscribe with a fresh token: %s", r)
	}
	waitSubscribed(t, subs, 1)
	before = settled(t, subs).Notified
	st.Put("a", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("v3")})
	if n := settled(t, subs).Notified; n != before+1 {
		t.Fatalf("%d notifications to the fresh subscription, want 1", n-before)
	}
}

// openStatefulWith is openStateful with a bearer token.
func openStatefulWith(t *testing.T, url, token string) string {
	t.Helper()
	init := bearerPost(t, context.Background(), url, token, "", "",
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	init.answerTo(t, "0")
	sid := init.resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("no session id")
	}
	bearerPost(t, context.Background(), url, token, sid, "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid
}
