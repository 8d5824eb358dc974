package config

import (
	"context"
	"errors"
	"slices"

	"go.phpboyscout.uk/mcp/resources/core"
)

// errScope is the private cause of the Unavailable error for a resource
// whose scopes ([Resource].Scopes) the caller's token does not all grant.
var errScope = errors.New("config: the caller's token lacks a scope that the resource requires")

// gateScopes makes the policy's discovery check, which the gateway asks
// before every read, listing entry, completion and subscription of a
// definition, refuse the definitions of a resource with scopes to a caller
// whose token lacks one of them ([core.Caller].Scopes).
func (f *File) gateScopes(p core.ResourcePolicy) core.ResourcePolicy {
	want := map[string][]string{}
	for _, r := range f.Resources {
		if len(r.Scopes) > 0 {
			want[r.Name] = r.Scopes
		}
	}
	if len(want) == 0 {
		return p
	}
	discover := p.Discover
	p.Discover = func(ctx context.Context, d core.ResourceDefinition) error {
		if sc := want[d.Name]; sc != nil {
			c, _ := core.CallerFrom(ctx)
			for _, s := range sc {
				if !slices.Contains(c.Scopes, s) {
					return core.NewFailure(core.FailureUnavailable, errScope)
				}
			}
		}
		return discover(ctx, d)
	}
	return p
}
