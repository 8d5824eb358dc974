package core_test

import (
	"context"
	"maps"
	"sync"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
)

// TestPolicyPassCarriesTheDecodedCaptures: both passes of a read see the
// captures the resolver planned from, decoded once (%61cme is "acme",
// %252F the literal "%2F"), never the URI's text; a concrete URI's pass has
// none.
func TestPolicyPassCarriesTheDecodedCaptures(t *testing.T) {
	var mu sync.Mutex
	var seen []map[string]string
	binding := func(def core.ResourceDefinition) core.ResourceBinding {
		return core.ResourceBinding{
			Definition: def,
			Resolver: core.ResolverFunc(func(_ context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
				tg, err := core.NewResourceTarget(m.URI(), "body", nil)
				if err != nil {
					return core.ResourceReadPlan{}, err
				}
				return core.NewResourceReadPlan(tg, tg)
			}),
			Reader: core.ItemReader(func(context.Context, core.ReadItem) (core.ResourcePayload, error) {
				return core.TextPayload("text/plain", "x"), nil
			}),
		}
	}
	res, err := core.NewResources([]core.ResourceBinding{
		binding(core.ResourceDefinition{URITemplate: "doc://tenants/{tenant}/documents/{id}", Name: "doc"}),
		binding(core.ResourceDefinition{URI: "doc://index", Name: "index"}),
	}, core.ResourcePolicy{
		Discover: func(context.Context, core.ResourceDefinition) error { return nil },
		Decide: func(_ context.Context, p core.PolicyPass) ([]core.TargetDecision, error) {
			mu.Lock()
			seen = append(seen, maps.Clone(p.Captures))
			mu.Unlock()
			out := make([]core.TargetDecision, len(p.Targets))
			for i := range out {
				out[i] = core.TargetDecision{Visibility: core.Visibility{Visible: true}, Read: true}
			}
			return out, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Read(context.Background(), "doc://tenants/%61cme/documents/a%252Fb"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"tenant": "acme", "id": "a%2Fb"}
	if len(seen) != 2 || !maps.Equal(seen[0], want) || !maps.Equal(seen[1], want) {
		t.Fatalf("passes saw captures %v, want %v before the reads and at the recheck", seen, want)
	}
	seen = nil
	if _, err := res.Read(context.Background(), "doc://index"); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || len(seen[0]) != 0 || len(seen[1]) != 0 {
		t.Fatalf("a concrete URI's passes saw captures %v, want none", seen)
	}
}
