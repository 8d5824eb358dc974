package mcpsdk

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
)

// serveStdioEnv makes the test binary serve the test host over stdio.
const serveStdioEnv = "MCPSDK_TEST_SERVE_STDIO"

func TestMain(m *testing.M) {
	if mode := os.Getenv(serveStdioEnv); mode != "" {
		bindings, opts := (&testHost{slow: make(chan struct{})}).bindings(stdioTB{}), (*Options)(nil)
		if mode == "tools" { // tools_ts_test.go: the tool surface on
			bindings, opts = append(bindings, toolBindings(stdioTB{})...), toolServerOptions()
		}
		r, err := core.NewResources(bindings, (&testHost{}).policy())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := newServer(r, opts).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// Many of these tests wait (for notifications, node processes,
	// timeouts) while others are CPU-bound; at -test.parallel's default of
	// GOMAXPROCS, a 2-core machine runs only two at once and a waiting test
	// holds a core's turn. Unless the command line sets it, run up to
	// parallelTests at once so that the waits overlap the work.
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set && runtime.GOMAXPROCS(0) < parallelTests {
		flag.Set("test.parallel", strconv.Itoa(parallelTests))
	}
	os.Exit(m.Run())
}

// parallelTests is the least -test.parallel that TestMain runs with.
const parallelTests = 4

// childGORACE is the GORACE of this test binary started as a stdio
// server: the parent's, with atexit_sleep_ms=0, so that a race-built child
// exits as soon as its stdin closes instead of a second later (the race
// runtime's default pause at exit, which only waits for other goroutines to
// report). A race the child found is still reported, and still makes it
// exit with status 66.
func childGORACE() string {
	return strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
}

// stdioTB lets the test host's helpers run outside a test.
type stdioTB struct{ testing.TB }

func (stdioTB) Helper() {}
func (stdioTB) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(2)
}

// hostileURIs are 50 request URIs that must each get a JSON-RPC error and
// leave the session alive: every ASCII control character, DEL, NUL in
// several places, invalid and overlong UTF-8, lone surrogates, quote and
// backslash games, and one of 1 MiB.
func hostileURIs() []string {
	var out []string
	for c := 0; c < 0x20; c++ {
		out = append(out, "notes://items/"+string(rune(c)))
	}
	out = append(out,
		"notes://items/\x7f",
		"\x00",
		"notes\x00://readme",
		"notes://readme\x00",
		"notes://items/\xff",
		"notes://items/\xc0\xae",         // overlong '.'
		"notes://items/\xed\xa0\x80",     // surrogate
		"notes://items/%C0%AE",           // overlong in a capture
		"notes://items/%ED%A0%80",        // surrogate in a capture
		"notes://items/%00",              // NUL in a capture
		"notes://items/%zz",              // broken escape
		"notes://items/\xf4\x90\x80\x80", // above U+10FFFF
		`notes://items/"};\u0000\a\v`,    // JSON and Go escapes
		"notes://items/\\x00\\a\\v\\\"",  // backslashes
		"mcp-warning://read/00000000000000000000000000000000",
		"notes://user:pass@h/x",
		"notes://items/"+strings.Repeat("\x7f\x00\x1b", 100),
		"notes://items/"+strings.Repeat("a", 1<<20),
	)
	return out
}

func TestHostileURIsNeverEndAStdioSession(t *testing.T) {
	t.Parallel() // a subprocess of its own
	if testing.Short() {
		t.Skip("starts a subprocess")
	}
	uris := hostileURIs()
	if len(uris) != 50 {
		t.Fatalf("%d hostile URIs, want 50", len(uris))
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveStdioEnv+"=1", "GORACE="+childGORACE())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
		}
	})
	// The session is driven with hand-written JSON lines, so the hostile
	// bytes reach the server as they are: raw DEL and invalid UTF-8
	// inside the JSON string, control characters escaped as JSON demands.
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 16<<20)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatalf("the session ended: %v", err)
		}
	}
	recv := func(id int) map[string]json.RawMessage {
		t.Helper()
		for lines.Scan() {
			if !json.Valid(lines.Bytes()) {
				t.Fatalf("the server wrote invalid JSON: %q", lines.Bytes())
			}
			var m map[string]json.RawMessage
			json.Unmarshal(lines.Bytes(), &m)
			if string(m["id"]) == fmt.Sprint(id) {
				return m
			}
		}
		t.Fatalf("the session ended waiting for %d: %v", id, lines.Err())
		return nil
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	recv(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, uri := range uris {
		id := 100 + i
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":%s}}`, id, rawJSONString(uri)))
		m := recv(id)
		if m["error"] == nil && m["result"] != nil && !utf8.ValidString(uri) {
			// The SDK's JSON decoder turns invalid UTF-8 into U+FFFD
			// before the adapter sees it; the result is then a valid read.
			continue
		}
		var e struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(m["error"], &e); err != nil || e.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("hostile URI %d (%.40q): %s", i, uri, m["error"])
		}
		if strings.Contains(e.Message, "items") || len(e.Message) > 100 {
			t.Errorf("hostile URI %d echoed: %q", i, e.Message)
		}
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"notes://items/after"}}`)
	var res struct {
		Contents []struct{ Text string } `json:"contents"`
	}
	if err := json.Unmarshal(recv(2)["result"], &res); err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "item after" {
		t.Fatalf("normal read after the hostile ones: %+v, %v", res, err)
	}
	// A legacy list without params is a first page.
	send(`{"jsonrpc":"2.0","id":3,"method":"resources/list"}`)
	if m := recv(3); m["result"] == nil {
		t.Fatalf("list without params: %s", m["error"])
	}
}

// rawJSONString quotes s as a JSON string but leaves DEL and invalid UTF-8
// bytes raw, as a hostile peer would send them.
func rawJSONString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func TestHostileURIsNeverEndAnHTTPOrInMemorySession(t *testing.T) {
	t.Parallel() // independent; overlaps the tests that wait
	r, _ := newResources(t, core.ResourceLimits{})
	forEachClient(t, func(t *testing.T, kind transportKind, version string) {
		c := connect(t, newServer(r, nil), kind, version, "")
		ctx := context.Background()
		for i, uri := range hostileURIs() {
			_, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			if err == nil {
				if !utf8.ValidString(uri) {
					continue // the SDK client sent U+FFFD for the invalid bytes: a valid URI
				}
				t.Errorf("hostile URI %d (%.40q) was read", i, uri)
				continue
			}
			je := rpcError(t, err)
			switch {
			case je.Code == jsonrpc.CodeInvalidParams:
			case version == "" && (kind == stateful || kind == stateless) && (je.Code == -32005 || je.Code == -32020):
				// At 2026-07-28 the SDK's streamable transport carries the
				// URI in the Mcp-Name header: its client refuses to send
				// one a header cannot hold (-32005) and its server refuses
				// a header that does not match the body (-32020), both
				// before the adapter sees the request.
			default:
				t.Errorf("hostile URI %d: %d %q", i, je.Code, je.Message)
			}
		}
		res, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://items/after"})
		if err != nil || res.Contents[0].Text != "item after" {
			t.Fatalf("normal read after the hostile ones: %v", err)
		}
		if c.tap != nil {
			c.tap.messages(t) // every message the server wrote is valid JSON
		}
	})
}

func TestBearerClientsSeeTheirOwnListsAndCannotShareCursors(t *testing.T) {
	r, _ := newResources(t, core.ResourceLimits{})
	for _, kind := range []transportKind{stateful, stateless} {
		for _, v := range protocols {
			t.Run(fmt.Sprintf("%s/%q", kind, v), func(t *testing.T) {
				s := newServer(r, &Options{ListPageSize: 1})
				alice := connect(t, s, kind, v, "token-alice")
				bob := connect(t, s, kind, v, "token-bob")
				ctx := context.Background()
				all := func(c conn) (uris []string, first string) {
					var cursor string
					for {
						p, err := c.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
						if err != nil {
							t.Fatal(err)
						}
						for _, d := range p.Resources {
							uris = append(uris, d.URI)
						}
						if first == "" {
							first = p.NextCursor
						}
						if cursor = p.NextCursor; cursor == "" {
							return uris, first
						}
					}
				}
				a, aCursor := all(alice)
				b, bCursor := all(bob)
				if !slices.Contains(a, "own://alice/1") || !slices.Contains(a, "own://alice/2") || slices.Contains(a, "own://bob/1") {
					t.Errorf("alice listed %v", a)
				}
				if !slices.Contains(b, "own://bob/1") || slices.Contains(b, "own://alice/1") {
					t.Errorf("bob listed %v", b)
				}
				for who, c := range map[string]struct {
					conn
					cursor string
				}{"bob with alice's cursor": {bob, aCursor}, "alice with bob's cursor": {alice, bCursor}} {
					_, err := c.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: c.cursor})
					if je := rpcError(t, err); je.Code != jsonrpc.CodeInvalidParams {
						t.Errorf("%s: %d %q", who, je.Code, je.Message)
					}
				}
				// The principal reaches the stores through the context.
				for who, c := range map[string]conn{"alice": alice, "bob": bob} {
					res, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "who://ami"})
					if err != nil || res.Contents[0].Text != who {
						t.Errorf("%s read who://ami: %+v, %v", who, res, err)
					}
				}
				_, err := bob.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "own://alice/1"})
				if je := rpcError(t, err); je.Message != "resource unavailable" {
					t.Errorf("bob read alice's resource: %d %q", je.Code, je.Message)
				}
				noCanary(t, alice)
				noCanary(t, bob)
			})
		}
	}
}

func TestScopeKeyFollowsPrincipalSessionAndHostKey(t *testing.T) {
	a := &adapter{hostKey: []byte("host")}
	key := func(principal string, req mcp.Request) string {
		ctx := context.Background()
		if principal != "" {
			ctx = core.WithCaller(ctx, core.Caller{Principal: principal})
		}
		return string(a.scopeKey(ctx, req))
	}
	req := &mcp.ReadResourceRequest{}
	anon, alice, bob := key("", req), key("alice", req), key("bob", req)
	if anon == alice || alice == bob || anon == "" {
		t.Fatal("principals share a scope")
	}
	// Length prefixes keep principal and host key apart.
	b := &adapter{hostKey: []byte("")}
	ctx := core.WithCaller(context.Background(), core.Caller{Principal: "alicehost"})
	if string(b.scopeKey(ctx, req)) == alice {
		t.Fatal("principal and host key run together")
	}
	custom := &adapter{scope: func(context.Context, mcp.Request) []byte { return []byte("mine") }}
	if string(custom.scopeKey(context.Background(), req)) != "mine" {
		t.Fatal("Options.Scope ignored")
	}
}

func TestAnEmptyCustomScopeKeyIsAnInternalError(t *testing.T) {
	r, _ := newResources(t, core.ResourceLimits{})
	c := connect(t, newServer(r, &Options{Scope: func(context.Context, mcp.Request) []byte { return nil }}), inMemory, "", "")
	_, err := c.cs.ListResources(context.Background(), nil)
	if je := rpcError(t, err); je.Code != jsonrpc.CodeInternalError {
		t.Fatalf("%d %q", je.Code, je.Message)
	}
}

func TestHostileURIBytesOverStatelessHTTPGetValidErrors(t *testing.T) {
	t.Parallel() // a server of its own
	r, _ := newResources(t, core.ResourceLimits{})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newServer(r, nil) },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	post := func(id int, uri string) map[string]json.RawMessage {
		t.Helper()
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":%s}}`, id, rawJSONString(uri))
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if !json.Valid(b) {
			t.Fatalf("URI %d: status %d, invalid JSON %q", id, resp.StatusCode, b)
		}
		var m map[string]json.RawMessage
		json.Unmarshal(b, &m)
		return m
	}
	for i, uri := range hostileURIs() {
		m := post(i, uri)
		if m["error"] == nil && utf8.ValidString(uri) {
			t.Errorf("hostile URI %d (%.40q) got %s", i, uri, m["result"])
		}
		var e struct {
			Code int64 `json:"code"`
		}
		if json.Unmarshal(m["error"], &e); m["error"] != nil && e.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("hostile URI %d: %s", i, m["error"])
		}
		if bytes.Contains(m["error"], []byte("items")) {
			t.Errorf("hostile URI %d echoed: %s", i, m["error"])
		}
	}
	if m := post(1000, "notes://items/after"); m["result"] == nil {
		t.Fatalf("normal read: %s", m["error"])
	}
}
