package integration

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/integration/harness"
)

// introspectionEndpoint is an RFC 7662 endpoint of the test's own, over
// httptest: it answers the tokens it knows active, every other one
// inactive, to a caller with the client id and secret it was given
// (form-encoded Basic credentials, RFC 6749 section 2.3.1), and counts the
// requests.
type introspectionEndpoint struct {
	srv        *httptest.Server
	id, secret string
	mu         sync.Mutex
	answers    map[string]map[string]any
	calls      atomic.Int64
}

func newIntrospectionEndpoint(t testing.TB, id, secret string) *introspectionEndpoint {
	t.Helper()
	ie := &introspectionEndpoint{id: id, secret: secret, answers: map[string]map[string]any{}}
	ie.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ie.calls.Add(1)
		u, p, ok := r.BasicAuth()
		if !ok || r.Method != http.MethodPost || u != formEscape(ie.id) || p != formEscape(ie.secret) {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		if err := r.ParseForm(); err != nil {
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

// formEscape is what RFC 6749 section 2.3.1 makes of a client id or
// secret in Basic credentials: form-encoded.
func formEscape(s string) string {
	return strings.NewReplacer("%", "%25", " ", "+", ":", "%3A", "/", "%2F", "+", "%2B").Replace(s)
}

// answer makes token active for sub, with aud and the claims of extra.
func (ie *introspectionEndpoint) answer(token, issuer, sub string, aud any, extra map[string]any) {
	a := map[string]any{"active": true, "sub": sub, "aud": aud, "iss": issuer, "exp": time.Now().Add(10 * time.Minute).Unix(),
		"iat": time.Now().Unix(), "scope": oauthScope, "client_id": "app", "token_type": "Bearer", "token_use": "access_token"}
	for k, v := range extra {
		a[k] = v
	}
	ie.mu.Lock()
	ie.answers[token] = a
	ie.mu.Unlock()
}

// TestOAuthOpaqueTokensThroughTheFilesIntrospection configures the server
// by the resources file alone: its oauth section names an introspection
// endpoint (the client secret from the environment), an audience that
// replaces the resource URI, and a claim path. check asks the endpoint;
// opaque tokens that it answers active read exactly the notes their
// ext.groups allow under the policy of docs/identity.md; a token for the
// resource URI only (not the audience), an unknown one and a JWT-looking
// one are refused before storage; answers are cached per token.
func TestOAuthOpaqueTokensThroughTheFilesIntrospection(t *testing.T) {
	harness.Postgres(t)
	const clientID, secret = "mcp resources", "s3cr:t/+ " // form-encoded on the wire
	ie := newIntrospectionEndpoint(t, clientID, secret)
	t.Setenv("TEST_INTROSPECTION_SECRET", secret)
	const issuer = "https://id.example.test/"
	resource := "https://mcp-" + randomHex(t, 4) + ".example.test/mcp"
	const audience = "api://mcp-resources"
	config := providerRig(t, "ext.groups")
	base, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	section := "oauth:\n  issuer: " + issuer + "\n  resource: " + resource + "\n  audiences: [" + audience + "]\n" +
		"  scopes: [" + oauthScope + "]\n  claims: [ext.groups]\n  introspection:\n    url: " + ie.srv.URL + "/introspect\n" +
		"    client_id: " + clientID + "\n    client_secret: ${TEST_INTROSPECTION_SECRET}\n"
	if err := os.WriteFile(config, append(base, section...), 0o600); err != nil {
		t.Fatal(err)
	}
	alice, bob, wrongAud := "opaque-"+randomHex(t, 16), "opaque-"+randomHex(t, 16), "opaque-"+randomHex(t, 16)
	ie.answer(alice, issuer, "alice", []string{audience}, map[string]any{"ext": map[string]any{"groups": []string{"eng"}}})
	ie.answer(bob, issuer, "bob", audience, map[string]any{"ext": map[string]any{"groups": "ops"}})
	ie.answer(wrongAud, issuer, "mallory", resource, map[string]any{"ext": map[string]any{"groups": []string{"eng", "ops"}}})

	if out := mustRun(t, "", "check", "--config", config); !strings.Contains(out, "oauth: issuer "+issuer+" (introspection at "+ie.srv.URL+"/introspect)") {
		t.Fatalf("check printed:\n%s", out)
	}
	s := startServer(t, "--config", config)
	if code, body := s.get(t, "/readyz"); code != 200 {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	for _, c := range []struct {
		who, token string
		reads      []string
	}{
		{"alice (eng)", alice, []string{"eng-plan"}},
		{"bob (ops, a string)", bob, []string{"ops-runbook"}},
	} {
		cs := s.connect(t, c.token)
		for _, id := range []string{"eng-plan", "ops-runbook"} {
			text, err := readText(t, cs, "note://notes/"+id)
			if want := strings.Contains(strings.Join(c.reads, " "), id); want != (err == nil && strings.HasPrefix(text, "the ")) {
				t.Errorf("%s reads %s: %q, %v; want read %v", c.who, id, text, err, want)
			}
		}
		cs.Close()
	}
	calls := ie.calls.Load()
	cs := s.connect(t, alice)
	for range 3 {
		if text, err := readText(t, cs, "note://notes/eng-plan"); err != nil || text != "the engineering plan" {
			t.Fatalf("alice again: %q, %v", text, err)
		}
	}
	cs.Close()
	if after := ie.calls.Load(); after != calls {
		t.Errorf("introspections %d -> %d for a cached token, want none", calls, after)
	}
	storeCalls := s.metric(t, "mcpres_store_calls_total")
	for _, c := range []struct{ name, token, reason string }{
		{"a token for the resource URI, not the audience", wrongAud, "audience"},
		{"a token the endpoint does not know", "opaque-" + randomHex(t, 16), "inactive"},
	} {
		resp, _ := postMCP(t, s.addr, c.token)
		if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Errorf("%s: HTTP %d %q, want 401 invalid_token", c.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
		if n := s.metric(t, "mcpres_oauth_refused_total", `reason="`+c.reason+`"`); n != 1 {
			t.Errorf("%s: %s refusals %v, want 1", c.name, c.reason, n)
		}
	}
	if sc := s.metric(t, "mcpres_store_calls_total"); sc != storeCalls {
		t.Errorf("a refused token reached storage")
	}
	if strings.Contains(s.stderr.String(), secret) {
		t.Errorf("the server logged the client secret")
	}
}
