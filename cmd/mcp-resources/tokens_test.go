package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

func TestTokensFileMapsTokensToPrincipals(t *testing.T) {
	file := "# comment\n\nalice " + hashToken("alice-token") + "\n  bob\t" + hashToken("bob-token") + "  \n"
	tt, err := parseTokens(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	for token, want := range map[string]string{"alice-token": "alice", "bob-token": "bob"} {
		if got, ok := tt.principal(token); !ok || got != want {
			t.Errorf("%s: got %q %v, want %q", token, got, ok, want)
		}
	}
	for _, bad := range []string{"", "alice", "alice-token ", hashToken("alice-token")} {
		if got, ok := tt.principal(bad); ok {
			t.Errorf("token %q was accepted as %q", bad, got)
		}
	}
}

func TestTokensFileErrorsNameTheLineNotTheSecret(t *testing.T) {
	for name, file := range map[string]string{
		"plain token instead of hash": "alice supersecret\n",
		"short hash":                  "alice sha256:abcd\n",
		"three fields":                "alice " + hashToken("x") + " extra\n",
		"duplicate hash":              "a " + hashToken("x") + "\nb " + hashToken("x") + "\n",
		"empty":                       "# nothing\n",
		"control in principal":        "al\x01ice " + hashToken("x") + "\n",
	} {
		_, err := parseTokens(strings.NewReader(file))
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if strings.Contains(err.Error(), "supersecret") {
			t.Errorf("%s: the error repeats the file's content: %v", name, err)
		}
	}
}

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

// A tokens file's principal is checked by core.CheckPrincipal, as written:
// invalid UTF-8, U+FFFD, C1 and bidi controls, separators are refused with
// an error that names the line only.
func TestTokensFileRefusesInvalidPrincipals(t *testing.T) {
	for name, p := range map[string]string{
		"\\xff":  "ali\xffce",
		"\\xfe":  "ali\xfece",
		"U+FFFD": "ali\uFFFDce",
		"U+0085": "ali\u0085ce",
		"U+2028": "ali\u2028ce",
		"U+202E": "ali\u202Ece",
		"U+200B": "ali\u200Bce",
	} {
		_, err := parseTokens(strings.NewReader("bob " + hashToken("b") + "\n" + p + " " + hashToken("a") + "\n"))
		if err == nil || !strings.HasPrefix(err.Error(), "line 2: ") || strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want line 2 refused without quoting it", name, err)
		}
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
