package integration

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"go.phpboyscout.uk/mcp/resources/integration/harness"
)

// idp is the Ory Hydra that scripts/services.sh started (MCPRES_OAUTH_*):
// its issuer, its admin API, and the key set it publishes beside its own
// keys, into which a test uploads a key to sign the tokens Hydra will not
// mint.
type idp struct {
	issuer, admin, testKeys string
	hc                      *http.Client
}

func hydra(t testing.TB) *idp {
	t.Helper()
	d := &idp{issuer: os.Getenv("MCPRES_OAUTH_ISSUER"), admin: os.Getenv("MCPRES_OAUTH_ADMIN_URL"),
		testKeys: os.Getenv("MCPRES_OAUTH_TEST_KEYS"), hc: &http.Client{Timeout: 20 * time.Second}}
	if d.issuer == "" || d.admin == "" || d.testKeys == "" {
		harness.Unavailable(t, "no OAuth authorization server: set MCPRES_OAUTH_ISSUER, MCPRES_OAUTH_ADMIN_URL and MCPRES_OAUTH_TEST_KEYS (scripts/tools.sh hydra, then scripts/services.sh up)")
	}
	return d
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// call sends a JSON request to Hydra and decodes a JSON answer into out.
func (d *idp) call(t testing.TB, method, u string, in, out any) {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(t.Context(), method, u, body)
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: HTTP %d: %s", method, u, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, u, err, b)
		}
	}
}

// oauthClient is an OAuth client registered with Hydra.
type oauthClient struct{ id, secret, redirect string }

// client registers a client for the grant types, allowed scope and
// audience; it is deleted when the test ends.
func (d *idp) client(t testing.TB, grants []string, scope, audience string) oauthClient {
	t.Helper()
	c := oauthClient{id: "mcpres-" + randomHex(t, 6), secret: randomHex(t, 16), redirect: "http://127.0.0.1:9/callback"}
	d.call(t, http.MethodPost, d.admin+"/admin/clients", map[string]any{"client_id": c.id, "client_secret": c.secret,
		"grant_types": grants, "response_types": []string{"code"}, "scope": scope, "audience": []string{audience},
		"redirect_uris": []string{c.redirect}, "token_endpoint_auth_method": "client_secret_basic"}, nil)
	t.Cleanup(func() {
		req, _ := http.NewRequest(http.MethodDelete, d.admin+"/admin/clients/"+c.id, nil)
		if resp, err := d.hc.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	return c
}

// token posts form to the token endpoint as client c.
func (d *idp) token(t testing.TB, c oauthClient, form url.Values) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, d.issuer+"oauth2/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(c.id), url.QueryEscape(c.secret))
	resp, err := d.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || json.Unmarshal(b, &out) != nil || out.AccessToken == "" {
		t.Fatalf("token endpoint: HTTP %d: %s", resp.StatusCode, b)
	}
	return out.AccessToken
}

// clientCredentials is a token for the client itself (sub = its id).
func (d *idp) clientCredentials(t testing.TB, c oauthClient, scope, audience string) string {
	t.Helper()
	return d.token(t, c, url.Values{"grant_type": {"client_credentials"}, "scope": {scope}, "audience": {audience}})
}

// userToken runs the authorization code flow with PKCE for user subject as
// a browser would, with Hydra's login and consent accepted on its admin
// API: the consent puts accessClaims (groups) into the access token.
func (d *idp) userToken(t testing.TB, c oauthClient, subject, scope, audience string, accessClaims map[string]any) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	verifier := randomHex(t, 32)
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"client_id": {c.id}, "response_type": {"code"}, "redirect_uri": {c.redirect}, "scope": {scope},
		"state": {randomHex(t, 8)}, "audience": {audience},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	// next follows one redirect and returns the Location of the answer.
	next := func(u string) *url.URL {
		t.Helper()
		resp, err := browser.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		loc, err := resp.Location()
		if err != nil {
			t.Fatalf("GET %s: HTTP %d without a redirect: %s", u, resp.StatusCode, b)
		}
		return loc
	}
	login := next(d.issuer + "oauth2/auth?" + q.Encode())
	var accepted struct {
		RedirectTo string `json:"redirect_to"`
	}
	d.call(t, http.MethodPut, d.admin+"/admin/oauth2/auth/requests/login/accept?login_challenge="+url.QueryEscape(login.Query().Get("login_challenge")),
		map[string]any{"subject": subject}, &accepted)
	consent := next(accepted.RedirectTo)
	d.call(t, http.MethodPut, d.admin+"/admin/oauth2/auth/requests/consent/accept?consent_challenge="+url.QueryEscape(consent.Query().Get("consent_challenge")),
		map[string]any{"grant_scope": strings.Fields(scope), "grant_access_token_audience": []string{audience},
			"session": map[string]any{"access_token": accessClaims}}, &accepted)
	callback := next(accepted.RedirectTo)
	code := callback.Query().Get("code")
	if code == "" {
		t.Fatalf("the callback carries no code: %s", callback)
	}
	return d.token(t, c, url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {c.redirect}, "code_verifier": {verifier}})
}

// signer is a key of the test's own that Hydra publishes in its JWKS.
type signer struct {
	key *rsa.PrivateKey
	kid string
}

// publishedKey uploads a fresh RSA key to Hydra's test key set; it is
// removed when the test ends.
func (d *idp) publishedKey(t testing.TB) signer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s := signer{key: key, kid: "mcpres-test-" + randomHex(t, 6)}
	d.call(t, http.MethodPut, d.admin+"/admin/keys/"+d.testKeys+"/"+s.kid,
		jose.JSONWebKey{Key: key, KeyID: s.kid, Algorithm: "RS256", Use: "sig"}, nil)
	t.Cleanup(func() {
		req, _ := http.NewRequest(http.MethodDelete, d.admin+"/admin/keys/"+d.testKeys+"/"+s.kid, nil)
		if resp, err := d.hc.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	return s
}

// signJWT signs claims with key under alg and kid.
func signJWT(t testing.TB, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func b64JSON(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

// rawPost sends one JSON-RPC message to /mcp with token and session id.
func rawPost(t testing.TB, addr, token, session, msg string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(msg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// postMCP sends one JSON-RPC initialize to the server's /mcp with token and
// returns the response.
func postMCP(t testing.TB, addr, token string) (*http.Response, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"oauth-test","version":"1"}}}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
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

// metric returns the sum of the samples of the named metric in the
// server's /metrics whose line contains every one of with.
func (s *runningServer) metric(t *testing.T, name string, with ...string) float64 {
	t.Helper()
	code, body := s.get(t, "/metrics")
	if code != 200 {
		t.Fatalf("/metrics: HTTP %d", code)
	}
	var sum float64
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, w := range with {
			ok = ok && strings.Contains(line, w)
		}
		if !ok {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
			sum += v
		}
	}
	return sum
}
