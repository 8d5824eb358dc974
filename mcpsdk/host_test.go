package mcpsdk

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
)

// Canaries: private causes and authorization data carry them; no byte a
// server writes may.
const (
	canaryCause = "CANARY-private-cause-7f3a"
	canaryAuthz = "CANARY-authz-data-91c2"
)

func canaryErr(what string) error { return errors.New(canaryCause + " " + what) }

// testHost is a scripted host: a few bindings that exercise every core
// behaviour, and a policy that hides definitions named for another
// principal ("alice-..." is visible to alice only).
type testHost struct {
	slow chan struct{} // closed to release the slow reader
}

func target(t testing.TB, uri string) core.ResourceTarget {
	tg, err := core.NewResourceTarget(uri, "rep", json.RawMessage(`{"secret":"`+canaryAuthz+`"}`))
	if err != nil {
		t.Fatalf("target %q: %v", uri, err)
	}
	return tg
}

// bundle is a binding whose plan names items; read answers each item.
func bundle(t testing.TB, def core.ResourceDefinition, items []string, read func(ctx context.Context, uri string) (core.ResourcePayload, error)) core.ResourceBinding {
	return core.ResourceBinding{
		Definition: def,
		Resolver: core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
			if m.URI() == "plan://h/outage" {
				return core.ResourceReadPlan{}, core.NewFailure(core.FailureOutage, canaryErr("storage down"))
			}
			if strings.HasPrefix(m.URI(), "plan://") {
				return core.ResourceReadPlan{}, canaryErr("resolver")
			}
			ts := make([]core.ResourceTarget, len(items))
			for i, u := range items {
				ts[i] = target(t, strings.ReplaceAll(u, "{uri}", m.URI()))
			}
			return core.NewResourceReadPlan(target(t, m.URI()), ts...)
		}),
		Reader: core.ItemReader(func(ctx context.Context, item core.ReadItem) (core.ResourcePayload, error) {
			tg := item.Target
			return read(ctx, tg.URI())
		}),
	}
}

func text(s string) func(context.Context, string) (core.ResourcePayload, error) {
	return func(context.Context, string) (core.ResourcePayload, error) {
		return core.TextPayload("text/plain", s), nil
	}
}

func (h *testHost) bindings(t testing.TB) []core.ResourceBinding {
	p := 0.5
	size := int64(5)
	return []core.ResourceBinding{
		bundle(t, core.ResourceDefinition{
			URI: "notes://readme", Name: "readme", Title: "Read me", Description: "the <readme> & more", MIMEType: "text/plain",
			Annotations: &core.Annotations{Audience: []string{"user"}, Priority: &p, LastModified: "2025-01-12T15:00:58Z"},
			Size:        &size,
			Icons:       []core.Icon{{Src: "https://example.com/icon.png", MIMEType: "image/png", Sizes: []string{"48x48"}, Theme: "dark"}},
			Meta:        json.RawMessage(`{"app":{"k":1}}`),
		}, []string{"{uri}"}, text("hello")),
		bundle(t, core.ResourceDefinition{URITemplate: "notes://items/{id}", Name: "item", MIMEType: "text/plain"},
			[]string{"{uri}"}, func(_ context.Context, uri string) (core.ResourcePayload, error) {
				return core.TextPayload("text/plain", "item "+strings.TrimPrefix(uri, "notes://items/")), nil
			}),
		// Partial: one item reads, one fails with a private cause, one is
		// denied, one is disclosed.
		bundle(t, core.ResourceDefinition{URI: "bundle://partial", Name: "partial"},
			[]string{"bundle://partial/ok", "bundle://partial/broken", "bundle://partial/denied", "bundle://partial/disclosed"},
			func(_ context.Context, uri string) (core.ResourcePayload, error) {
				switch uri {
				case "bundle://partial/ok":
					return core.TextPayload("text/plain", "fine"), nil
				case "bundle://partial/disclosed":
					return core.ResourcePayload{}, core.NewFailure(core.FailureUnavailable, canaryErr("gone"))
				}
				return core.ResourcePayload{}, canaryErr("reader")
			}),
		bundle(t, core.ResourceDefinition{URI: "bundle://empty", Name: "empty"},
			[]string{"bundle://empty/text", "bundle://empty/blob", "bundle://empty/bin"},
			func(_ context.Context, uri string) (core.ResourcePayload, error) {
				switch uri {
				case "bundle://empty/text":
					return core.TextPayload("text/plain", ""), nil
				case "bundle://empty/blob":
					return core.BlobPayload("application/octet-stream", nil), nil
				}
				return core.BlobPayload("application/octet-stream", []byte{0xff, 0xfe, 0x00, 1}), nil
			}),
		bundle(t, core.ResourceDefinition{URI: "bundle://none", Name: "none"}, []string{"bundle://none/1"},
			func(context.Context, string) (core.ResourcePayload, error) {
				return core.ResourcePayload{}, canaryErr("reader")
			}),
		bundle(t, core.ResourceDefinition{URI: "bundle://slow", Name: "slow"}, []string{"bundle://slow/1"},
			func(ctx context.Context, _ string) (core.ResourcePayload, error) {
				select {
				case <-ctx.Done():
				case <-h.slow:
				}
				return core.TextPayload("text/plain", "late"), nil
			}),
		bundle(t, core.ResourceDefinition{URITemplate: "amb://h/x/{a}", Name: "amb1"}, []string{"{uri}"}, text("a")),
		bundle(t, core.ResourceDefinition{URITemplate: "amb://h/{b}/y", Name: "amb2"}, []string{"{uri}"}, text("b")),
		bundle(t, core.ResourceDefinition{URITemplate: "plan://h/{x}", Name: "plan"}, []string{"{uri}"}, text("p")),
		bundle(t, core.ResourceDefinition{URI: "policy://broken", Name: "policy"}, []string{"{uri}"}, text("p")),
		bundle(t, core.ResourceDefinition{URI: "secret://hidden", Name: "hidden"}, []string{"{uri}"}, text("s")),
		bundle(t, core.ResourceDefinition{URI: "who://ami", Name: "whoami"}, []string{"{uri}"},
			func(ctx context.Context, _ string) (core.ResourcePayload, error) {
				c, err := core.CallerFrom(ctx)
				if err != nil {
					c.Principal = "(none)"
				}
				return core.TextPayload("text/plain", c.Principal), nil
			}),
		bundle(t, core.ResourceDefinition{URI: "own://alice/1", Name: "alice-1"}, []string{"{uri}"}, text("a1")),
		bundle(t, core.ResourceDefinition{URI: "own://alice/2", Name: "alice-2"}, []string{"{uri}"}, text("a2")),
		bundle(t, core.ResourceDefinition{URI: "own://bob/1", Name: "bob-1"}, []string{"{uri}"}, text("b1")),
	}
}

func (h *testHost) policy() core.ResourcePolicy {
	return core.PerTarget(core.TargetPolicy{
		Discover: func(ctx context.Context, d core.ResourceDefinition) error {
			switch {
			case d.URI == "secret://hidden":
				return core.NewFailure(core.FailureUnavailable, canaryErr("discover"))
			}
			for _, who := range []string{"alice", "bob"} {
				if strings.HasPrefix(d.Name, who+"-") {
					if c, _ := core.CallerFrom(ctx); c.Principal != who {
						return core.NewFailure(core.FailureUnavailable, canaryErr("not "+who))
					}
				}
			}
			return nil
		},
		Visibility: func(_ context.Context, tg core.ResourceTarget) (core.Visibility, error) {
			if tg.URI() == "policy://broken" {
				return core.Visibility{}, canaryErr("policy")
			}
			return core.Visibility{Visible: true, DiscloseIssueURI: strings.HasSuffix(tg.URI(), "/disclosed")}, nil
		},
		Read: func(_ context.Context, tg core.ResourceTarget) error {
			if strings.HasSuffix(tg.URI(), "/denied") {
				return core.NewFailure(core.FailureUnavailable, canaryErr("denied"))
			}
			return nil
		},
	})
}

// newResources builds the test host's gateway; extra bindings are
// appended.
func newResources(t testing.TB, limits core.ResourceLimits, extra ...core.ResourceBinding) (*core.Resources, *testHost) {
	t.Helper()
	h := &testHost{slow: make(chan struct{})}
	t.Cleanup(func() { close(h.slow) })
	r, err := core.NewResources(append(h.bindings(t), extra...), h.policy(), core.WithResourceLimits(limits))
	if err != nil {
		t.Fatal(err)
	}
	return r, h
}

// adapted wires r as a host does: the adapter of [New] with opts, and the
// server it builds over base.
func adapted(impl *mcp.Implementation, base *mcp.ServerOptions, r *core.Resources, opts *Options) (*mcp.Server, *Adapter) {
	a := New(r, opts)
	return a.NewServer(impl, base), a
}

// newServer returns a server with the gateway installed and one tool the
// SDK serves beside it.
func newServer(r *core.Resources, opts *Options) *mcp.Server {
	s, _ := adapted(&mcp.Implementation{Name: "test-server", Version: "v0.0.1"}, nil, r, opts)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echoes"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Say string `json:"say"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Say}}}, nil, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
	})
	return s
}

// tap records every byte a server writes.
type tap struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *tap) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// reset forgets what was written so far.
func (w *tap) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Reset()
}

func (w *tap) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.buf.Bytes())
}

// wireMessage is one JSON-RPC message the server wrote, with its raw bytes.
type wireMessage struct {
	Raw    []byte
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// messages splits what the server wrote into JSON-RPC messages: newline
// delimited (stdio, pipes), SSE data lines or plain JSON bodies (HTTP).
// Every message must be valid JSON.
func (w *tap) messages(t testing.TB) []wireMessage {
	t.Helper()
	var out []wireMessage
	sc := bufio.NewScanner(bytes.NewReader(w.bytes()))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		line = bytes.TrimPrefix(line, []byte("data: "))
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var m wireMessage
		if err := json.Unmarshal(line, &m); err != nil { // Unmarshal checks the whole line is valid JSON first
			t.Fatalf("the server wrote invalid JSON: %q: %v", line, err)
		}
		m.Raw = bytes.Clone(line)
		out = append(out, m)
	}
	return out
}

// last returns the last response the server wrote.
func (w *tap) last(t testing.TB) wireMessage {
	t.Helper()
	ms := w.messages(t)
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Result != nil || ms[i].Error != nil {
			return ms[i]
		}
	}
	t.Fatal("no response on the wire")
	return wireMessage{}
}

// transportKind names how a client reaches the server.
type transportKind string

const (
	pipes     transportKind = "pipes"     // IOTransport over in-process pipes, server output tapped
	inMemory  transportKind = "in-memory" // mcp.NewInMemoryTransports
	stateful  transportKind = "http-stateful"
	stateless transportKind = "http-stateless"
)

var (
	allTransports = []transportKind{pipes, inMemory, stateful, stateless}
	// protocols: the SDK client's default (2026-07-28 in v1.8.0) and 2025-11-25.
	protocols = []string{"", "2025-11-25"}
)

// conn is a connected client and the tap on what the server wrote (nil
// for the in-memory transport, which writes no bytes).
type conn struct {
	cs  *mcp.ClientSession
	tap *tap
}

// connect connects a real SDK client to s over kind at protocol version
// (the client's default when ""). bearer, when set, is sent on HTTP.
func connect(t testing.TB, s *mcp.Server, kind transportKind, version, bearer string) conn {
	t.Helper()
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0.0.1"}, nil)
	sopts := &mcp.ClientSessionOptions{ProtocolVersion: version}
	w := &tap{}
	var ct mcp.Transport
	switch kind {
	case pipes:
		cr, sw := io.Pipe()
		sr, cw := io.Pipe()
		ss, err := s.Connect(ctx, &mcp.IOTransport{Reader: sr, Writer: nopCloser{io.MultiWriter(w, sw), sw}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		ct = &mcp.IOTransport{Reader: cr, Writer: cw}
	case inMemory:
		st, c := mcp.NewInMemoryTransports()
		ss, err := s.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		ct, w = c, nil
	case stateful, stateless:
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
			&mcp.StreamableHTTPOptions{Stateless: kind == stateless})
		srv := httptest.NewServer(tapHandler(requireBearer(h), w))
		t.Cleanup(srv.Close)
		hc := &http.Client{Transport: bearerTransport{bearer}}
		ct = &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc, DisableStandaloneSSE: true}
	}
	cs, err := client.Connect(ctx, ct, sopts)
	if err != nil {
		t.Fatalf("connect %s %q: %v", kind, version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return conn{cs: cs, tap: w}
}

type nopCloser struct {
	io.Writer
	c io.Closer
}

func (n nopCloser) Close() error { return n.c.Close() }

// tapHandler copies every response body byte into w.
func tapHandler(h http.Handler, w *tap) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&tapWriter{ResponseWriter: rw, w: w}, r)
		w.Write([]byte("\n")) // a JSON body has no newline of its own
	})
}

type tapWriter struct {
	http.ResponseWriter
	w *tap
}

func (t *tapWriter) Write(p []byte) (int, error) {
	t.w.Write(p)
	return t.ResponseWriter.Write(p)
}

func (t *tapWriter) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (t *tapWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// tokens are the bearer tokens the test verifier knows.
var tokens = map[string]string{"token-alice": "alice", "token-bob": "bob"}

// requireBearer checks bearer tokens when a request carries one; requests
// without Authorization pass unauthenticated.
func requireBearer(h http.Handler) http.Handler {
	authed := auth.RequireBearerToken(func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		user, ok := tokens[token]
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: user, Expiration: time.Now().Add(time.Hour), Extra: map[string]any{"authz": canaryAuthz}}, nil
	}, nil)(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			h.ServeHTTP(w, r)
			return
		}
		authed.ServeHTTP(w, r)
	})
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// rpcError returns the JSON-RPC error a client call failed with.
func rpcError(t testing.TB, err error) *jsonrpc.Error {
	t.Helper()
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		t.Fatalf("want a JSON-RPC error, got %v", err)
	}
	return je
}

// noCanary fails when the server's bytes carry private data.
func noCanary(t testing.TB, c conn) {
	t.Helper()
	if c.tap == nil {
		return
	}
	b := c.tap.bytes()
	for _, canary := range []string{canaryCause, canaryAuthz, "CANARY"} {
		if bytes.Contains(b, []byte(canary)) {
			t.Fatalf("server wrote private data %q", canary)
		}
	}
}

func forEachClient(t *testing.T, fn func(t *testing.T, kind transportKind, version string)) {
	for _, kind := range allTransports {
		for _, v := range protocols {
			name := fmt.Sprintf("%s/%s", kind, v)
			if v == "" {
				name = string(kind) + "/default"
			}
			t.Run(name, func(t *testing.T) { fn(t, kind, v) })
		}
	}
}
