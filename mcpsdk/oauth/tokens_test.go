package oauth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Tokens.Verify is a go-sdk auth.TokenVerifier.
var _ auth.TokenVerifier = (*Tokens)(nil).Verify

func TestTokensFileMapsTokensToPrincipals(t *testing.T) {
	file := "# comment\n\nalice " + HashToken("alice-token") + "\n  bob\t" + HashToken("bob-token") + "  \n"
	tt, err := ParseTokens(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	for token, want := range map[string]string{"alice-token": "alice", "bob-token": "bob"} {
		if info, err := tt.Verify(t.Context(), token, nil); err != nil || info.UserID != want || !info.Expiration.IsZero() {
			t.Errorf("%s: got %+v %v, want %q and no expiration", token, info, err, want)
		}
	}
	for _, bad := range []string{"", "alice", "alice-token ", HashToken("alice-token")} {
		if info, err := tt.Verify(t.Context(), bad, nil); !errors.Is(err, auth.ErrInvalidToken) || info != nil {
			t.Errorf("token %q: %+v %v, want auth.ErrInvalidToken", bad, info, err)
		}
	}
}

func TestTokensFileErrorsNameTheLineNotTheSecret(t *testing.T) {
	for name, file := range map[string]string{
		"plain token instead of hash": "alice supersecret\n",
		"short hash":                  "alice sha256:abcd\n",
		"three fields":                "alice " + HashToken("x") + " extra\n",
		"duplicate hash":              "a " + HashToken("x") + "\nb " + HashToken("x") + "\n",
		"empty":                       "# nothing\n",
		"control in principal":        "al\x01ice " + HashToken("x") + "\n",
	} {
		_, err := ParseTokens(strings.NewReader(file))
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if strings.Contains(err.Error(), "supersecret") {
			t.Errorf("%s: the error repeats the file's content: %v", name, err)
		}
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
		_, err := ParseTokens(strings.NewReader("bob " + HashToken("b") + "\n" + p + " " + HashToken("a") + "\n"))
		if err == nil || !strings.HasPrefix(err.Error(), "line 2: ") || strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want line 2 refused without quoting it", name, err)
		}
	}
}

// TokensLine writes the line ParseTokens reads back, and refuses a
// principal the file cannot hold without quoting it.
func TestTokensLineParsesBack(t *testing.T) {
	line, err := TokensLine("alice", "s3cret")
	if err != nil || strings.Contains(line, "s3cret") {
		t.Fatalf("%q %v", line, err)
	}
	tt, err := ParseTokens(strings.NewReader(line + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if info, err := tt.Verify(t.Context(), "s3cret", nil); err != nil || info.UserID != "alice" {
		t.Fatalf("%+v %v", info, err)
	}
	for _, p := range []string{"", "al ice", "ali\u202Ece", "ali\xffce"} {
		if _, err := TokensLine(p, "x"); err == nil || (p != "" && strings.Contains(err.Error(), p)) {
			t.Errorf("principal %q: %v, want a refusal that does not quote it", p, err)
		}
	}
}

// A Go host protects its handler with the file through
// RequireStaticToken: a token of the file reaches the handler as its
// principal, and a token without expiration is not refused for lacking one.
func TestTokensProtectAHandler(t *testing.T) {
	tt, err := ParseTokens(strings.NewReader("alice " + HashToken("alice-token") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := RequireStaticToken(tt.Verify, "host")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(auth.TokenInfoFromContext(r.Context()).UserID))
	}))
	for token, want := range map[string]int{"alice-token": 200, "bob-token": 401} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		h.ServeHTTP(rec, req)
		if rec.Code != want || want == 200 && rec.Body.String() != "alice" {
			t.Errorf("%s: HTTP %d %q, want %d", token, rec.Code, rec.Body.String(), want)
		}
	}
}

// FuzzParseTokens: any tokens file either parses into principals that are
// valid and tokens that verify by their own hash, or fails with an error
// that repeats none of the file's secrets.
func FuzzParseTokens(f *testing.F) {
	f.Add("alice " + HashToken("a") + "\n")
	f.Add("# c\n\nbob\t" + HashToken("b") + "  \n")
	f.Add("alice plaintext-secret-token\n")
	f.Add("a sha256:" + strings.Repeat("g", 64))
	f.Add("\x00 \xff\n")
	f.Fuzz(func(t *testing.T, file string) {
		tt, err := ParseTokens(strings.NewReader(file))
		if err != nil {
			for _, line := range strings.Split(file, "\n") {
				fields := strings.Fields(line)
				if len(fields) >= 2 && len(fields[1]) >= 12 && strings.Contains(err.Error(), fields[1]) {
					t.Fatalf("the error %q repeats a secret of the file", err)
				}
			}
			return
		}
		for _, e := range tt.entries {
			if e.principal == "" || checkTokensPrincipal(e.principal) != nil {
				t.Fatalf("accepted principal %q", e.principal)
			}
		}
	})
}
