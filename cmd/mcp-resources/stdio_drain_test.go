package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestStdioAnswersEveryPipedRequestBeforeExiting pipes a whole session into
// the binary's stdin and closes it at once, as a script does: the server
// answers every request it was sent (initialize, a list, a read of each
// demo resource, a ping), in any order but each exactly once, then exits 0.
func TestStdioAnswersEveryPipedRequestBeforeExiting(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"resources/templates/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`,
	}
	for i := range 20 {
		lines = append(lines, `{"jsonrpc":"2.0","id":`+strconv.Itoa(100+i)+`,"method":"resources/read","params":{"uri":"demo://bundle/welcome"}}`)
	}
	cmd := exec.Command(binary(t), "serve")
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("serve: %v\n%s", err, errOut.String())
	}
	seen := map[int]int{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID    *int            `json:"id"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil || m.ID == nil {
			t.Fatalf("not an answer: %q (%v)", l, err)
		}
		if m.Error != nil {
			t.Errorf("request %d failed: %s", *m.ID, m.Error)
		}
		seen[*m.ID]++
	}
	if want := len(lines) - 1; len(seen) != want {
		t.Fatalf("%d requests answered, want %d:\n%s", len(seen), want, out.String())
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("request %d answered %d times", id, n)
		}
	}
}
