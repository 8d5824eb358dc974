package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The OAuth flags refuse the combinations that would make a server accept
// tokens ambiguously or not at all, each with one line.
func TestOAuthFlagCombinations(t *testing.T) {
	iss := "--oauth-issuer=https://id.example.test/"
	res := "--oauth-resource=https://mcp.example.test/mcp"
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"over stdio", []string{"serve", iss, res}, "an OAuth issuer needs --http"},
		{"with a tokens file", []string{"serve", "--http=127.0.0.1:0", "--tokens=/dev/null", iss, res}, "give --tokens or an OAuth issuer"},
		{"without a resource", []string{"serve", "--http=127.0.0.1:0", iss}, "needs --oauth-resource"},
		{"a resource without an issuer", []string{"serve", "--http=127.0.0.1:0", res}, "need --oauth-issuer"},
		{"a skew over the bound", []string{"serve", "--http=127.0.0.1:0", iss, res, "--oauth-clock-skew=1h"}, "clock skew"},
		{"a relative resource", []string{"serve", "--http=127.0.0.1:0", iss, "--oauth-resource=/mcp"}, "http(s)"},
		{"a scope with a quote", []string{"serve", "--http=127.0.0.1:0", iss, res, `--oauth-scope=a"b`}, "scope"},
		{"a client id without introspection", []string{"serve", "--http=127.0.0.1:0", iss, res, "--oauth-client-id=mcp"}, "are for --oauth-introspection-url"},
		{"introspection without a secret", []string{"serve", "--http=127.0.0.1:0", iss, res, "--oauth-introspection-url=https://id.example.test/introspect", "--oauth-client-id=mcp"}, "needs a client id and secret"},
		{"introspection at a relative URL", []string{"serve", "--http=127.0.0.1:0", iss, res, "--oauth-introspection-url=/introspect", "--oauth-client-id=mcp", "--oauth-client-secret=s"}, "absolute http(s) URL"},
		{"an audience without an issuer", []string{"serve", "--http=127.0.0.1:0", "--oauth-audience=api://default"}, "need --oauth-issuer"},
		{"a claim path with an empty segment", []string{"serve", "--http=127.0.0.1:0", iss, res, "--oauth-claims=realm_access..roles"}, "empty path segment"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			code, _, stderr := runArgs(t, ctx, c.args...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], c.want) {
				t.Fatalf("exit %d, stderr %q; want exit 1 and one line saying %q", code, stderr, c.want)
			}
		})
	}
}
