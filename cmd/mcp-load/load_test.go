//go:build load

package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestLoadAndFaultRunPassesAgainstTheRealServices runs the command in
// process, as `go test -tags load ./cmd/mcp-load` with the services of
// scripts/services.sh up: a short load with faults and a recovery phase
// against a freshly built server. It proves the whole driver end to end
// (setup, checks, faults, baseline, teardown) and that the current server
// passes it. Without the services it skips, or fails under
// MCPRES_INTEGRATION=require.
func TestLoadAndFaultRunPassesAgainstTheRealServices(t *testing.T) {
	needServices(t)
	var out, log bytes.Buffer
	code := run(t.Context(), []string{"--clients=4", "--duration=5s", "--warmup=1s", "--recovery=2s", "--faults", "--progress=5s"}, &out, &log)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), log.String())
	}
	for _, want := range []string{"phase load+faults: 4 clients", "faults injected: ", "phase recovery: 4 clients", "  wrong: 0\n", "RESULT: PASS"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestSessionsRunReportsTheServersMemory holds a few subscribed sessions
// on a freshly built server and reports its memory with them, then finds
// it back at its baseline.
func TestSessionsRunReportsTheServersMemory(t *testing.T) {
	needServices(t)
	var out, log bytes.Buffer
	if code := run(t.Context(), []string{"--sessions=20"}, &out, &log); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), log.String())
	}
	for _, want := range []string{"sessions: 20 opened and subscribed in ", "the server holds 20 sessions", "sessions 20: server RSS before ", "RESULT: PASS"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}

// needServices skips t without the services of scripts/services.sh, or
// fails it under MCPRES_INTEGRATION=require.
func needServices(t *testing.T) {
	t.Helper()
	if os.Getenv("MCPRES_POSTGRES_URL") == "" || os.Getenv("MCPRES_VERSITYGW") == "" {
		msg := "MCPRES_POSTGRES_URL and MCPRES_VERSITYGW are needed: eval \"$(scripts/services.sh up)\" and export MCPRES_VERSITYGW"
		if os.Getenv("MCPRES_INTEGRATION") == "require" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}
