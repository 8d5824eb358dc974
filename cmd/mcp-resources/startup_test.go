package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// holdingServer is a TCP listener that accepts connections and never
// answers them: a PostgreSQL whose start-up checks are held until the test
// calls release, which closes every connection held and every later one.
func holdingServer(t *testing.T) (addr string, first <-chan struct{}, release func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		held     []net.Conn
		released bool
	)
	once := make(chan struct{})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if released {
				c.Close()
			} else {
				if held = append(held, c); len(held) == 1 {
					close(once)
				}
			}
			mu.Unlock()
		}
	}()
	release = func() {
		mu.Lock()
		defer mu.Unlock()
		released = true
		for _, c := range held {
			c.Close()
		}
		held = nil
	}
	t.Cleanup(func() { ln.Close(); release() })
	return ln.Addr().String(), once, release
}

// rpcLine is one JSON-RPC response line of the server.
type rpcLine struct {
	ID     int             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// TestInitializeIsAnsweredWhileTheStorageCheckIsHeld proves the start-up
// order of serve --postgres over stdio: while the check's connection is
// held (accepted, never answered), initialize, resources/list and ping are
// answered and a resources/read waits (its answer comes after ping's,
// which was sent after it); once the check fails the read is answered as
// a storage outage and serve exits 1 with the check's one line, in the
// flag's terms.
func TestInitializeIsAnsweredWhileTheStorageCheckIsHeld(t *testing.T) {
	addr, first, release := holdingServer(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &wireTap{}
	code := make(chan int, 1)
	go func() {
		code <- run(t.Context(), []string{"serve", "--postgres=postgres://u@" + addr + "/db?sslmode=disable&connect_timeout=60"}, inR, outW, stderr)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() rpcLine {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the server's stdout ended (%v); stderr:\n%s", lines.Err(), stderr)
		}
		var l rpcLine
		if err := json.Unmarshal(lines.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", lines.Bytes(), err)
		}
		return l
	}

	<-first // the checks have begun, and wait on the held connections
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if l := next(); l.ID != 1 || l.Error != nil || !strings.Contains(string(l.Result), `"protocolVersion"`) {
		t.Fatalf("initialize while the check is held: %+v", l)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"resources/list","params":{}}`)
	if l := next(); l.ID != 2 || l.Error != nil || !strings.Contains(string(l.Result), "asset://projects") {
		t.Fatalf("resources/list while the check is held: %+v", l)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"asset://projects"}}`)
	send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	if l := next(); l.ID != 4 || l.Error != nil {
		t.Fatalf("want ping answered before the held read, got %+v", l)
	}
	release() // the checks fail: the server closed their connections
	l := next()
	if l.ID != 3 || l.Error == nil || l.Error.Code != -32603 || l.Error.Message != "resource storage is temporarily unavailable" ||
		string(l.Error.Data) != `{"retryable":true}` {
		t.Fatalf("the read after the check failed: %+v, want the storage outage", l)
	}
	inW.Close()
	if c := <-code; c != 1 {
		t.Fatalf("exit %d, want 1", c)
	}
	out := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(out) != 1 || !strings.HasPrefix(out[0], "mcp-resources: --postgres: cannot reach PostgreSQL at "+addr) {
		t.Fatalf("stderr %q: want one line --postgres: cannot reach PostgreSQL at %s", stderr, addr)
	}
}

// TestServeWithoutARequestStillFailsOnTheCheck proves a serve whose stdin
// ends before the check does still waits for it and exits 1 with its line.
func TestServeWithoutARequestStillFailsOnTheCheck(t *testing.T) {
	addr, first, release := holdingServer(t)
	stderr := &wireTap{}
	code := make(chan int, 1)
	go func() {
		code <- run(t.Context(), []string{"serve", "--postgres=postgres://u@" + addr + "/db?sslmode=disable&connect_timeout=60"},
			strings.NewReader(""), io.Discard, stderr)
	}()
	<-first
	release()
	if c := <-code; c != 1 || !strings.Contains(stderr.String(), "--postgres: cannot reach PostgreSQL") {
		t.Fatalf("exit %d, stderr %q", c, stderr)
	}
}

// TestHeldLogWritesOnlyWhenReleasedToKeep proves the held log: records
// before release are written in order with their attributes when kept,
// dropped otherwise, and later ones follow the release.
func TestHeldLogWritesOnlyWhenReleasedToKeep(t *testing.T) {
	for _, keep := range []bool{true, false} {
		var buf strings.Builder
		h := newHeldLog(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
		log := slog.New(h).With("component", "x")
		log.Info("one")
		log.WithGroup("g").Info("two", "k", 1)
		if buf.Len() != 0 {
			t.Fatalf("written before release: %q", buf.String())
		}
		h.release(context.Background(), keep)
		log.Info("three")
		want := "level=INFO msg=one component=x\nlevel=INFO msg=two component=x g.k=1\nlevel=INFO msg=three component=x\n"
		if !keep {
			want = ""
		}
		if buf.String() != want {
			t.Fatalf("keep %v: %q, want %q", keep, buf.String(), want)
		}
	}
}

// TestStartupWaitIsAnOutageAfterAFailedCheck proves wait's outcomes: nil
// after a check that passed, a core outage after one that failed, and a
// panicking check is a failure, not a crash.
func TestStartupWaitIsAnOutageAfterAFailedCheck(t *testing.T) {
	ctx := t.Context()
	for name, c := range map[string]struct {
		check func(context.Context) error
		fail  bool
	}{
		"passes": {func(context.Context) error { return nil }, false},
		"fails":  {func(context.Context) error { return errors.New("no") }, true},
		"panics": {func(context.Context) error { panic("boom") }, true},
		"none":   {nil, false},
	} {
		s := startChecks(ctx, c.check, nil, newHeldLog(slog.DiscardHandler))
		err := s.wait(ctx)
		if (err != nil) != c.fail || (err != nil && !errors.Is(err, errStartupFailed)) {
			t.Fatalf("%s: wait %v", name, err)
		}
		if c.fail && s.err == nil { // wait returned: done is closed, err set
			t.Fatalf("%s: ended without the check's error", name)
		}
		s.stop()
	}
}

// TestStartupAdmitsOnceServingMayBeginWhileTheChecksRun: a request that
// needs storage waits until the checks say serving may begin, not until
// they end; without that signal it waits for their end; after a failed
// check it is the outage, even once serving had begun.
func TestStartupAdmitsOnceServingMayBeginWhileTheChecksRun(t *testing.T) {
	ctx := t.Context()
	for _, withServing := range []bool{true, false} {
		release, outcome := make(chan struct{}), errors.New("a later statement is refused")
		if !withServing {
			outcome = nil
		}
		check := func(ctx context.Context) error {
			select {
			case <-release:
				return outcome
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		var serving chan struct{}
		if withServing {
			serving = make(chan struct{})
		}
		s := startChecks(ctx, check, serving, newHeldLog(slog.DiscardHandler))
		admitted := make(chan error, 1)
		go func() { admitted <- s.admit(ctx) }()
		select {
		case err := <-admitted:
			t.Fatalf("serving %v: admitted (%v) before serving began or the checks ended", withServing, err)
		case <-time.After(50 * time.Millisecond):
		}
		if withServing {
			close(serving)
			if err := <-admitted; err != nil {
				t.Fatalf("admit once serving began: %v", err)
			}
			close(release)
			<-s.done
			if err := s.admit(ctx); !errors.Is(err, errStartupFailed) {
				t.Fatalf("admit after the checks failed: %v, want the outage", err)
			}
		} else {
			close(release)
			if err := <-admitted; err != nil {
				t.Fatalf("admit without a serving signal, after the checks passed: %v", err)
			}
		}
		s.stop()
	}
}
