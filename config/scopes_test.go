package config

import (
	"context"
	"errors"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
)

// A resource with scopes does not exist for a caller whose token lacks one
// of them; the other resources, and the wrapped policy's own answer, are
// untouched.
func TestScopesGateDiscovery(t *testing.T) {
	f := &File{Resources: []Resource{{Name: "open"}, {Name: "secret", Scopes: []string{"read", "secret"}}}}
	denied := errors.New("the policy's own no")
	p := f.gateScopes(core.ResourcePolicy{Discover: func(_ context.Context, d core.ResourceDefinition) error {
		if d.Name == "denied" {
			return denied
		}
		return nil
	}})
	bg := context.Background()
	for _, c := range []struct {
		name   string
		ctx    context.Context
		def    string
		wantOK bool
	}{
		{"no scopes, open", bg, "open", true},
		{"no scopes, secret", bg, "secret", false},
		{"one of two scopes", core.WithCaller(bg, core.Caller{Scopes: []string{"read"}}), "secret", false},
		{"both scopes", core.WithCaller(bg, core.Caller{Scopes: []string{"secret", "other", "read"}}), "secret", true},
	} {
		err := p.Discover(c.ctx, core.ResourceDefinition{Name: c.def})
		if c.wantOK != (err == nil) {
			t.Errorf("%s: %v", c.name, err)
		}
		if err != nil && (core.KindOf(err) != core.FailureUnavailable || !errors.Is(err, errScope)) {
			t.Errorf("%s: %v, want Unavailable(errScope)", c.name, err)
		}
	}
	if err := p.Discover(core.WithCaller(bg, core.Caller{Scopes: []string{"read", "secret"}}), core.ResourceDefinition{Name: "denied"}); err != denied {
		t.Fatalf("the wrapped policy's answer: %v", err)
	}
	if q := (&File{Resources: []Resource{{Name: "open"}}}).gateScopes(p); q.Discover == nil {
		t.Fatal("a file without scopes lost the policy")
	}
}
