package main

import (
	"strings"
	"testing"
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
