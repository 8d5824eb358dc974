package integration

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/internal/serverproc"
)

// The schema of the identity tests: notes that belong to a group, readable
// under row-level security by a caller whose token's groups claim names
// the group, as the server passes it in mcp.claims.
const oauthSchema = `
DO $$ BEGIN CREATE ROLE oauth_reader NOLOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
CREATE TABLE notes (id text PRIMARY KEY, grp text NOT NULL, body text NOT NULL);
ALTER TABLE notes ENABLE ROW LEVEL SECURITY;
CREATE POLICY by_group ON notes FOR SELECT TO oauth_reader
	USING (grp IN (SELECT jsonb_array_elements_text(
		coalesce(current_setting('mcp.claims', true)::jsonb -> 'groups', '[]'))));
GRANT SELECT ON notes TO oauth_reader;
INSERT INTO notes VALUES ('eng-plan', 'eng', 'the engineering plan'), ('ops-runbook', 'ops', 'the ops runbook');`

// The resources file: a note by id, and whoami, which echoes what reached
// the database as mcp.principal and mcp.claims.
const oauthConfig = `version: 1
sources:
  notes:
    postgres:
      url: ${OAUTH_DATABASE_URL}
      role: oauth_reader
policy: database
resources:
  note:
    template: note://notes/{id}
    description: A note, under row-level security by group
    source: notes
    plan: |
      SELECT n.id AS key, n.xmin AS version, 'text/plain' AS mime, octet_length(n.body) AS size
      FROM notes n WHERE n.id = $id
    body: SELECT n.body, n.xmin AS version FROM notes n WHERE n.id = $key
  whoami:
    template: note://whoami/{x}
    description: The identity the database sees
    source: notes
    public: true                     # every caller reads its own identity
    plan: |
      SELECT $x AS key, 1 AS version, 'application/json' AS mime
    body: |
      SELECT json_build_object('principal', current_setting('mcp.principal', true),
             'claims', current_setting('mcp.claims', true)::jsonb)::text AS body, 1 AS version
      WHERE $key IS NOT NULL
`

const oauthScope = "resources:read"

// oauthRig is a database with the notes schema, a resources file, and a
// client of Hydra's for users.
type oauthRig struct {
	idp      *idp
	dbURL    string
	config   string
	resource string
}

func newOAuthRig(t testing.TB) *oauthRig {
	t.Helper()
	r := &oauthRig{idp: hydra(t), dbURL: harness.Postgres(t)}
	if err := serverproc.PostgresExec(t.Context(), r.dbURL, oauthSchema); err != nil {
		t.Fatal(err)
	}
	r.config = filepath.Join(t.TempDir(), "resources.yaml")
	if err := os.WriteFile(r.config, []byte(oauthConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OAUTH_DATABASE_URL", r.dbURL)
	// The canonical resource URI clients ask tokens for; the server need
	// not listen at it (it would, behind its proxy).
	r.resource = "https://mcp-" + randomHex(t, 4) + ".example.test/mcp"
	return r
}

func (r *oauthRig) serve(t *testing.T, extra ...string) *runningServer {
	t.Helper()
	args := append([]string{"--config", r.config, "--oauth-issuer", r.idp.issuer, "--oauth-resource", r.resource,
		"--oauth-scope", oauthScope, "--oauth-claims", "groups,tenant"}, extra...)
	s := startServer(t, args...)
	if code, body := s.get(t, "/readyz"); code != 200 {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	return s
}

// readText reads uri and returns its first content's text, or the error.
func readText(t *testing.T, cs *mcp.ClientSession, uri string) (string, error) {
	t.Helper()
	res, err := readAll(t, cs, uri)
	if err != nil {
		return "", err
	}
	return res.Contents[0].Text, nil
}

// TestOAuthTokensFromHydraReadWhatTheirGroupsClaimAllows runs the binary as
// an OAuth 2.1 resource server in front of a real authorization server
// (Ory Hydra): two users, each through the authorization code flow with
// PKCE and a groups claim, read exactly the notes of their group under
// row-level security on mcp.claims; the database sees each user's sub as
// mcp.principal and only the named claims; a client-credentials token
// (sub = the client, no groups) reads no note; a session opened by alice
// is not bob's to use.
func TestOAuthTokensFromHydraReadWhatTheirGroupsClaimAllows(t *testing.T) {
	r := newOAuthRig(t)
	app := r.idp.client(t, []string{"authorization_code", "client_credentials"}, oauthScope, r.resource)
	alice := r.idp.userToken(t, app, "alice", oauthScope, r.resource, map[string]any{"groups": []string{"eng"}, "tenant": "acme", "secret": "not passed"})
	bob := r.idp.userToken(t, app, "bob", oauthScope, r.resource, map[string]any{"groups": []string{"ops"}})
	svc := r.idp.clientCredentials(t, app, oauthScope, r.resource)

	for _, mode := range []struct {
		name string
		args []string
	}{{"stateful", nil}, {"stateless", []string{"--stateless", "--cursor-key", strings.Repeat("k", 32)}}} {
		t.Run(mode.name, func(t *testing.T) {
			s := r.serve(t, mode.args...)
			as, bs, ss := s.connect(t, alice), s.connect(t, bob), s.connect(t, svc)
			for _, c := range []struct {
				who    string
				cs     *mcp.ClientSession
				reads  []string
				denied []string
			}{
				{"alice (eng)", as, []string{"eng-plan"}, []string{"ops-runbook"}},
				{"bob (ops)", bs, []string{"ops-runbook"}, []string{"eng-plan"}},
				{"the client itself (no groups)", ss, nil, []string{"eng-plan", "ops-runbook"}},
			} {
				for _, id := range c.reads {
					if text, err := readText(t, c.cs, "note://notes/"+id); err != nil || !strings.HasPrefix(text, "the ") {
						t.Errorf("%s reads %s: %q, %v", c.who, id, text, err)
					}
				}
				for _, id := range c.denied {
					if text, err := readText(t, c.cs, "note://notes/"+id); err == nil {
						t.Errorf("%s read %s: %q", c.who, id, text)
					}
				}
			}
			who, err := readText(t, as, "note://whoami/x")
			if err != nil {
				t.Fatal(err)
			}
			var seen struct {
				Principal string         `json:"principal"`
				Claims    map[string]any `json:"claims"`
			}
			if err := json.Unmarshal([]byte(who), &seen); err != nil {
				t.Fatal(err)
			}
			if b, _ := json.Marshal(seen.Claims); seen.Principal != "alice" || string(b) != `{"groups":["eng"],"tenant":"acme"}` {
				t.Fatalf("the database saw %s: want principal alice and exactly the named claims", who)
			}
			if svcWho, _ := readText(t, ss, "note://whoami/x"); !strings.Contains(svcWho, `"principal" : "`+app.id+`"`) || !strings.Contains(svcWho, `"claims" : {}`) {
				t.Fatalf("the client-credentials token reached the database as %s: want its client id and {}", svcWho)
			}
		})
	}

	t.Run("session binding", func(t *testing.T) {
		s := r.serve(t)
		// The session id alice's initialize got, used with bob's token.
		resp, _ := postMCP(t, s.addr, alice)
		sid := resp.Header.Get("Mcp-Session-Id")
		if sid == "" {
			t.Fatal("no session id")
		}
		status, body := rawPost(t, s.addr, bob, sid, `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"note://notes/eng-plan"}}`)
		if status != 403 || strings.Contains(body, "engineering") {
			t.Fatalf("bob on alice's session: HTTP %d %q, want 403", status, body)
		}
	})
}

// TestOAuthRefusesBadTokensBeforeStorage sends every kind of bad token
// through the binary: each is refused with 401 (or 403 for a missing
// scope) and the WWW-Authenticate challenge that leads a client to the
// metadata, and none reaches the MCP server or storage (the store-call and
// request counters stay at zero). Hydra does not mint bad tokens, so most
// are signed here, with a key of the test's own that Hydra publishes in its
// JWKS: the same key first signs a valid token, which is accepted, so each
// refusal is for the one thing spoiled.
func TestOAuthRefusesBadTokensBeforeStorage(t *testing.T) {
	r := newOAuthRig(t)
	app := r.idp.client(t, []string{"client_credentials"}, oauthScope+" other", r.resource)
	weak := r.idp.client(t, []string{"client_credentials"}, "other", r.resource)
	key := r.idp.publishedKey(t)
	s := r.serve(t)

	claims := func(spoil func(map[string]any)) map[string]any {
		now := time.Now()
		c := map[string]any{"iss": r.idp.issuer, "sub": "alice", "aud": []string{r.resource}, "groups": []string{"eng"},
			"scp": []string{oauthScope}, "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(10 * time.Minute).Unix()}
		if spoil != nil {
			spoil(c)
		}
		return c
	}
	valid := signJWT(t, jose.RS256, key.key, key.kid, claims(nil))
	cs := s.connect(t, valid)
	if text, err := readText(t, cs, "note://notes/eng-plan"); err != nil || text != "the engineering plan" {
		t.Fatalf("a valid token signed with the published test key: %q, %v", text, err)
	}
	cs.Close()
	storeCalls, requests := s.metric(t, "mcpres_store_calls_total"), s.metric(t, "mcpres_requests_total")

	hydraToken := r.idp.clientCredentials(t, app, oauthScope, r.resource)
	parts := strings.Split(hydraToken, ".")
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	pubDER, _ := x509.MarshalPKIXPublicKey(&key.key.PublicKey)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	meta := `resource_metadata="` + strings.TrimSuffix(r.resource, "/mcp") + "/.well-known/oauth-protected-resource/mcp" + `", scope="` + oauthScope + `"`
	cases := []struct {
		name, token, reason string
		status              int
	}{
		{"no token", "", "", 401},
		{"expired", signJWT(t, jose.RS256, key.key, key.kid, claims(func(c map[string]any) { c["exp"] = time.Now().Add(-5 * time.Minute).Unix() })), "expired", 401},
		{"not yet valid", signJWT(t, jose.RS256, key.key, key.kid, claims(func(c map[string]any) { c["nbf"] = time.Now().Add(5 * time.Minute).Unix() })), "not_yet_valid", 401},
		{"wrong issuer", signJWT(t, jose.RS256, key.key, key.kid, claims(func(c map[string]any) { c["iss"] = "https://evil.example.test/" })), "issuer", 401},
		{"wrong audience", signJWT(t, jose.RS256, key.key, key.kid, claims(func(c map[string]any) { c["aud"] = []string{"https://other.example.test/mcp"} })), "audience", 401},
		{"a Hydra token for another audience", r.idp.clientCredentials(t, r.idp.client(t, []string{"client_credentials"}, oauthScope, "https://other.example.test/mcp"), oauthScope, "https://other.example.test/mcp"), "audience", 401},
		{"alg none", b64JSON(map[string]string{"alg": "none", "typ": "JWT", "kid": key.kid}) + "." + b64JSON(claims(nil)) + ".", "malformed", 401},
		{"HMAC with the public key as its secret", signJWT(t, jose.HS256, pubPEM, key.kid, claims(nil)), "malformed", 401},
		{"unknown kid", signJWT(t, jose.RS256, other, "mcpres-unknown-"+randomHex(t, 4), claims(nil)), "unknown_key", 401},
		{"a published kid, another key", signJWT(t, jose.RS256, other, key.kid, claims(nil)), "signature", 401},
		{"Hydra's token with a tampered signature", parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2])), "signature", 401},
		{"Hydra's token with a tampered payload", parts[0] + "." + b64JSON(claims(nil)) + "." + parts[2], "signature", 401},
		{"a Hydra token without the scope", r.idp.clientCredentials(t, weak, "other", r.resource), "", 403},
		{"a signed token without the scope", signJWT(t, jose.RS256, key.key, key.kid, claims(func(c map[string]any) { c["scp"] = []string{"other"} })), "", 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := s.metric(t, "mcpres_oauth_refused_total", `reason="`+tc.reason+`"`)
			resp, body := postMCP(t, s.addr, tc.token)
			want := "Bearer " + meta
			switch {
			case tc.status == 403:
				want = `Bearer error="insufficient_scope", ` + meta
			case tc.token != "":
				want = `Bearer error="invalid_token", ` + meta
			}
			if resp.StatusCode != tc.status || resp.Header.Get("WWW-Authenticate") != want {
				t.Fatalf("HTTP %d, WWW-Authenticate %q; want %d, %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), tc.status, want)
			}
			if strings.Contains(body, "exp") || strings.Contains(body, "kid") || strings.Contains(body, r.idp.issuer) {
				t.Fatalf("the body says why: %q", body)
			}
			if tc.reason != "" {
				if after := s.metric(t, "mcpres_oauth_refused_total", `reason="`+tc.reason+`"`); after != before+1 {
					t.Fatalf("refusals for %s: %v then %v, want one more", tc.reason, before, after)
				}
			}
		})
	}
	if sc, rq := s.metric(t, "mcpres_store_calls_total"), s.metric(t, "mcpres_requests_total"); sc != storeCalls || rq != requests {
		t.Fatalf("refused tokens reached the server: store calls %v -> %v, requests %v -> %v", storeCalls, sc, requests, rq)
	}
}

// TestOAuthMetadataAndModes checks the RFC 9728 documents through the
// binary, and that --tokens and --oauth-issuer exclude each other.
func TestOAuthMetadataAndModes(t *testing.T) {
	r := newOAuthRig(t)
	s := r.serve(t)
	// RFC 9728 section 3.3: the root document would have to name the
	// server's root as its resource, so only the path-suffixed one exists.
	if code, body := s.get(t, "/.well-known/oauth-protected-resource"); code != 404 {
		t.Fatalf("the root metadata document: %d %s, want 404", code, body)
	}
	for _, p := range []string{"/.well-known/oauth-protected-resource/mcp"} {
		code, body := s.get(t, p)
		var m map[string]any
		if code != 200 || json.Unmarshal([]byte(body), &m) != nil {
			t.Fatalf("%s: %d %s", p, code, body)
		}
		if m["resource"] != r.resource || m["authorization_servers"].([]any)[0] != r.idp.issuer ||
			m["scopes_supported"].([]any)[0] != oauthScope || m["bearer_methods_supported"].([]any)[0] != "header" {
			t.Fatalf("%s: %s", p, body)
		}
	}
	code, _, errs := runServerCmd(t, "", "serve", "--http", "127.0.0.1:0", "--config", r.config, "--tokens", tokensFile(t, "alice"),
		"--oauth-issuer", r.idp.issuer, "--oauth-resource", r.resource)
	if code == 0 || !strings.Contains(errs, "give --tokens or an OAuth issuer") {
		t.Fatalf("--tokens with --oauth-issuer: exit %d, %s", code, errs)
	}
}

// TestOAuthIssuerOutageFailsClosed starts the binary against an issuer that
// does not answer: /readyz says so, a token is refused with 500 (not a 401
// that would send the client to re-authenticate) without reaching storage,
// and the metrics show no keys and the failed fetches.
func TestOAuthIssuerOutageFailsClosed(t *testing.T) {
	r := newOAuthRig(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String() + "/"
	l.Close() // nothing listens there now
	s := startServer(t, "--config", r.config, "--oauth-issuer", down, "--oauth-resource", r.resource)
	if code, body := s.get(t, "/readyz"); code != 503 || !strings.Contains(body, "authorization server") {
		t.Fatalf("/readyz with the issuer down: %d %q", code, body)
	}
	key := r.idp.publishedKey(t) // any well-formed token: no key can be checked
	tok := signJWT(t, jose.RS256, key.key, key.kid, map[string]any{"iss": down, "sub": "alice", "aud": r.resource, "exp": time.Now().Add(time.Hour).Unix()})
	resp, body := postMCP(t, s.addr, tok)
	if resp.StatusCode != 500 || strings.Contains(body, l.Addr().String()) {
		t.Fatalf("a token with the issuer down: HTTP %d %q; want 500 naming nothing", resp.StatusCode, body)
	}
	if keys, fails, calls := s.metric(t, "mcpres_oauth_keys"), s.metric(t, "mcpres_oauth_key_fetch_failures_total"), s.metric(t, "mcpres_store_calls_total"); keys != 0 || fails < 1 || calls != 0 {
		t.Fatalf("metrics: %v keys, %v failed fetches, %v store calls; want 0, at least 1, 0", keys, fails, calls)
	}
}

// TestOAuthFromTheResourcesFile configures the resource server in the
// resources file instead of flags: check loads the issuer's discovery
// document and keys (and fails, naming the file, when they do not load),
// serve honours the section, and flags beside it are refused.
func TestOAuthFromTheResourcesFile(t *testing.T) {
	r := newOAuthRig(t)
	section := "oauth:\n  issuer: " + r.idp.issuer + "\n  resource: " + r.resource +
		"\n  scopes: [" + oauthScope + "]\n  claims: [groups]\n"
	withOAuth := filepath.Join(t.TempDir(), "with-oauth.yaml")
	if err := os.WriteFile(withOAuth, []byte(oauthConfig+section), 0o600); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, "", "check", "--config", withOAuth)
	if !strings.Contains(out, "oauth: issuer "+r.idp.issuer+" (") || !strings.Contains(out, `claims ["groups"]`) {
		t.Fatalf("check printed:\n%s", out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String() + "/"
	l.Close()
	unreachable := filepath.Join(t.TempDir(), "down.yaml")
	if err := os.WriteFile(unreachable, []byte(oauthConfig+strings.Replace(section, r.idp.issuer, down, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runServerCmd(t, "", "check", "--config", unreachable); code != 1 || !strings.Contains(errs, unreachable+": oauth: ") {
		t.Fatalf("check with the issuer down: exit %d, %s", code, errs)
	}

	s := startServer(t, "--config", withOAuth)
	app := r.idp.client(t, []string{"authorization_code"}, oauthScope, r.resource)
	cs := s.connect(t, r.idp.userToken(t, app, "alice", oauthScope, r.resource, map[string]any{"groups": []string{"eng"}}))
	if text, err := readText(t, cs, "note://notes/eng-plan"); err != nil || text != "the engineering plan" {
		t.Fatalf("alice through the file's oauth section: %q, %v", text, err)
	}
	if resp, _ := postMCP(t, s.addr, ""); resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Fatalf("no token: HTTP %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	code, _, errs := runServerCmd(t, "", "serve", "--http", "127.0.0.1:0", "--config", withOAuth, "--oauth-issuer", r.idp.issuer)
	if code != 1 || !strings.Contains(errs, "sets oauth: give no --oauth-* flag as well") {
		t.Fatalf("flags beside the file's oauth: exit %d, %s", code, errs)
	}
}

// TestOAuthScopesGateAResourceOfTheFile gives one resource of the file a
// scope of its own: a token without it does not see the resource in the
// template list and reads it as unavailable (as a URI nothing serves),
// while the resource beside it still reads; a token with the scope reads
// both.
func TestOAuthScopesGateAResourceOfTheFile(t *testing.T) {
	r := newOAuthRig(t)
	gated := strings.Replace(oauthConfig, "    description: The identity the database sees\n",
		"    description: The identity the database sees\n    scopes: [notes:whoami]\n", 1)
	if gated == oauthConfig {
		t.Fatal("the whoami resource was not found in the file")
	}
	if err := os.WriteFile(r.config, []byte(gated), 0o600); err != nil {
		t.Fatal(err)
	}
	app := r.idp.client(t, []string{"authorization_code"}, oauthScope+" notes:whoami", r.resource)
	groups := map[string]any{"groups": []string{"eng"}}
	plain := r.idp.userToken(t, app, "alice", oauthScope, r.resource, groups)
	scoped := r.idp.userToken(t, app, "alice", oauthScope+" notes:whoami", r.resource, groups)
	s := r.serve(t)
	for _, c := range []struct {
		name   string
		token  string
		whoami bool
	}{{"without the scope", plain, false}, {"with the scope", scoped, true}} {
		cs := s.connect(t, c.token)
		if text, err := readText(t, cs, "note://notes/eng-plan"); err != nil || text != "the engineering plan" {
			t.Errorf("%s: the ungated note: %q, %v", c.name, text, err)
		}
		_, err := readText(t, cs, "note://whoami/x")
		if c.whoami != (err == nil) {
			t.Errorf("%s: whoami read error %v", c.name, err)
		}
		tl, err := cs.ListResourceTemplates(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		listed := false
		for _, tm := range tl.ResourceTemplates {
			listed = listed || tm.Name == "whoami"
		}
		if listed != c.whoami {
			t.Errorf("%s: whoami listed %v, want %v", c.name, listed, c.whoami)
		}
	}
}
