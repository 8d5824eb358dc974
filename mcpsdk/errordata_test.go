package mcpsdk

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/memory"
)

// allowAllPolicy lets storage decide, as hosts that enforce access in the
// database or bucket do, and discloses every issue's URI.
func allowAllPolicy() core.ResourcePolicy {
	return core.PerTarget(core.TargetPolicy{
		Discover: func(context.Context, core.ResourceDefinition) error { return nil },
		Visibility: func(context.Context, core.ResourceTarget) (core.Visibility, error) {
			return core.Visibility{Visible: true, DiscloseIssueURI: true}, nil
		},
		Read: func(context.Context, core.ResourceTarget) error { return nil },
	})
}

// wireError is the JSON-RPC error of err as the client decoded it, encoded
// again: code, message and data, byte for byte.
func wireError(t *testing.T, err error) string {
	t.Helper()
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		t.Fatalf("want a JSON-RPC error, got %v", err)
	}
	b, _ := json.Marshal(je)
	return string(b)
}

// TestOutageAnswersRetryableDataOnReadSubscribeAndComplete proves that a
// storage outage while planning reaches the client of a read, a subscribe
// and a completion as -32603 with the outage's fixed message and
// {"retryable":true} as data, without its cause, and that the same read
// succeeds once storage is back.
func TestOutageAnswersRetryableDataOnReadSubscribeAndComplete(t *testing.T) {
	st := memory.New(nil)
	if _, err := st.Put("a", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("v1")}); err != nil {
		t.Fatal(err)
	}
	st.Grant("a", "alice", memory.Access{Read: true})
	b := st.KeyBinding(core.ResourceDefinition{URITemplate: liveTemplate, Name: "doc"}, "id", "")
	var down atomic.Bool
	inner, complete := b.Resolver, b.Complete
	b.Resolver = core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
		if down.Load() {
			return core.ResourceReadPlan{}, core.NewFailure(core.FailureOutage, canaryErr("connection refused"))
		}
		return inner.Resolve(ctx, m)
	})
	b.Complete = func(ctx context.Context, req core.CompletionRequest) (core.Completion, error) {
		if down.Load() {
			return core.Completion{}, core.NewFailure(core.FailureOutage, canaryErr("connection refused"))
		}
		return complete(ctx, req)
	}
	res, err := core.NewResources([]core.ResourceBinding{b}, st.Policy())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := liveServer(t, st, res, "alice", mcp.ServerOptions{})
	// At 2025-11-25 resources/subscribe answers synchronously; a
	// 2026-07-28 client subscribes asynchronously and sees no answer.
	lc := connectLive(t, s, "2025-11-25")
	ctx := context.Background()

	down.Store(true)
	const want = `{"code":-32603,"message":"resource storage is temporarily unavailable","data":{"retryable":true}}`
	_, rerr := lc.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: liveDoc("a")})
	serr := lc.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: liveDoc("a")})
	_, cerr := lc.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: liveTemplate},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: "a"}})
	for what, err := range map[string]error{"read": rerr, "subscribe": serr, "complete": cerr} {
		if err == nil {
			t.Errorf("%s during the outage succeeded", what)
			continue
		}
		if got := wireError(t, err); got != want {
			t.Errorf("%s during the outage: %s, want %s", what, got, want)
		}
	}
	down.Store(false)
	if r, err := lc.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: liveDoc("a")}); err != nil || r.Contents[0].Text != "v1" {
		t.Fatalf("the retry after the outage: %v", err)
	}
}

// TestItemStorageRefusedAnswersExactlyLikeAMissingResource proves, on the
// wire, that a read of an item that planning saw but storage refused (a
// grant that lets alice know of the item but not read it, under a policy
// that lets storage decide) answers byte for byte what a key that never
// existed answers (even under a policy that discloses issue URIs), while an item whose read failed otherwise answers "no
// resource item could be read" with its retryable issue as data.
func TestItemStorageRefusedAnswersExactlyLikeAMissingResource(t *testing.T) {
	st := memory.New(nil)
	for _, id := range []string{"refused", "changed"} {
		if _, err := st.Put(id, memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("CANARY body")}); err != nil {
			t.Fatal(err)
		}
	}
	st.Grant("refused", "alice", memory.Access{}) // planned, then refused by the read
	st.Grant("changed", "alice", memory.Access{Read: true, DiscloseURI: true})
	b := st.KeyBinding(core.ResourceDefinition{URITemplate: liveTemplate, Name: "doc"}, "id", "")
	inner := b.Resolver
	b.Resolver = core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
		p, err := inner.Resolve(ctx, m)
		if err == nil && m.URI() == liveDoc("changed") {
			_, err = st.Put("changed", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("v2")})
		}
		return p, err
	})
	res, err := core.NewResources([]core.ResourceBinding{b}, allowAllPolicy())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := liveServer(t, st, res, "alice", mcp.ServerOptions{})
	lc := connectLive(t, s, "2025-11-25")
	ctx := context.Background()
	read := func(id string) string {
		_, err := lc.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: liveDoc(id)})
		return wireError(t, err)
	}
	missing, refused := read("never-existed"), read("refused")
	if refused != missing || strings.Contains(missing, "data") {
		t.Fatalf("refused item: %s\nmissing key: %s\nwant the same bytes, without data", refused, missing)
	}
	const wantChanged = `{"code":-32603,"message":"no resource item could be read","data":{"retryable":true,"issues":[` +
		`{"code":"read_failed","message":"The resource could not be read.","retryable":true,"uri":"mem://docs/changed"}],"issuesOmitted":0}}`
	if got := read("changed"); got != wantChanged {
		t.Fatalf("item changed since the plan: %s, want %s", got, wantChanged)
	}
}
