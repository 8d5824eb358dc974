package oauth

import (
	"context"
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

// The metadata is served at the path-suffixed well-known URL (RFC 9728
// section 3.1), naming the resource; the root well-known URL, whose
// document would have to name the server's root as its resource (section
// 3.3), answers 404 for a resource with a path, and serves the document
// for a resource without one.
// getAuth GETs url with the Authorization header authz, if not empty.
func getAuth(t *testing.T, url, authz string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// RequireStaticToken's 401 carries a challenge, with error="invalid_token"
// only when a bearer token was given; a known token reaches the handler.
func TestRequireStaticTokenChallenges(t *testing.T) {
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		if tok == "good" {
			return &auth.TokenInfo{UserID: "alice"}, nil
		}
		return nil, auth.ErrInvalidToken
	}
	srv := httptest.NewServer(RequireStaticToken(verify, "mcp-resources")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, auth.TokenInfoFromContext(r.Context()).UserID)
	})))
	t.Cleanup(srv.Close)
	for _, tc := range []struct{ authz, challenge string }{
		{"", `Bearer realm="mcp-resources"`},
		{"Basic YWxpY2U6cGFzcw==", `Bearer realm="mcp-resources"`},
		{"Bearer ", `Bearer realm="mcp-resources"`},
		{"Bearer bad", `Bearer error="invalid_token", realm="mcp-resources"`},
	} {
		resp, _ := getAuth(t, srv.URL, tc.authz)
		if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != tc.challenge {
			t.Errorf("%q: HTTP %d, WWW-Authenticate %q; want 401, %q", tc.authz, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), tc.challenge)
		}
	}
	if resp, body := getAuth(t, srv.URL, "Bearer good"); resp.StatusCode != 200 || body != "alice" {
		t.Fatalf("a good token: HTTP %d %q", resp.StatusCode, body)
	}
}

func TestMetadataAtTheResourcesWellKnownPath(t *testing.T) {
	is := newIssuer(t)
	srv, _ := newTestResourceServer(t, is)
	resp, body := get(t, srv.URL+WellKnownPath+"/mcp", "")
	if resp.StatusCode != 200 {
		t.Fatalf("%s/mcp: HTTP %d", WellKnownPath, resp.StatusCode)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	if m["resource"] != testResource || m["authorization_servers"].([]any)[0] != is.url() ||
		m["scopes_supported"].([]any)[0] != "resources:read" || m["bearer_methods_supported"].([]any)[0] != "header" {
		t.Fatalf("metadata %s", body)
	}
	if resp, body := get(t, srv.URL+WellKnownPath, ""); resp.StatusCode != 404 {
		t.Fatalf("%s: HTTP %d %s; want 404, not a document naming %s", WellKnownPath, resp.StatusCode, body, testResource)
	}

	rs, err := NewResourceServer(newTestVerifier(t, is, nil).Verify, &ResourceOptions{Resource: "https://mcp.example.test",
		AuthorizationServers: []string{is.url()}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	rs.Register(mux)
	root := httptest.NewServer(mux)
	t.Cleanup(root.Close)
	resp, body = get(t, root.URL+WellKnownPath, "")
	if resp.StatusCode != 200 || !strings.Contains(body, `"resource":"https://mcp.example.test"`) || rs.MetadataURL() != "https://mcp.example.test"+WellKnownPath {
		t.Fatalf("a resource without a path: HTTP %d %s, metadata URL %s", resp.StatusCode, body, rs.MetadataURL())
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
		{"Basic credentials", "Basic YWxpY2U6cGFzcw==", 401, "Bearer " + meta},
		{"a DPoP token", "DPoP abc.def.ghi", 401, "Bearer " + meta},
		{"an empty Bearer", "Bearer ", 401, "Bearer " + meta},
		{"Bearer with two tokens", "Bearer a b", 401, "Bearer " + meta},
		{"invalid token", "Bearer garbage", 401, `Bearer error="invalid_token", ` + meta},
		{"expired token", "Bearer " + is.token(t, expired), 401, `Bearer error="invalid_token", ` + meta},
		{"missing scope", "bearer " + is.token(t, noScope), 403, `Bearer error="insufficient_scope", ` + meta},
	} {
		resp, body := getAuth(t, srv.URL+"/mcp", tc.token)
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
