package core

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
)

// listCalls counts callbacks that a list must never make.
type listCalls struct{ resolve, read, visibility, readPolicy atomic.Int64 }

func (c *listCalls) binding(def ResourceDefinition) ResourceBinding {
	return ResourceBinding{
		Definition: def,
		Resolver: ResolverFunc(func(context.Context, ResourceMatch) (ResourceReadPlan, error) {
			c.resolve.Add(1)
			return ResourceReadPlan{}, errors.New("list must not resolve")
		}),
		Reader: ReaderFunc(func(context.Context, ResourceTarget) (ResourcePayload, error) {
			c.read.Add(1)
			return ResourcePayload{}, errors.New("list must not read")
		}),
	}
}

func (c *listCalls) policy(discover func(context.Context, ResourceDescription) error) ResourcePolicy {
	return ResourcePolicy{
		Discover: discover,
		Visibility: func(context.Context, ResourceTarget) (Visibility, error) {
			c.visibility.Add(1)
			return Visibility{}, errors.New("list must not ask for visibility")
		},
		Read: func(context.Context, ResourceTarget) error {
			c.readPolicy.Add(1)
			return errors.New("list must not ask for read permission")
		},
	}
}

func (c *listCalls) check(t *testing.T) {
	t.Helper()
	if n := c.resolve.Load() + c.read.Load() + c.visibility.Load() + c.readPolicy.Load(); n != 0 {
		t.Errorf("list made %d resolve/read/visibility/read-policy calls", n)
	}
}

func listAllowAll(context.Context, ResourceDescription) error { return nil }

// listNew builds Resources from definitions, failing the test on error.
func listNew(t testing.TB, calls *listCalls, defs []ResourceDefinition, discover func(context.Context, ResourceDescription) error, opts ...Option) *Resources {
	t.Helper()
	bs := make([]ResourceBinding, len(defs))
	for i, d := range defs {
		bs[i] = calls.binding(d)
	}
	r, err := NewResources(bs, calls.policy(discover), opts...)
	if err != nil {
		t.Fatalf("NewResources: %v", err)
	}
	return r
}

var listScope = []byte("principal:alice/session:1")

func TestListCompareTieBreaks(t *testing.T) {
	mk := func(d ResourceDefinition) *definition { return &definition{desc: d} }
	ordered := []*definition{
		mk(ResourceDefinition{URITemplate: "a://{x}", Name: "a"}),
		mk(ResourceDefinition{URITemplate: "a://{x}", Name: "b"}),
		mk(ResourceDefinition{URITemplate: "a://{x}", Name: "b", Title: "t"}),
		mk(ResourceDefinition{URITemplate: "a://{x}", Name: "b", Title: "t", Description: "d"}),
		mk(ResourceDefinition{URITemplate: "a://{x}", Name: "b", Title: "t", Description: "d", MIMEType: "text/plain"}),
		mk(ResourceDefinition{URITemplate: "a://{x}", Name: "b", Title: "t", Description: "d", MIMEType: "text/plain", Meta: json.RawMessage(`{"a":1}`)}),
		mk(ResourceDefinition{URITemplate: "a://{x}", Name: "b", Title: "t", Description: "d", MIMEType: "text/plain", Meta: json.RawMessage(`{"b":1}`)}),
		mk(ResourceDefinition{URITemplate: "b://{x}", Name: "a"}),
	}
	for i := range ordered {
		for j := range ordered {
			c := listCompare(ordered[i], ordered[j])
			if want := (i > j) == (c > 0) && (i < j) == (c < 0) && (i == j) == (c == 0); !want {
				t.Errorf("listCompare(%d, %d) = %d", i, j, c)
			}
		}
	}
}
