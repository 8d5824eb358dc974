package httpguard

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// echo answers with the body it got, and a session id when asked to.
func echo(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	if id := r.URL.Query().Get("open"); id != "" {
		w.Header().Set(SessionHeader, id)
	}
	w.Write(b)
}

func do(h http.Handler, method, target, body string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestBatchesOversizedBodiesAndForeignOriginsAreRefused(t *testing.T) {
	h := Handler(http.HandlerFunc(echo), Options{MaxBodyBytes: 64, AllowedOrigins: []string{"https://app.example/"}})
	for _, c := range []struct {
		name, body string
		hdr        []string
		code       int
		msg        string
	}{
		{"a message", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil, 200, ""},
		{"a batch", ` [{"jsonrpc":"2.0","id":1,"method":"ping"}]`, nil, 400, BatchMessage},
		{"an oversized body", strings.Repeat("x", 65), nil, 413, BodyTooLargeMessage},
		{"a foreign origin", `{}`, []string{"Origin", "http://evil.example"}, 403, OriginMessage},
		{"a loopback origin", `{}`, []string{"Origin", "http://[::1]:9"}, 200, ""},
		{"localhost", `{}`, []string{"Origin", "http://localhost"}, 200, ""},
		{"a listed origin", `{}`, []string{"Origin", "https://APP.example"}, 200, ""},
		{"a look-alike", `{}`, []string{"Origin", "https://app.example.evil"}, 403, OriginMessage},
		{"a non-web scheme", `{}`, []string{"Origin", "file://localhost"}, 403, OriginMessage},
	} {
		w := do(h, http.MethodPost, "/mcp", c.body, c.hdr...)
		if w.Code != c.code || (c.msg != "" && !strings.Contains(w.Body.String(), c.msg)) {
			t.Errorf("%s: %d %s, want %d %q", c.name, w.Code, w.Body.String(), c.code, c.msg)
		}
		if c.code == 200 && w.Body.String() != c.body {
			t.Errorf("%s: the handler got %q", c.name, w.Body.String())
		}
	}
}

func TestSessionCapsCountOpenSessionsPerPrincipalAndServer(t *testing.T) {
	var mu sync.Mutex
	open := map[string]bool{}
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.URL.Query().Get("open"); id != "" {
			mu.Lock()
			open[id] = true
			mu.Unlock()
		}
		echo(w, r)
	}), Options{MaxSessions: 3, MaxSessionsPerPrincipal: 2,
		Principal: func(r *http.Request) string { return r.Header.Get("P") },
		Open: func() map[string]bool {
			mu.Lock()
			defer mu.Unlock()
			m := map[string]bool{}
			for k, v := range open {
				m[k] = v
			}
			return m
		}})
	openAs := func(p, id string) int { return do(h, http.MethodPost, "/mcp?open="+id, "{}", "P", p).Code }
	for _, id := range []string{"a1", "a2"} {
		if c := openAs("alice", id); c != 200 {
			t.Fatalf("alice's session %s: %d", id, c)
		}
	}
	if c := openAs("alice", "a3"); c != http.StatusTooManyRequests {
		t.Fatalf("alice's third session: %d, want 429", c)
	}
	if c := openAs("bob", "b1"); c != 200 {
		t.Fatalf("bob's session: %d", c)
	}
	if c := openAs("carol", "c1"); c != http.StatusTooManyRequests {
		t.Fatalf("the server's fourth session: %d, want 429", c)
	}
	// A request in a session is not counted again.
	if c := do(h, http.MethodPost, "/mcp", "{}", "P", "alice", SessionHeader, "a1").Code; c != 200 {
		t.Fatalf("a request in alice's session: %d", c)
	}
	mu.Lock()
	delete(open, "a1") // expired
	mu.Unlock()
	if c := openAs("alice", "a4"); c != 200 {
		t.Fatalf("alice after one of her sessions expired: %d", c)
	}
	// The server counts three open sessions now (a2, b1, a4): full, until
	// one of them ends.
	if c := openAs("carol", "c2"); c != http.StatusTooManyRequests {
		t.Fatalf("the server's fourth session after the expiry: %d, want 429", c)
	}
	mu.Lock()
	delete(open, "b1")
	mu.Unlock()
	if c := openAs("carol", "c3"); c != 200 {
		t.Fatalf("carol once bob's session expired: %d", c)
	}
}

func FuzzOriginAllowed(f *testing.F) {
	for _, s := range []string{"http://localhost:1", "https://app.example", "http://127.0.0.2", "http://[::1]", "null", "http://evil.example", "http://localhost.evil", "http://a@localhost"} {
		f.Add(s)
	}
	g := Handler(http.NotFoundHandler(), Options{AllowedOrigins: []string{"https://app.example"}}).(*guard)
	f.Fuzz(func(t *testing.T, origin string) {
		if !g.originAllowed(origin) {
			return
		}
		if strings.EqualFold(strings.TrimRight(origin, "/"), "https://app.example") {
			return
		}
		u, err := url.Parse(origin)
		if err != nil || !IsLoopbackHost(u.Hostname()) || (u.Scheme != "http" && u.Scheme != "https") {
			t.Fatalf("%q allowed: neither listed nor a loopback web origin", origin)
		}
	})
}

// Issue 39, defects 5 to 7: a body with bytes after its message, an id the
// server would echo as another, and two Authorization headers are refused
// (the SDK served the first value, answered another id, and the first
// header decided).
func TestTrailingBytesInexactIDsAndTwoAuthorizationsAreRefused(t *testing.T) {
	h := OneAuthorization(Handler(http.HandlerFunc(echo), Options{}))
	for _, c := range []struct {
		name, body string
		hdr        []string
		code       int
		msg        string
	}{
		{"one message", `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n", nil, 200, ""},
		{"trailing bytes", `{"jsonrpc":"2.0","id":1,"method":"ping"} x`, nil, 400, ParseErrorMessage},
		{"two messages", `{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}`, nil, 400, ParseErrorMessage},
		{"id 2^64", `{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}`, nil, 400, "the id must be"},
		{"id -0.5", `{"jsonrpc":"2.0","id":-0.5,"method":"ping"}`, nil, 400, "the id must be"},
		{"one Authorization", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, []string{"Authorization", "Bearer a"}, 200, ""},
	} {
		w := do(h, http.MethodPost, "/mcp", c.body, c.hdr...)
		if w.Code != c.code || !strings.Contains(w.Body.String(), c.msg) {
			t.Errorf("%s: %d %s, want %d %q", c.name, w.Code, w.Body.String(), c.code, c.msg)
		}
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	r.Header.Add("Authorization", "Bearer a")
	r.Header.Add("Authorization", "Bearer b")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), TwoAuthorizationsMessage) {
		t.Errorf("two Authorization headers: %d %s, want 400 %q", w.Code, w.Body.String(), TwoAuthorizationsMessage)
	}
}
