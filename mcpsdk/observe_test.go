package mcpsdk

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
)

// Observe sees every request the adapter answers, once, with the gateway's
// own result or failure, and none of the methods it leaves to the SDK.
func TestObserveSeesEveryAnsweredRequestOnce(t *testing.T) {
	r, _ := newResources(t, core.ResourceLimits{})
	var mu sync.Mutex
	var seen []Observation
	observe := func(_ context.Context, o Observation) {
		mu.Lock()
		seen = append(seen, o)
		mu.Unlock()
	}
	c := connect(t, newServer(r, &Options{Observe: observe}), inMemory, "", "")
	ctx := context.Background()
	c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://readme"})
	c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "bundle://partial"})
	c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "secret://hidden"})
	c.cs.ListResources(ctx, nil)
	c.cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: "garbage"})
	c.cs.Ping(ctx, nil)

	mu.Lock()
	defer mu.Unlock()
	var methods []string
	for _, o := range seen {
		methods = append(methods, o.Method)
		if o.Duration <= 0 {
			t.Errorf("%s: duration %v", o.Method, o.Duration)
		}
	}
	want := []string{MethodReadResource, MethodReadResource, MethodReadResource, MethodListResources, MethodListResourceTemplates}
	if !slices.Equal(methods, want) {
		t.Fatalf("observed %q, want %q", methods, want)
	}
	switch {
	case seen[0].Err != nil || seen[0].Result == nil || seen[0].Result.Partial():
		t.Errorf("complete read observed as %+v", seen[0])
	case seen[1].Err != nil || seen[1].Result == nil || !seen[1].Result.Partial():
		t.Errorf("partial read observed as %+v", seen[1])
	case core.KindOf(seen[2].Err) != core.FailureUnavailable || seen[2].Result != nil:
		t.Errorf("unavailable read observed as %+v", seen[2])
	case seen[3].Err != nil:
		t.Errorf("list observed as %+v", seen[3])
	case core.KindOf(seen[4].Err) != core.FailureInvalidCursor:
		t.Errorf("bad cursor observed as %+v", seen[4])
	}
}
