package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Anonymous HTTP is refused on an address other hosts can reach, with one
// line naming --tokens and --anonymous, and --anonymous is refused where it
// means nothing.
func TestAnonymousHTTPOffLoopbackIsRefused(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte("alice sha256:"+strings.Repeat("ab", 32)+"\n"), 0o600)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"every IPv4 interface", []string{"serve", "--http=0.0.0.0:0"}, "--anonymous"},
		{"an empty host", []string{"serve", "--http=:0"}, "not a loopback address"},
		{"every IPv6 interface", []string{"serve", "--http=[::]:0"}, "give --tokens or an OAuth issuer"},
		{"anonymous over stdio", []string{"serve", "--anonymous"}, "--anonymous needs --http"},
		{"anonymous with tokens", []string{"serve", "--http=0.0.0.0:0", "--anonymous", "--tokens=" + tokens}, "contradicts"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			code, stdout, stderr := runArgs(t, ctx, c.args...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], "mcp-resources: ") || !strings.Contains(lines[0], c.want) || stdout != "" {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and one line saying %q", code, stderr, c.want)
			}
		})
	}
}

// lockedBuffer is a bytes.Buffer a running command writes while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveUntilListening runs serve with args in-process until it logs its
// address, then stops it, and returns its exit status and stderr.
func serveUntilListening(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"serve"}, args...), strings.NewReader(""), &bytes.Buffer{}, &stderr)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stderr.String(), `msg="serving MCP over streamable HTTP"`) {
		select {
		case code := <-done:
			return code, stderr.String()
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	return <-done, stderr.String()
}

// --anonymous serves every interface, with a WARN line; a loopback
// address needs no flag and logs no warning.
func TestAnonymousHTTPWhenAskedForOrOnLoopback(t *testing.T) {
	code, stderr := serveUntilListening(t, "--http=0.0.0.0:0", "--anonymous")
	if code != 0 || !strings.Contains(stderr, `level=WARN msg="serving HTTP with no authentication on an address other hosts may reach (--anonymous): every client is served as principal demo"`) {
		t.Errorf("--anonymous on 0.0.0.0: exit %d\n%s", code, stderr)
	}
	for _, addr := range []string{"localhost:0", "127.0.0.1:0"} {
		code, stderr := serveUntilListening(t, "--http="+addr)
		if code != 0 || strings.Contains(stderr, "level=WARN") || !strings.Contains(stderr, `authentication="none: every request is served as principal demo"`) {
			t.Errorf("%s: exit %d\n%s", addr, code, stderr)
		}
	}
}

func TestLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.8.9.10:1": true, "localhost:80": true, "LocalHost:80": true,
		"[::1]:8080": true, "[::1%lo]:8080": true,
		"0.0.0.0:8080": false, ":8080": false, "[::]:8080": false, "10.0.0.1:80": false,
		"example.com:80": false, "localhost.example.com:80": false, "127.0.0.1": false, "[::ffff:10.0.0.1]:1": false,
	} {
		if got := loopbackAddr(addr); got != want {
			t.Errorf("loopbackAddr(%q) = %v, want %v", addr, got, want)
		}
	}
}
