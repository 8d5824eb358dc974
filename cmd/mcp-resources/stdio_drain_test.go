package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
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

// Issue 46, defect 6: over stdio, closing stdin with a subscriptions/listen
// open waited out the whole --grace, and the listen was never answered
// (SIGTERM exited at once). The end of input answers the listen with its
// result, and run returns well within the grace.
func TestStdinEOFAnswersAnOpenListenAndExitsWithoutWaitingOutTheGrace(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		c := run(context.Background(), []string{"serve", "--grace=30s"}, inR, outW, &stderr)
		outW.Close()
		code <- c
	}()
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	await := func(what string) string {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("stdout ended before %s (exit %d): %s", what, <-code, stderr.String())
				}
				if strings.Contains(l, what) {
					return l
				}
			case <-timeout:
				t.Fatalf("no %s after 20 s", what)
			}
		}
	}
	send := func(l string) {
		t.Helper()
		if _, err := io.WriteString(inW, l+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(initializeBody("1"))
	await(`"id":1`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(listenRequest("7"))
	await("notifications/subscriptions/acknowledged")
	start := time.Now()
	inW.Close()
	answer := await(`"id":7`)
	var m struct {
		Result json.RawMessage
		Error  json.RawMessage
	}
	if err := json.Unmarshal([]byte(answer), &m); err != nil || m.Result == nil {
		t.Fatalf("the listen was answered with %s, want its result", answer)
	}
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit %d: %s", c, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run had not returned 20 s after stdin closed (grace 30 s)")
	}
	took := time.Since(start)
	t.Logf("stdin closed with an open listen: answered, run returned after %v", took.Round(time.Millisecond))
	if took > 5*time.Second {
		t.Errorf("run returned %v after stdin closed, want well under the 30 s grace", took)
	}
}
