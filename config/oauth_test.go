package config

import (
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
