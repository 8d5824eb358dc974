package integration

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/internal/serverproc"
)

// testIssuer is an authorization server of the test's own (OpenID
// discovery and a JWKS over httptest), which mints tokens shaped as other
// identity providers issue them: Hydra mints only its own shape.
type testIssuer struct {
	srv  *httptest.Server
	key  *rsa.PrivateKey
	kid  string
	down atomic.Bool // discovery and the JWKS answer 503
}

func newTestIssuer(t testing.TB) *testIssuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ti := &testIssuer{key: key, kid: "test-" + randomHex(t, 4)}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		if ti.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"issuer": ti.url(), "jwks_uri": ti.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		if ti.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: ti.kid, Algorithm: "RS256", Use: "sig"}}})
	})
	ti.srv = httptest.NewServer(mux)
	t.Cleanup(ti.srv.Close)
	return ti
}

func (ti *testIssuer) url() string { return ti.srv.URL + "/" }

// mint signs claims, with iss, iat, nbf and exp added unless present.
func (ti *testIssuer) mint(t testing.TB, claims map[string]any) string {
	t.Helper()
	c := map[string]any{"iss": ti.url(), "iat": time.Now().Unix(), "nbf": time.Now().Unix(), "exp": time.Now().Add(10 * time.Minute).Unix()}
	for k, v := range claims {
		c[k] = v
	}
	return signJWT(t, jose.RS256, ti.key, ti.kid, c)
}

// mintRaw signs payload as it is, so that a test can send JSON that a Go
// value cannot marshal to (a lone surrogate escape).
func (ti *testIssuer) mintRaw(t testing.TB, payload string) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: ti.key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", ti.kid))
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign([]byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// docsPolicy is the row-level security policy of docs/identity.md, as the
// page shows it.
func docsPolicy(t testing.TB) string {
	t.Helper()
	page, err := os.ReadFile("../docs/identity.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```sql\n(CREATE POLICY by_group .*?)```").FindSubmatch(page)
	if m == nil {
		t.Fatal("docs/identity.md shows no CREATE POLICY by_group block")
	}
	return string(m[1])
}

// providerRig is a database whose notes are read under the policy of
// docs/identity.md, on the claim named, and a resources file serving them.
func providerRig(t *testing.T, claim string) (config string) {
	t.Helper()
	policy := docsPolicy(t)
	if !strings.Contains(policy, "-> 'groups'") || !strings.Contains(policy, "TO notes_reader") {
		t.Fatalf("the policy of docs/identity.md no longer reads 'groups' for notes_reader:\n%s", policy)
	}
	policy = strings.NewReplacer("-> 'groups'", "-> '"+claim+"'", "TO notes_reader", "TO oauth_reader").Replace(policy)
	schema := strings.Replace(oauthSchema, oauthSchema[strings.Index(oauthSchema, "CREATE POLICY"):strings.Index(oauthSchema, "GRANT SELECT")], policy+"\n", 1)
	db := harness.Postgres(t)
	if err := serverproc.PostgresExec(t.Context(), db, schema); err != nil {
		t.Fatalf("%v\n%s", err, schema)
	}
	config = filepath.Join(t.TempDir(), "resources.yaml")
	if err := os.WriteFile(config, []byte(strings.Replace(oauthConfig, "${OAUTH_DATABASE_URL}", db, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return config
}

// TestOAuthProviderShapedTokensReadWhatTheirClaimsAllow mints tokens
// shaped as Entra ID, Keycloak, Okta and Auth0 issue them (aud an
// application ID, a client id or an API identifier; scopes in scp as a
// string or an array or in scope; groups and roles as arrays, a string,
// nested in realm_access or under a namespaced name), and checks through
// the binary that each user reads exactly the notes its claims allow under
// the row-level security policy of docs/identity.md, and a user without
// the claim reads none.
func TestOAuthProviderShapedTokensReadWhatTheirClaimsAllow(t *testing.T) {
	harness.Postgres(t) // skips, or fails under MCPRES_INTEGRATION=require, without PostgreSQL
	resource := "https://mcp-" + randomHex(t, 4) + ".example.test/mcp"
	const appID = "6e74172b-be56-4843-9ff4-e66a39bb12e3"
	type user struct {
		name   string
		claims map[string]any
		reads  []string
	}
	providers := []struct {
		name, claim string
		flags       []string
		users       []user
	}{
		{"Entra ID", "roles", []string{"--oauth-audience", appID, "--oauth-scope", "Notes.Read"}, []user{
			{"alice", map[string]any{"aud": appID, "scp": "Notes.Read User.Read", "roles": []string{"eng"}, "sub": "AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ",
				"oid": "00000000-0000-0000-66f3-3332eca7ea81", "tid": "9122040d-6c67-4c5b-b112-36a304b66dad", "ver": "2.0", "azp": appID}, []string{"eng-plan"}},
			{"bob", map[string]any{"aud": appID, "scp": "Notes.Read", "roles": []string{"ops", "eng"}, "sub": "AAAAAAAAAAAAAAAAAAAAAbob", "ver": "2.0"}, []string{"eng-plan", "ops-runbook"}},
			{"no roles", map[string]any{"aud": appID, "scp": "Notes.Read", "sub": "AAAAAAAAAAAAAAAAAAAAAcarol", "ver": "2.0"}, nil},
		}},
		{"Keycloak", "realm_access.roles", []string{"--oauth-audience", "mcp-resources", "--oauth-scope", "notes"}, []user{
			{"alice", map[string]any{"aud": []string{"mcp-resources", "account"}, "scope": "openid profile notes", "sub": "f1b3c6a2-3e1d-4c1a-9d7e-2b5b6f0e1a11",
				"realm_access": map[string]any{"roles": []string{"offline_access", "eng"}}, "resource_access": map[string]any{"account": map[string]any{"roles": []string{"ops"}}},
				"preferred_username": "alice", "azp": "mcp-client", "typ": "Bearer"}, []string{"eng-plan"}},
			{"bob", map[string]any{"aud": "mcp-resources", "scope": "notes", "sub": "0c7a4c1e-5d2f-4f7b-8a3e-9f1b2c3d4e5f",
				"realm_access": map[string]any{"roles": []string{"ops"}}}, []string{"ops-runbook"}},
			{"no realm roles", map[string]any{"aud": "mcp-resources", "scope": "notes", "sub": "5b0f6e2a-0000-4000-8000-000000000000",
				"resource_access": map[string]any{"mcp-resources": map[string]any{"roles": []string{"eng"}}}}, nil},
		}},
		{"Okta", "groups", []string{"--oauth-audience", "api://default", "--oauth-scope", "notes.read"}, []user{
			{"alice", map[string]any{"aud": "api://default", "scp": []string{"notes.read", "openid"}, "sub": "alice@example.test", "uid": "00u1abcd",
				"cid": "0oa1client", "groups": []string{"eng", "Everyone"}, "ver": 1}, []string{"eng-plan"}},
			{"bob (groups a string)", map[string]any{"aud": "api://default", "scp": []string{"notes.read"}, "sub": "bob@example.test", "groups": "ops"}, []string{"ops-runbook"}},
			{"no groups", map[string]any{"aud": "api://default", "scp": []string{"notes.read"}, "sub": "carol@example.test"}, nil},
			{"groups an object", map[string]any{"aud": "api://default", "scp": []string{"notes.read"}, "sub": "dave@example.test", "groups": map[string]any{"eng": true}}, nil},
		}},
		{"Auth0", "https://mcp.example.test/groups", []string{"--oauth-scope", "read:notes"}, []user{
			{"alice", map[string]any{"aud": []string{resource, "https://tenant.auth0.test/userinfo"}, "scope": "openid read:notes", "sub": "auth0|5f7c8ec7c33c6c004bbafe82",
				"azp": "auth0-client", "permissions": []string{"read:notes"}, "https://mcp.example.test/groups": []string{"eng"}}, []string{"eng-plan"}},
			{"bob", map[string]any{"aud": resource, "scope": "read:notes", "sub": "google-oauth2|1234", "https://mcp.example.test/groups": "ops"}, []string{"ops-runbook"}},
			{"no groups", map[string]any{"aud": resource, "scope": "read:notes", "sub": "auth0|none"}, nil},
		}},
	}
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			is := newTestIssuer(t)
			config := providerRig(t, p.claim)
			s := startServer(t, append([]string{"--config", config, "--oauth-issuer", is.url(), "--oauth-resource", resource,
				"--oauth-claims", p.claim}, p.flags...)...)
			for _, u := range p.users {
				cs := s.connect(t, is.mint(t, u.claims))
				for _, id := range []string{"eng-plan", "ops-runbook"} {
					text, err := readText(t, cs, "note://notes/"+id)
					if want := strings.Contains(strings.Join(u.reads, " "), id); want != (err == nil && strings.HasPrefix(text, "the ")) {
						t.Errorf("%s reads %s: %q, %v; want read %v", u.name, id, text, err, want)
					}
				}
				who, err := readText(t, cs, "note://whoami/x")
				if err != nil {
					t.Fatalf("%s: whoami: %v", u.name, err)
				}
				var seen struct {
					Principal string                     `json:"principal"`
					Claims    map[string]json.RawMessage `json:"claims"`
				}
				if err := json.Unmarshal([]byte(who), &seen); err != nil {
					t.Fatal(err)
				}
				if seen.Principal != u.claims["sub"] || len(seen.Claims) > 1 {
					t.Errorf("%s: the database saw %s: want principal %v and only %s", u.name, who, u.claims["sub"], p.claim)
				}
				cs.Close()
			}
			// The resource URI is not an audience once --oauth-audience
			// replaces it (and the reverse for Auth0, which names it).
			wrong := map[string]any{"sub": "mallory", "scp": "Notes.Read notes notes.read read:notes", "scope": "notes read:notes",
				"roles": []string{"eng"}, "groups": []string{"eng"}, "aud": "https://other.example.test/mcp"}
			if resp, _ := postMCP(t, s.addr, is.mint(t, wrong)); resp.StatusCode != 401 {
				t.Errorf("a token for another audience: HTTP %d, want 401", resp.StatusCode)
			}
		})
	}
}

// TestOAuthClaimsStorageCannotHoldAreRefused sends tokens whose passed
// claim holds what PostgreSQL's jsonb refuses (\u0000, a lone surrogate):
// each is refused with 401 before storage, the server logs why (naming the
// claim, not the token or the value), and reads with good tokens work.
func TestOAuthClaimsStorageCannotHoldAreRefused(t *testing.T) {
	harness.Postgres(t)
	resource := "https://mcp-" + randomHex(t, 4) + ".example.test/mcp"
	is := newTestIssuer(t)
	config := providerRig(t, "groups")
	s := startServer(t, "--config", config, "--oauth-issuer", is.url(), "--oauth-resource", resource, "--oauth-claims", "groups,tenant")
	good := is.mint(t, map[string]any{"sub": "alice", "aud": resource, "groups": []string{"eng"}, "tenant": "acme"})
	cs := s.connect(t, good)
	if text, err := readText(t, cs, "note://notes/eng-plan"); err != nil || text != "the engineering plan" {
		t.Fatalf("a good token: %q, %v", text, err)
	}
	cs.Close()
	storeCalls := s.metric(t, "mcpres_store_calls_total")
	exp := time.Now().Add(10 * time.Minute).Unix()
	head := `{"iss":"` + is.url() + `","sub":"alice","aud":"` + resource + `","exp":` + jsonInt(exp) + `,"groups":["eng"],"tenant":`
	for name, tok := range map[string]string{
		"\\u0000":               is.mint(t, map[string]any{"sub": "alice", "aud": resource, "groups": []string{"eng"}, "tenant": "ac\x00me"}),
		"a lone surrogate":      is.mintRaw(t, head+`"ac\ud800me"}`),
		"\\u0000 in the groups": is.mintRaw(t, strings.Replace(head, `["eng"]`, `["e\u0000ng"]`, 1)+`"acme"}`),
	} {
		before := s.metric(t, "mcpres_oauth_refused_total", `reason="claims"`)
		resp, body := postMCP(t, s.addr, tok)
		if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) || strings.Contains(body, "tenant") {
			t.Errorf("%s: HTTP %d %q %q, want 401 invalid_token saying nothing", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
		}
		if after := s.metric(t, "mcpres_oauth_refused_total", `reason="claims"`); after != before+1 {
			t.Errorf("%s: claims refusals %v -> %v, want one more", name, before, after)
		}
		if logs := s.stderr.String(); strings.Contains(logs, tok) || strings.Contains(logs, "ac\\u0000me") || strings.Contains(logs, "acme") {
			t.Errorf("%s: the log holds the token or the value", name)
		}
	}
	logs := s.stderr.String()
	if !strings.Contains(logs, "claims cannot reach storage") || !strings.Contains(logs, `\"tenant\" holds \\u0000`) ||
		!strings.Contains(logs, `\"tenant\" holds a lone surrogate`) || !strings.Contains(logs, `\"groups\" holds \\u0000`) {
		t.Errorf("the log does not say why each token was refused:\n%s", logs)
	}
	if sc := s.metric(t, "mcpres_store_calls_total"); sc != storeCalls {
		t.Errorf("refused tokens reached storage: %v -> %v store calls", storeCalls, sc)
	}
	cs = s.connect(t, good)
	if text, err := readText(t, cs, "note://notes/eng-plan"); err != nil || text != "the engineering plan" {
		t.Fatalf("a good token after the refusals: %q, %v", text, err)
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// opaqueClient registers a Hydra client whose access tokens are opaque
// (Hydra's access_token_strategy), for the grants, scope and audience.
func (d *idp) opaqueClient(t testing.TB, grants []string, scope, audience string) oauthClient {
	t.Helper()
	c := oauthClient{id: "mcpres-opaque-" + randomHex(t, 6), secret: randomHex(t, 16), redirect: "http://127.0.0.1:9/callback"}
	d.call(t, http.MethodPost, d.admin+"/admin/clients", map[string]any{"client_id": c.id, "client_secret": c.secret,
		"grant_types": grants, "response_types": []string{"code"}, "scope": scope, "audience": []string{audience},
		"redirect_uris": []string{c.redirect}, "token_endpoint_auth_method": "client_secret_basic", "access_token_strategy": "opaque"}, nil)
	t.Cleanup(func() {
		req, _ := http.NewRequest(http.MethodDelete, d.admin+"/admin/clients/"+c.id, nil)
		if resp, err := d.hc.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	return c
}

// TestOAuthOpaqueTokensFromHydraThroughIntrospection runs the binary with
// --oauth-introspection-url against Hydra's opaque access tokens: users
// read exactly what the groups of their consent allow (Hydra returns them
// under ext, read with the claim path ext.groups) under the policy of
// docs/identity.md, a client-credentials token reads as its client, and a
// token Hydra does not know is refused before storage. Answers are cached:
// repeated reads with one token make one introspection.
func TestOAuthOpaqueTokensFromHydraThroughIntrospection(t *testing.T) {
	d := hydra(t)
	config := providerRig(t, "ext.groups")
	resource := "https://mcp-" + randomHex(t, 4) + ".example.test/mcp"
	app := d.opaqueClient(t, []string{"authorization_code", "client_credentials"}, oauthScope, resource)
	alice := d.userToken(t, app, "alice", oauthScope, resource, map[string]any{"groups": []string{"eng"}})
	bob := d.userToken(t, app, "bob", oauthScope, resource, map[string]any{"groups": "ops"})
	svc := d.clientCredentials(t, app, oauthScope, resource)
	for _, tok := range []string{alice, bob, svc} {
		if strings.Count(tok, ".") == 2 {
			t.Fatalf("Hydra minted a JWT, not an opaque token: %.20s...", tok)
		}
	}
	s := startServer(t, "--config", config, "--oauth-issuer", d.issuer, "--oauth-resource", resource, "--oauth-scope", oauthScope,
		"--oauth-claims", "ext.groups", "--oauth-introspection-url", d.admin+"/admin/oauth2/introspect",
		"--oauth-client-id", app.id, "--oauth-client-secret", app.secret)
	if code, body := s.get(t, "/readyz"); code != 200 {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	for _, c := range []struct {
		who, token, principal string
		reads                 []string
	}{
		{"alice (eng)", alice, "alice", []string{"eng-plan"}},
		{"bob (ops, a string)", bob, "bob", []string{"ops-runbook"}},
		{"the client itself", svc, app.id, nil},
	} {
		cs := s.connect(t, c.token)
		for _, id := range []string{"eng-plan", "ops-runbook"} {
			text, err := readText(t, cs, "note://notes/"+id)
			if want := strings.Contains(strings.Join(c.reads, " "), id); want != (err == nil && strings.HasPrefix(text, "the ")) {
				t.Errorf("%s reads %s: %q, %v; want read %v", c.who, id, text, err, want)
			}
		}
		who, err := readText(t, cs, "note://whoami/x")
		if err != nil || !strings.Contains(who, `"principal" : "`+c.principal+`"`) {
			t.Errorf("%s: the database saw %s, %v", c.who, who, err)
		}
		cs.Close()
	}
	calls := s.metric(t, "mcpres_oauth_introspections_total")
	cs := s.connect(t, alice)
	for range 5 {
		if _, err := readText(t, cs, "note://notes/eng-plan"); err != nil {
			t.Fatal(err)
		}
	}
	cs.Close()
	if after := s.metric(t, "mcpres_oauth_introspections_total"); after != calls {
		t.Errorf("introspections %v -> %v for a cached token, want none", calls, after)
	}
	storeCalls := s.metric(t, "mcpres_store_calls_total")
	resp, _ := postMCP(t, s.addr, "ory_at_"+randomHex(t, 20)+"."+randomHex(t, 20))
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("a token Hydra does not know: HTTP %d %q, want 401 invalid_token", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if n := s.metric(t, "mcpres_oauth_refused_total", `reason="inactive"`); n != 1 {
		t.Errorf("inactive refusals %v, want 1", n)
	}
	if sc := s.metric(t, "mcpres_store_calls_total"); sc != storeCalls {
		t.Errorf("a refused token reached storage")
	}
}

// TestOAuthJunkKidWithTheIssuerDownKeepsReadiness: with the issuer down, a
// junk token naming an unknown kid starts a key fetch that fails; /readyz
// stays 200, because the cached keys still verify good tokens, which still
// read.
func TestOAuthJunkKidWithTheIssuerDownKeepsReadiness(t *testing.T) {
	harness.Postgres(t)
	resource := "https://mcp-" + randomHex(t, 4) + ".example.test/mcp"
	is := newTestIssuer(t)
	config := providerRig(t, "groups")
	s := startServer(t, "--config", config, "--oauth-issuer", is.url(), "--oauth-resource", resource, "--oauth-claims", "groups")
	if code, body := s.get(t, "/readyz"); code != 200 {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	is.down.Store(true)
	junkKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	// Junk tokens until one is let through the refresh rate limit (one
	// fetch per 5 s) and its fetch fails.
	deadline := time.Now().Add(30 * time.Second)
	for s.metric(t, "mcpres_oauth_key_fetch_failures_total") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no junk token started a key fetch in 30 s")
		}
		junk := signJWT(t, jose.RS256, junkKey, "junk-"+randomHex(t, 4), map[string]any{"iss": is.url(), "sub": "mallory", "aud": resource,
			"exp": time.Now().Add(time.Hour).Unix()})
		if resp, _ := postMCP(t, s.addr, junk); resp.StatusCode != 401 {
			t.Fatalf("a junk token: HTTP %d, want 401", resp.StatusCode)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if code, body := s.get(t, "/readyz"); code != 200 {
		t.Fatalf("/readyz after a failed refresh with the keys cached: %d %s, want 200", code, body)
	}
	cs := s.connect(t, is.mint(t, map[string]any{"sub": "alice", "aud": resource, "groups": []string{"eng"}}))
	if text, err := readText(t, cs, "note://notes/eng-plan"); err != nil || text != "the engineering plan" {
		t.Fatalf("a good token with the issuer down: %q, %v", text, err)
	}
}

// TestOAuthTokensModeChallengesThroughTheBinary: with --tokens, a 401 carries
// WWW-Authenticate: Bearer realm="mcp-resources", with error="invalid_token"
// only for a bearer token not in the file; the root protected resource
// metadata does not exist.
func TestOAuthTokensModeChallengesThroughTheBinary(t *testing.T) {
	harness.Postgres(t)
	s := startServer(t, "--config", providerRig(t, "groups"), "--tokens", tokensFile(t, "alice"))
	for token, want := range map[string]string{"": `Bearer realm="mcp-resources"`, "not-in-the-file": `Bearer error="invalid_token", realm="mcp-resources"`} {
		if resp, _ := postMCP(t, s.addr, token); resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != want {
			t.Errorf("token %q: HTTP %d, WWW-Authenticate %q; want 401, %q", token, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
		}
	}
	if resp, body := postMCP(t, s.addr, "alice-token"); resp.StatusCode != 200 || !strings.Contains(body, `"result"`) {
		t.Errorf("alice's token: HTTP %d %s", resp.StatusCode, body)
	}
}
