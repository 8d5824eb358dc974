package oauth

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

func newTestResourceServer(t *testing.T, is *issuer) (*httptest.Server, *int) {
	t.Helper()
	v := newTestVerifier(t, is, nil)
	rs, err := NewResourceServer(v.Verify, &ResourceOptions{Resource: testResource,
		AuthorizationServers: []string{is.url()}, Scopes: []string{"resources:read"}})
	if err != nil {
		t.Fatal(err)
	}
	reached := new(int)
	mux := http.NewServeMux()
	rs.Register(mux)
	mux.Handle("/mcp", rs.Protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*reached++
		io.WriteString(w, auth.TokenInfoFromContext(r.Context()).UserID)
	})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, reached
}

func get(t *testing.T, url, token string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestMetadataAtBothWellKnownPaths(t *testing.T) {
	is := newIssuer(t)
	srv, _ := newTestResourceServer(t, is)
	for _, p := range []string{WellKnownPath, WellKnownPath + "/mcp"} {
		resp, body := get(t, srv.URL+p, "")
		if resp.StatusCode != 200 {
			t.Fatalf("%s: HTTP %d", p, resp.StatusCode)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatal(err)
		}
		if m["resource"] != testResource || m["authorization_servers"].([]any)[0] != is.url() ||
			m["scopes_supported"].([]any)[0] != "resources:read" || m["bearer_methods_supported"].([]any)[0] != "header" {
			t.Fatalf("%s: metadata %s", p, body)
		}
	}
}

// The challenges a client discovers the authorization server from: a 401
// for a missing or invalid token (error="invalid_token" when one was
// given), a 403 with error="insufficient_scope" for a missing scope; none
// of them reaches the protected handler.
func TestChallenges(t *testing.T) {
	is := newIssuer(t)
	srv, reached := newTestResourceServer(t, is)
	meta := `resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp", scope="resources:read"`
	noScope := is.claims("alice")
	noScope["scp"] = []string{"other"}
	expired := is.claims("alice")
	expired["exp"] = 1
	for _, tc := range []struct {
		name, token string
		code        int
		challenge   string
	}{
		{"no token", "", 401, "Bearer " + meta},
		{"invalid token", "garbage", 401, `Bearer error="invalid_token", ` + meta},
		{"expired token", is.token(t, expired), 401, `Bearer error="invalid_token", ` + meta},
		{"missing scope", is.token(t, noScope), 403, `Bearer error="insufficient_scope", ` + meta},
	} {
		resp, body := get(t, srv.URL+"/mcp", tc.token)
		if resp.StatusCode != tc.code || resp.Header.Get("WWW-Authenticate") != tc.challenge {
			t.Errorf("%s: HTTP %d, WWW-Authenticate %q; want %d, %q", tc.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), tc.code, tc.challenge)
		}
		if strings.Contains(body, "exp") || strings.Contains(body, is.srv.URL) {
			t.Errorf("%s: body %q says why", tc.name, body)
		}
	}
	if *reached != 0 {
		t.Fatalf("the protected handler was reached %d times by refused requests", *reached)
	}
	resp, body := get(t, srv.URL+"/mcp", is.token(t, is.claims("alice")))
	if resp.StatusCode != 200 || body != "alice" || *reached != 1 {
		t.Fatalf("a valid token: HTTP %d %q", resp.StatusCode, body)
	}
}

func TestNewResourceServerChecksItsOptions(t *testing.T) {
	verify := func() auth.TokenVerifier { return (&Verifier{}).Verify }()
	for name, o := range map[string]*ResourceOptions{
		"no resource":    {AuthorizationServers: []string{"https://id.example.test/"}},
		"relative":       {Resource: "/mcp", AuthorizationServers: []string{"https://id.example.test/"}},
		"fragment":       {Resource: "https://x.test/mcp#f", AuthorizationServers: []string{"https://id.example.test/"}},
		"no issuer":      {Resource: testResource},
		"quote in scope": {Resource: testResource, AuthorizationServers: []string{"https://id.example.test/"}, Scopes: []string{`a"b`}},
	} {
		if _, err := NewResourceServer(verify, o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A token expired within the clock skew passes the verifier and the SDK's
// own expiration check alike: the resource server gives the middleware
// the same tolerance.
func TestProtectAppliesTheSkewToExpiration(t *testing.T) {
	is := newIssuer(t)
	srv, reached := newTestResourceServer(t, is)
	c := is.claims("alice")
	c["exp"] = time.Now().Add(-10 * time.Second).Unix() // within DefaultClockSkew
	if resp, body := get(t, srv.URL+"/mcp", is.token(t, c)); resp.StatusCode != 200 || *reached != 1 {
		t.Fatalf("a token 10 s past exp, skew %s: HTTP %d %q", DefaultClockSkew, resp.StatusCode, body)
	}
}
