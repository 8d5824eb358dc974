package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"go.phpboyscout.uk/mcp/resources/mcpsdk/oauth"
)

// hashToken is the tokens-file hash of token, for the tests' files.
func hashToken(token string) string { return oauth.HashToken(token) }

// In tokens mode a 401 carries a Bearer challenge (RFC 6750 section 3),
// with error="invalid_token" only when a bearer token was given (section
// 3.1): not for none, Basic, DPoP or an empty Bearer.
func TestTokensModeChallenges(t *testing.T) {
	tt, err := parseTokens(strings.NewReader("alice " + hashToken("alice-token") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(tt.protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, auth.TokenInfoFromContext(r.Context()).UserID)
	})))
	t.Cleanup(srv.Close)
	do := func(authz string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", nil)
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
	const realm = `realm="mcp-resources"`
	for _, tc := range []struct{ authz, challenge string }{
		{"", "Bearer " + realm},
		{"Basic YWxpY2U6cGFzcw==", "Bearer " + realm},
		{"DPoP alice-token", "Bearer " + realm},
		{"Bearer ", "Bearer " + realm},
		{"Bearer wrong-token", `Bearer error="invalid_token", ` + realm},
	} {
		if resp, _ := do(tc.authz); resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != tc.challenge {
			t.Errorf("%q: HTTP %d, WWW-Authenticate %q; want 401, %q", tc.authz, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), tc.challenge)
		}
	}
	if resp, body := do("Bearer alice-token"); resp.StatusCode != 200 || body != "alice" {
		t.Fatalf("alice's token: HTTP %d %q", resp.StatusCode, body)
	}
}

// --principal is refused, not rewritten, when it is not a valid principal.
func TestServeRefusesAnInvalidPrincipalFlag(t *testing.T) {
	for _, p := range []string{"ali\xffce", "ali\u202Ece", " alice", "alice\u2028"} {
		code, _, stderr := runArgs(t, t.Context(), "serve", "--principal", p)
		if code != 1 || !strings.Contains(stderr, "--principal: core: invalid principal") {
			t.Errorf("--principal %q: exit %d, %s", p, code, stderr)
		}
	}
}
