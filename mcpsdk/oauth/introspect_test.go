package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// introspectionEndpoint is an RFC 7662 endpoint that knows the tokens of
// answers, authenticates its caller, and counts the calls.
type introspectionEndpoint struct {
	srv     *httptest.Server
	mu      sync.Mutex
	answers map[string]map[string]any // by token; others are active: false
	raw     func(w http.ResponseWriter) bool
	calls   atomic.Int64
}

const (
	testClientID     = "mcp resources" // a space: Basic credentials are form-encoded
	testClientSecret = "s3cr:t/+"
)

func newIntrospectionEndpoint(t *testing.T) *introspectionEndpoint {
	ie := &introspectionEndpoint{answers: map[string]map[string]any{}}
	ie.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ie.calls.Add(1)
		id, secret, ok := r.BasicAuth()
		if !ok || id != "mcp+resources" || secret != "s3cr%3At%2F%2B" || r.Method != http.MethodPost {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		ie.mu.Lock()
		raw := ie.raw
		ie.mu.Unlock()
		if raw != nil && raw(w) {
			return
		}
		if err := r.ParseForm(); err != nil || r.PostForm.Get("token_type_hint") != "access_token" {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		ie.mu.Lock()
		a, ok := ie.answers[r.PostForm.Get("token")]
		ie.mu.Unlock()
		if !ok {
			a = map[string]any{"active": false}
		}
		json.NewEncoder(w).Encode(a)
	}))
	t.Cleanup(ie.srv.Close)
	return ie
}

const testIssuerURL = "https://id.example.test/"

// answer registers token as active for sub with claims, expiring at exp.
func (ie *introspectionEndpoint) answer(token, sub string, exp time.Time, extra map[string]any) {
	a := map[string]any{"active": true, "sub": sub, "aud": []string{testResource}, "iss": testIssuerURL,
		"exp": exp.Unix(), "iat": exp.Add(-time.Hour).Unix(), "scope": "resources:read openid",
		"client_id": "app", "token_type": "Bearer", "token_use": "access_token"}
	for k, v := range extra {
		a[k] = v
	}
	ie.mu.Lock()
	ie.answers[token] = a
	ie.mu.Unlock()
}

func newIntrospectingVerifier(t *testing.T, ie *introspectionEndpoint, mod func(*Options)) *Verifier {
	t.Helper()
	o := &Options{Issuer: testIssuerURL, Resource: testResource, Claims: []string{"ext.groups", "tenant"},
		Introspection: &Introspection{URL: ie.srv.URL + "/introspect", ClientID: testClientID, ClientSecret: testClientSecret}}
	if mod != nil {
		mod(o)
	}
	v, err := NewVerifier(o)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// An opaque token the endpoint answers active for becomes its TokenInfo:
// the principal from sub, scopes from scope, the passed claims (a path into
// Hydra's ext); the client authenticates with form-encoded Basic
// credentials.
func TestIntrospectionAcceptsAnActiveToken(t *testing.T) {
	ie := newIntrospectionEndpoint(t)
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	ie.answer("ory_at_opaque.sig", "alice", exp, map[string]any{"ext": map[string]any{"groups": []string{"eng"}}})
	v := newIntrospectingVerifier(t, ie, nil)
	ti, err := v.Verify(context.Background(), "ory_at_opaque.sig", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ti.UserID != "alice" || strings.Join(ti.Scopes, " ") != "resources:read openid" || !ti.Expiration.Equal(exp) {
		t.Fatalf("TokenInfo %+v", ti)
	}
	if got := string(ti.Extra[ClaimsKey].(json.RawMessage)); got != `{"ext.groups":["eng"]}` {
		t.Fatalf("passed claims %s", got)
	}
	if !v.Introspects() || v.KeyStats().Fetches != 1 {
		t.Fatalf("Introspects %v, stats %+v", v.Introspects(), v.KeyStats())
	}
}

// Every answer but an active access token for this resource is a refusal,
// and every failure of the endpoint fails closed (not an invalid token: the
// middleware answers 500).
func TestIntrospectionRefusesAndFailsClosed(t *testing.T) {
	ie := newIntrospectionEndpoint(t)
	v := newIntrospectingVerifier(t, ie, nil)
	exp := time.Now().Add(time.Hour)
	for tok, extra := range map[string]map[string]any{
		"refresh": {"token_use": "refresh_token"},
		"other":   {"aud": "https://other.example.test/mcp"},
		"noaud":   {"aud": nil},
		"iss":     {"iss": "https://evil.example.test/"},
		"expired": {"exp": time.Now().Add(-time.Hour).Unix()},
		"noexp":   {"exp": nil},
		"future":  {"nbf": time.Now().Add(time.Hour).Unix()},
		"badsub":  {"sub": "ali\u202Ece"},
		"nul":     {"tenant": "ac\x00me"},
	} {
		ie.answer(tok, "alice", exp, extra)
		for k, val := range extra {
			if val == nil {
				ie.mu.Lock()
				delete(ie.answers[tok], k)
				ie.mu.Unlock()
			}
		}
	}
	for tok, want := range map[string]string{"unknown": ReasonInactive, "refresh": ReasonInactive, "other": ReasonAudience,
		"noaud": ReasonAudience, "iss": ReasonIssuer, "expired": ReasonExpired, "noexp": ReasonExpired, "future": ReasonNotYet,
		"badsub": ReasonPrincipal, "nul": ReasonClaims} {
		_, err := v.Verify(context.Background(), tok, nil)
		if reason(err) != want || !errors.Is(err, auth.ErrInvalidToken) {
			t.Errorf("%s: %v (reason %q), want %s", tok, err, reason(err), want)
		}
	}
	ie.answer("good", "alice", exp, nil)
	for name, raw := range map[string]func(w http.ResponseWriter) bool{
		"HTTP 500":         func(w http.ResponseWriter) bool { http.Error(w, "down", 500); return true },
		"not JSON":         func(w http.ResponseWriter) bool { io.WriteString(w, "<html>"); return true },
		"no active member": func(w http.ResponseWriter) bool { io.WriteString(w, `{"sub":"alice"}`); return true },
		"active a string":  func(w http.ResponseWriter) bool { io.WriteString(w, `{"active":"true","sub":"alice"}`); return true },
		"a JSON array":     func(w http.ResponseWriter) bool { io.WriteString(w, `[{"active":true}]`); return true },
		"over 64 KiB": func(w http.ResponseWriter) bool {
			io.WriteString(w, `{"active":true,"x":"`+strings.Repeat("a", 1<<20)+`"}`)
			return true
		},
		"a declared 1 GiB":  func(w http.ResponseWriter) bool { w.Header().Set("Content-Length", fmt.Sprint(1<<30)); return true },
		"wrong credentials": nil, // below
	} {
		if raw == nil {
			continue
		}
		ie.mu.Lock()
		ie.raw = raw
		ie.mu.Unlock()
		_, err := v.Verify(context.Background(), "good", nil)
		if err == nil || errors.Is(err, auth.ErrInvalidToken) || !errors.Is(err, errIntrospection) {
			t.Errorf("%s: %v, want a failure that is not an invalid token", name, err)
		}
		if strings.Contains(err.Error(), ie.srv.URL) {
			t.Errorf("%s: client-facing text %q names the endpoint", name, err)
		}
	}
	ie.mu.Lock()
	ie.raw = nil
	ie.mu.Unlock()
	wrong := newIntrospectingVerifier(t, ie, func(o *Options) { o.Introspection.ClientSecret = "wrong" })
	if _, err := wrong.Verify(context.Background(), "good", nil); err == nil || errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("wrong client credentials: %v, want a failure that is not an invalid token", err)
	}
	if _, err := v.Verify(context.Background(), "good", nil); err != nil {
		t.Fatalf("the endpoint back: %v", err)
	}
	for _, bad := range []*Introspection{{URL: "ftp://x", ClientID: "a", ClientSecret: "b"}, {URL: ie.srv.URL}, {URL: ie.srv.URL, ClientID: "a"}} {
		if _, err := NewVerifier(&Options{Issuer: testIssuerURL, Resource: testResource, Introspection: bad}); err == nil {
			t.Errorf("introspection %+v accepted", bad)
		}
	}
}

// An introspection answer is cached for the same token at most until its
// exp (and CacheTTL), never for a refused token; the cache is bounded.
func TestIntrospectionIsCachedUntilExp(t *testing.T) {
	ie := newIntrospectionEndpoint(t)
	t0 := time.Now()
	now := t0
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	at := func(d time.Duration) { mu.Lock(); now = t0.Add(d); mu.Unlock() }
	v := newIntrospectingVerifier(t, ie, func(o *Options) { o.Now = clock; o.CacheTTL = time.Hour; o.ClockSkew = time.Minute })
	ie.answer("short", "alice", t0.Add(10*time.Second), nil)
	for range 5 {
		if _, err := v.Verify(context.Background(), "short", nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := ie.calls.Load(); n != 1 {
		t.Fatalf("%d calls for 5 verifications of one token, want 1", n)
	}
	at(11 * time.Second) // past exp, within the skew: asked again, not cached
	_, _ = v.Verify(context.Background(), "short", nil)
	if n := ie.calls.Load(); n != 2 {
		t.Fatalf("%d calls after exp, want 2: the answer was cached past exp", n)
	}
	for range 3 {
		_, _ = v.Verify(context.Background(), "unknown", nil)
	}
	if n := ie.calls.Load(); n != 5 {
		t.Fatalf("%d calls, want 5: a refused token is asked about every time", n)
	}
}

// The verified-token cache is bounded in entries and in bytes.
func TestTokenCacheIsBounded(t *testing.T) {
	c := &tokenCache{ttl: time.Hour, m: map[[32]byte]cached{}}
	now := time.Now()
	big := json.RawMessage(`{"x":"` + strings.Repeat("a", MaxClaimsBytes-16) + `"}`)
	for i := range 3 * maxCached {
		c.put(sha256.Sum256([]byte(fmt.Sprint(i))), 0, now.Add(time.Hour), now,
			&auth.TokenInfo{UserID: strings.Repeat("u", 100), Extra: map[string]any{ClaimsKey: big}})
		if len(c.m) > maxCached || c.bytes > maxCacheBytes {
			t.Fatalf("after %d puts: %d entries, %d bytes; bounds %d, %d", i+1, len(c.m), c.bytes, maxCached, maxCacheBytes)
		}
	}
	total := 0
	for _, e := range c.m {
		total += e.size
	}
	if total != c.bytes || len(c.m) == 0 {
		t.Fatalf("bytes %d, sum of entries %d, %d entries", c.bytes, total, len(c.m))
	}
}

// Ready in introspection mode: the endpoint answers (active: false for
// the probe is an answer), or it does not.
func TestIntrospectionReadiness(t *testing.T) {
	ie := newIntrospectionEndpoint(t)
	v := newIntrospectingVerifier(t, ie, nil)
	if err := v.Ready(context.Background()); err != nil {
		t.Fatalf("the endpoint answers: %v", err)
	}
	ie.srv.Close()
	down := newIntrospectingVerifier(t, ie, nil)
	if err := down.Ready(context.Background()); err == nil {
		t.Fatal("ready with the endpoint down")
	}
}

// A caller that goes away during an introspection does not count as a
// failure of the endpoint, and does not make the verifier unready.
func TestIntrospectionCancelledByTheCallerKeepsReadiness(t *testing.T) {
	ie := newIntrospectionEndpoint(t)
	v := newIntrospectingVerifier(t, ie, nil)
	if err := v.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	ie.mu.Lock()
	ie.raw = func(w http.ResponseWriter) bool { <-release; return false }
	ie.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { _, err := v.Verify(ctx, "junk", nil); done <- err }()
	for ie.calls.Load() < 2 { // the probe, then this call
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled verification succeeded")
	}
	close(release)
	if st := v.KeyStats(); st.Failures != 0 || st.Err != nil {
		t.Fatalf("KeyStats %+v: the caller's cancellation counted as the endpoint's failure", st)
	}
	if err := v.Ready(context.Background()); err != nil {
		t.Fatalf("unready after a caller hung up: %v", err)
	}
}
