package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// conformanceEnv names the official MCP conformance suite's command (the
// conformance binary of the @modelcontextprotocol/conformance npm package,
// installed outside the repository: npm install in a temporary directory,
// then MCPRES_CONFORMANCE=DIR/node_modules/.bin/conformance). Version 0.1.13
// is the newest that runs on Node 20; later ones need Node 22.
const conformanceEnv = "MCPRES_CONFORMANCE"

func TestConformanceSuiteCompletionCompletePasses(t *testing.T) {
	suite := os.Getenv(conformanceEnv)
	if suite == "" {
		t.Skipf("set %s to the conformance suite's binary to run it", conformanceEnv)
	}
	s := startHTTP(t)
	out, err := exec.Command(suite, "server", "--url", "http://"+s.addr+"/mcp", "--scenario", "completion-complete").CombinedOutput()
	t.Logf("conformance completion-complete:\n%s", tail(string(out), 2000))
	if err != nil || !strings.Contains(string(out), "0 failed") {
		t.Fatalf("the conformance scenario failed: %v", err)
	}
}

// The scenario's substance, checked without the suite: the server declares
// completions, so a prompt reference gets an empty completion, not -32601.
func TestPromptCompletionIsEmptyNotMethodNotFound(t *testing.T) {
	s := startStdio(t)
	s.send(initializeBody("1"))
	if a := string(s.await("1")); !strings.Contains(a, `"completions":{}`) {
		t.Fatalf("initialize does not declare completions: %s", a)
	}
	s.send(`{"jsonrpc":"2.0","id":2,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"x","value":"a"}}}`)
	if a := string(s.await("2")); !strings.Contains(a, `"completion":{"values":[]}`) {
		t.Fatalf("a prompt completion answered %s, want an empty completion", a)
	}
}
