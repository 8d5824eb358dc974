package mcpsdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestAPanickingHandlerIsOneLogRecordAndAnInternalErrorWithARequestID(t *testing.T) {
	_, res := liveStore(t)
	logs := &syncBuf{}
	const canary = "canary-private-panic-text demo://secret"
	s, _ := adapted(&mcp.Implementation{Name: "t", Version: "v0"}, &mcp.ServerOptions{
		CompletionHandler: func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) { panic(canary) },
	}, res, &Options{Principal: func(context.Context, mcp.Request) string { return "alice" }, Completions: true,
		Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	lc := connectLive(t, s, "2025-11-25")
	_, err := lc.cs.Complete(context.Background(), &mcp.CompleteParams{
		Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "p"}, Argument: mcp.CompleteParamsArgument{Name: "x"}})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInternalError || je.Message != PanicMessage {
		t.Fatalf("a panicking handler answered %v, want -32603 %q", err, PanicMessage)
	}
	var data struct{ RequestID string }
	if json.Unmarshal(je.Data, &data) != nil || len(data.RequestID) != 16 {
		t.Fatalf("error data %s: want a request id", je.Data)
	}
	if strings.Contains(err.Error(), "canary") || strings.Contains(string(je.Data), "canary") {
		t.Fatalf("the panic's text reached the client: %v %s", err, je.Data)
	}
	records := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(records) != 1 || !strings.Contains(records[0], data.RequestID) || !strings.Contains(records[0], `"method":"completion/complete"`) {
		t.Fatalf("log records %q: want one naming request %s", records, data.RequestID)
	}
	if strings.Contains(logs.String(), "canary") || strings.Contains(logs.String(), "demo://secret") {
		t.Fatalf("the panic's value reached the log: %s", logs.String())
	}
	// The session goes on.
	if _, err := lc.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: liveDoc("a")}); err != nil {
		t.Fatalf("a read after the panic: %v", err)
	}
}

func TestADuplicateInitializeIsInvalidRequestAndTheSessionGoesOn(t *testing.T) {
	_, res := liveStore(t)
	s, _ := adapted(&mcp.Implementation{Name: "t", Version: "v0"}, nil, res,
		&Options{Principal: func(context.Context, mcp.Request) string { return "alice" }, Completions: true})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	conn, err := ct.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	init := func(id int64) *jsonrpc.Response {
		t.Helper()
		rid, _ := jsonrpc.MakeID(float64(id))
		params := json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`)
		if err := conn.Write(context.Background(), &jsonrpc.Request{ID: rid, Method: "initialize", Params: params}); err != nil {
			t.Fatal(err)
		}
		m, err := conn.Read(context.Background())
		if err != nil {
			t.Fatalf("the session ended: %v", err)
		}
		return m.(*jsonrpc.Response)
	}
	if r := init(1); r.Error != nil {
		t.Fatalf("first initialize: %v", r.Error)
	}
	r := init(2)
	var je *jsonrpc.Error
	if !errors.As(r.Error, &je) || je.Code != jsonrpc.CodeInvalidRequest {
		t.Fatalf("a second initialize answered %v, want -32600", r.Error)
	}
	// Still alive: a prompt completion without a host handler is empty.
	rid, _ := jsonrpc.MakeID(float64(3))
	conn.Write(context.Background(), &jsonrpc.Request{ID: rid, Method: MethodComplete,
		Params: json.RawMessage(`{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"x","value":""}}`)})
	m, err := conn.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if resp := m.(*jsonrpc.Response); resp.Error != nil || !strings.Contains(string(resp.Result), `"values":[]`) {
		t.Fatalf("prompt completion without a host handler: %v %s", resp.Error, resp.Result)
	}
}

func TestResultCapabilitiesIgnoresTypedNilResults(t *testing.T) {
	var ir *mcp.InitializeResult
	var dr *mcp.DiscoverResult
	for _, r := range []mcp.Result{ir, dr, nil} {
		if resultCapabilities(r) != nil {
			t.Fatalf("%T: capabilities of a nil result", r)
		}
		declareResources(r) // must not panic
	}
}
