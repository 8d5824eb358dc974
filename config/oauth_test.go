package config

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// lineOf is the line of good on which text starts, or, for "", the line
// that text appended to good starts on.
func lineOf(t *testing.T, text string) int {
	t.Helper()
	if text == "" {
		return strings.Count(good, "\n") + 1
	}
	i := strings.Index(good, text)
	if i < 0 {
		t.Fatalf("the base file has no %q", text)
	}
	return strings.Count(good[:i], "\n") + 1
}

// The oauth section and resource scopes: each mistake is one line at the
// section (or the key) that is wrong, as for every other part of a file.
func TestBrokenOAuthSettings(t *testing.T) {
	const body = "    body: SELECT body"
	const iss = "oauth:\n  issuer: https://id.example.test/\n"
	for _, tc := range []struct {
		name, file string
		line       int
		want       string
	}{
		{"oauth without a resource", good + iss, lineOf(t, ""), "oauth: resource is required"},
		{"oauth with a relative resource", good + iss + "  resource: /mcp\n", lineOf(t, ""), "http(s)"},
		{"oauth with a skew over the bound", good + iss + "  resource: https://mcp.example.test/mcp\n  clock_skew: 1h\n", lineOf(t, ""), "clock skew"},
		{"oauth with a quote in a scope", good + iss + "  resource: https://mcp.example.test/mcp\n  scopes: ['a\"b']\n", lineOf(t, ""), "scope"},
		{"an unknown oauth key", good + iss + "  resource: https://mcp.example.test/mcp\n  audience: x\n", lineOf(t, "") + 3, "unknown key"},
		{"a resource scope with a space", edit(t, body, "    scopes: [\"a b\"]\n"+body), lineOf(t, body), "resources.doc.scopes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("broken.yaml", []byte(tc.file), testOptions)
			if err == nil {
				t.Fatal("loaded without an error")
			}
			checkErrorLine(t, err, "broken.yaml:"+strconv.Itoa(tc.line)+":", tc.want, canary)
		})
	}
}

// A good oauth section gives the verifier and resource server options it
// says, with the scopes of single resources advertised beside the
// required ones.
func TestOAuthOptionsOfTheFile(t *testing.T) {
	file := edit(t, "    body: SELECT body", "    scopes: [docs:read, extra]\n    body: SELECT body") +
		"oauth:\n  issuer: https://id.example.test/\n  resource: https://mcp.example.test/mcp\n  scopes: [docs:read]\n" +
		"  claims: [groups]\n  principal_claim: email\n  clock_skew: 1m\n"
	f, err := Parse("good.yaml", []byte(file), testOptions)
	if err != nil {
		t.Fatal(err)
	}
	vo, ro := f.OAuthOptions()
	if vo.Issuer != "https://id.example.test/" || vo.Resource != "https://mcp.example.test/mcp" || vo.PrincipalClaim != "email" ||
		strings.Join(vo.Claims, ",") != "groups" || vo.ClockSkew.String() != "1m0s" || ro.ClockSkew != vo.ClockSkew {
		t.Fatalf("verifier options %+v, resource options %+v", vo, ro)
	}
	if strings.Join(ro.Scopes, " ") != "docs:read" || strings.Join(ro.ScopesSupported, " ") != "docs:read extra" {
		t.Fatalf("scopes %v, supported %v", ro.Scopes, ro.ScopesSupported)
	}
	if vo, ro := (&File{}).OAuthOptions(); vo != nil || ro != nil {
		t.Fatal("options without an oauth section")
	}
}

// The oauth section's audiences, claim paths and introspection: each
// mistake is one line at the key (or the value) that is wrong, and never
// quotes the client secret.
func TestBrokenOAuthAudiencesClaimsAndIntrospection(t *testing.T) {
	base := good + "oauth:\n  issuer: https://id.example.test/\n  resource: https://mcp.example.test/mcp\n"
	l := lineOf(t, "") + 3 // the first line after resource
	at := func(line, col int) string { return "broken.yaml:" + strconv.Itoa(line) + ":" + strconv.Itoa(col) + ":" }
	const intro = "  introspection:\n    url: https://id.example.test/introspect\n    client_id: mcp\n"
	seventeen := strings.Repeat("a,", 16) + "q"
	for _, tc := range []struct {
		name, add, at, want string
	}{
		{"an empty audience", "  audiences: ['']\n", at(l, 3), "oauth.audiences: give 1 to 16 audiences"},
		{"17 audiences", "  audiences: [" + seventeen + "]\n", at(l, 3), "oauth.audiences: give 1 to 16"},
		{"audiences not a list", "  audiences: api://default\n", at(l, 14), "oauth.audiences: expects a list of strings"},
		{"a claim path with an empty segment", "  claims: [groups, realm_access..roles]\n", at(l, 3), "oauth.claims: the claim name \"realm_access..roles\""},
		{"introspection without a secret", intro, at(l, 3), "oauth.introspection: client_secret is required"},
		{"introspection without a URL", "  introspection:\n    client_id: mcp\n    client_secret: ${SECRET}\n", at(l, 3), "oauth.introspection: url is required"},
		{"a secret written in the file", intro + "    client_secret: hunter2-" + canary + "\n", at(l+3, 20), "oauth.introspection.client_secret: must be one ${NAME} reference"},
		{"a secret that expands to nothing", intro + "    client_secret: ${EMPTY}\n", at(l+3, 20), "oauth.introspection.client_secret: is required, and its ${...} expands to nothing"},
		{"a secret from an unset variable", intro + "    client_secret: ${UNSET}\n", at(l+3, 20), "the environment variable UNSET is not set"},
		{"a relative introspection URL", "  introspection:\n    url: /introspect\n    client_id: mcp\n    client_secret: ${SECRET}\n", at(l+1, 10), "oauth.introspection.url: the introspection URL must be an absolute http(s) URL"},
		{"an unknown introspection key", intro + "    client_secret: ${SECRET}\n    token_type_hint: x\n", at(l+4, 5), "oauth.introspection: unknown key \"token_type_hint\""},
		{"introspection not a mapping", "  introspection: https://id.example.test/introspect\n", at(l, 18), "oauth.introspection: expects a mapping of url, client_id, client_secret"},
		{"${} in an audience", "  audiences: ['${AUD}']\n", at(l, 15), "expanded only in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("broken.yaml", []byte(base+tc.add), testOptions)
			if err == nil {
				t.Fatal("loaded without an error")
			}
			checkErrorLine(t, err, tc.at, tc.want, canary)
		})
	}
}

// Audiences, claim paths and introspection reach the verifier's options as
// the file writes them, the client secret from the environment; the
// section's values never print the secret.
func TestOAuthFileAudiencesClaimPathsAndIntrospection(t *testing.T) {
	const secret = "the-client-secret-value"
	opts := &Options{LookupEnv: func(name string) (string, bool) {
		switch name {
		case "CLIENT_SECRET":
			return secret, true
		case "INTROSPECT_URL":
			return "", false
		}
		return testEnv(name)
	}}
	file := good + "oauth:\n  issuer: https://id.example.test/\n  resource: https://mcp.example.test/mcp\n" +
		"  audiences: [6e74172b-be56-4843-9ff4-e66a39bb12e3, api://default]\n  claims: [realm_access.roles, https://example.com/groups]\n" +
		"  introspection:\n    url: ${INTROSPECT_URL:-https://id.example.test/introspect}\n    client_id: mcp-resources\n    client_secret: ${CLIENT_SECRET}\n"
	f, err := Parse("good.yaml", []byte(file), opts)
	if err != nil {
		t.Fatal(err)
	}
	vo, ro := f.OAuthOptions()
	if strings.Join(vo.Audiences, " ") != "6e74172b-be56-4843-9ff4-e66a39bb12e3 api://default" ||
		strings.Join(vo.Claims, " ") != "realm_access.roles https://example.com/groups" {
		t.Fatalf("audiences %q, claims %q", vo.Audiences, vo.Claims)
	}
	in := vo.Introspection
	if in == nil || in.URL != "https://id.example.test/introspect" || in.ClientID != "mcp-resources" || in.ClientSecret != secret {
		t.Fatalf("introspection %+v", in)
	}
	if vo.PrincipalClaim != "sub" || vo.ClockSkew.String() != "30s" || ro.Resource != vo.Resource || ro.ClockSkew != vo.ClockSkew {
		t.Fatalf("defaults: principal %q, skew %v, resource options %+v", vo.PrincipalClaim, vo.ClockSkew, ro)
	}
	sec := f.OAuth.Introspection
	if s := fmt.Sprintf("%v %+v %#v %s %v", *sec, sec, sec, sec.ClientSecret, f.OAuth); strings.Contains(s, secret) {
		t.Fatalf("the section prints its secret: %s", s)
	}
}

// The file forms of docs/identity.md's oauth sections load as the page
// shows them.
func TestOAuthSectionsOfTheIdentityPageLoad(t *testing.T) {
	page, err := os.ReadFile("../docs/identity.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(oauth:\n.*?)```").FindAllSubmatch(page, -1)
	if len(blocks) < 2 {
		t.Fatalf("docs/identity.md shows %d oauth sections, want the introspecting and the Entra ID one", len(blocks))
	}
	for _, b := range blocks {
		f, err := Parse("identity.yaml", append([]byte(good), b[1]...), testOptions)
		if err != nil {
			t.Fatalf("%v\n%s", err, b[1])
		}
		if vo, _ := f.OAuthOptions(); vo.Introspection == nil && len(vo.Audiences) == 0 {
			t.Errorf("a section with neither introspection nor audiences:\n%s", b[1])
		}
	}
}
