package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serve --audit-file writes one JSON line per resource request of a stdio
// session, flushed by the time the process has exited, and none holds a
// body.
func TestAuditFileRecordsStdioReads(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd := exec.Command(binary(t), "serve", "--audit-file="+path, "--audit-on-failure=refuse")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCPRES_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stderr := &wireTap{}
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "audit-test", Version: "9"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	var bodies []string
	for _, uri := range []string{demoReadme, demoBundle, demoReadme} {
		r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		for _, c := range r.Contents {
			if len(c.Text) > 8 {
				bodies = append(bodies, c.Text)
			}
		}
	}
	if _, err := cs.ListResources(ctx, nil); err != nil {
		t.Fatal(err)
	}
	cs.Close() // ends stdin: the server drains, flushes the trail and exits
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 4 {
		t.Fatalf("%d audit lines, want 4:\n%s\nstderr:\n%s", len(lines), b, stderr.String())
	}
	for i, want := range []string{`"method":"resources/read","uri":"` + demoReadme + `"`, `"uri":"` + demoBundle + `"`,
		`"uri":"` + demoReadme + `"`, `"method":"resources/list"`} {
		if !strings.Contains(lines[i], want) || !strings.Contains(lines[i], `"client":"audit-test/9","transport":"stdio"`) {
			t.Errorf("line %d: %s, want %s", i, lines[i], want)
		}
	}
	for _, body := range bodies {
		if strings.Contains(string(b), body) {
			t.Errorf("the audit file holds a body: %q", body)
		}
	}
	if len(bodies) == 0 {
		t.Fatal("no text body to look for")
	}
	if !strings.Contains(stderr.String(), "audit: trail flushed") {
		t.Errorf("no flush record in the log:\n%s", stderr.String())
	}
}
