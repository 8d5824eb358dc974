package core

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestStorageDecisionsOfAnotherPolicyAreDropped proves that a decision
// storage takes with a body stands as the item's recheck only when it
// names the key of the policy in force: a reader's Decision and inline
// content's decision that allow an item the policy in force has revoked
// since, but name another policy's key, no key, or come while the policy
// in force has no key, are dropped, and the policy in force is asked and
// removes the item.
func TestStorageDecisionsOfAnotherPolicyAreDropped(t *testing.T) {
	other := new(int) // another policy's key
	for name, c := range map[string]struct {
		names any  // the key the store's decisions name
		key   any  // the Key of the policy in force
		keep  bool // the store's decisions stand as the recheck
	}{
		"the policy in force":       {names: nil, key: rigKey, keep: true},
		"another policy":            {names: other, key: rigKey},
		"a key of another type":     {names: "rig", key: rigKey},
		"no key":                    {names: unnamed, key: rigKey},
		"a policy in force without": {names: rigKey, key: nil},
		"a key that is no pointer":  {names: []int{1}, key: rigKey},
	} {
		t.Run(name, func(t *testing.T) {
			g := newDecisionRig(t, "test://read", "test://inline")
			g.key = c.key
			g.item("test://read").decision = decisionOf(allow)
			g.inlineText("SECRET ", "test://inline")
			for _, u := range []string{"test://read", "test://inline"} {
				g.item(u).names = c.names
				g.answers[PassRecheck][u] = revoked // the policy in force revoked both since
			}
			res, err := g.read()
			if c.keep {
				if err != nil || !slices.Equal(itemURIs(res), []string{"test://read", "test://inline"}) {
					t.Fatalf("own policy's decisions: items %v, %v; want both, by the store's decisions", itemURIs(res), err)
				}
				if got := g.stages(); !slices.Equal(got, []PassStage{PassBeforeReads, PassRecheck}) || !slices.Equal(g.passURIs(PassRecheck), []string{bundleURI}) {
					t.Fatalf("recheck pass %v, want only the requested target asked", g.passURIs(PassRecheck))
				}
				return
			}
			wantKind(t, err, FailureUnavailable) // both items revoked by the policy in force
			if res != nil {
				t.Fatalf("served %s under another policy's decision", seenBy(res, nil))
			}
			if got := g.passURIs(PassRecheck); !slices.Equal(got, []string{bundleURI, "test://read", "test://inline"}) {
				t.Fatalf("recheck pass %v, want both items asked of the policy in force", got)
			}
		})
	}
}

// TestReadRequestAndMatchNameThePolicyInForce proves that the gateway
// hands storage the key of the policy in force: in every read request and
// in the match its resolver plans with.
func TestReadRequestAndMatchNameThePolicyInForce(t *testing.T) {
	g := newDecisionRig(t, "test://read")
	var got []any
	g.whole = func(_ context.Context, req ReadRequest) ([]ReadResult, error) {
		got = append(got, req.Policy)
		return []ReadResult{{Payload: TextPayload("text/plain", "x")}}, nil
	}
	var matched any
	res, err := NewResources([]ResourceBinding{{
		Definition: ResourceDefinition{URI: bundleURI, Name: "keyed"},
		Resolver: ResolverFunc(func(_ context.Context, m ResourceMatch) (ResourceReadPlan, error) {
			matched = m.Policy()
			return g.plan(m)
		}),
		Reader: g,
	}}, g.policy())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Read(context.Background(), bundleURI); err != nil {
		t.Fatal(err)
	}
	if matched != rigKey || len(got) != 1 || got[0] != rigKey {
		t.Fatalf("match names %v, requests name %v; want the policy's key", matched, got)
	}
	pol := g.policy()
	pol.Key = func(ResourceDefinition) any { return []int{1} }
	if _, err := NewResources([]ResourceBinding{{Definition: ResourceDefinition{URI: bundleURI, Name: "k"}, Resolver: ResolverFunc(func(context.Context, ResourceMatch) (ResourceReadPlan, error) { return ResourceReadPlan{}, nil }), Reader: g}}, pol); err == nil || !strings.Contains(err.Error(), "comparable") {
		t.Fatalf("a key that is not comparable: %v", err)
	}
}
