package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A --sessions run raises the caps the binary has, and only those: an
// older build that lacks a flag would refuse to start with it.
func TestSessionArgsRaiseOnlyTheCapsTheBinaryHas(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "serve")
	help := "#!/bin/sh\necho '  --max-sessions=1000   Most HTTP sessions'\necho '  --max-subscriptions-per-principal=1000'\necho '  --max-sessions-per-principal-typo'\n"
	if err := os.WriteFile(bin, []byte(help), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := sessionArgs(t.Context(), bin, 1500)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"--max-sessions=1650", "--max-subscriptions-per-principal=1650"}; !slices.Equal(got, want) {
		t.Errorf("args = %q, want %q", got, want)
	}
}
