package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
)

// rig is one case's view of a store: the harness, the gateway that selects
// the binding for planning, and the reader that cases call directly.
type rig struct {
	t      *testing.T
	h      Harness
	b      core.ResourceBinding
	gw     *core.Resources
	reader core.Reader
}

// errPlanned stops a planning read once the store's resolver has answered:
// planning must not go on to read bodies.
var errPlanned = errors.New("storetest: plan captured")

type slotKey struct{}

// slot receives what the store's resolver returned for one planning read.
type slot struct {
	called bool
	plan   core.ResourceReadPlan
	err    error
}

func newRig(ctx context.Context, t *testing.T, newHarness MakeHarness) *rig {
	t.Helper()
	h, err := newHarness(ctx, t)
	if err != nil {
		t.Fatalf("storetest: making the harness: %v", err)
	}
	b := h.Binding()
	if b.Resolver == nil || b.Reader == nil {
		t.Fatalf("storetest: Harness.Binding must have a Resolver and a Reader")
	}
	capture := core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
		s, _ := ctx.Value(slotKey{}).(*slot)
		if s == nil {
			return core.ResourceReadPlan{}, errors.New("storetest: planning read without a slot")
		}
		s.plan, s.err = b.Resolver.Resolve(ctx, m)
		s.called = true
		return core.ResourceReadPlan{}, core.NewFailure(core.FailureUnavailable, errPlanned)
	})
	gw, err := core.NewResources([]core.ResourceBinding{{
		Definition: b.Definition,
		Resolver:   capture,
		Reader:     core.ItemReader(unreachableReader),
	}}, AllowAll())
	if err != nil {
		t.Fatalf("storetest: registering Harness.Binding: %v", err)
	}
	return &rig{t: t, h: h, b: b, gw: gw, reader: b.Reader}
}

func unreachableReader(context.Context, core.ReadItem) (core.ResourcePayload, error) {
	return core.ResourcePayload{}, errors.New("storetest: the planning gateway never reads")
}

// AllowAll is a policy that lets every caller discover and read
// everything, so that whatever a gateway over it serves was decided by its
// stores alone: the policy of the suite's planning gateways, and of a
// store's tests and benchmarks that measure the store.
func AllowAll() core.ResourcePolicy {
	return core.PerTarget(core.TargetPolicy{
		Discover: func(context.Context, core.ResourceDefinition) error { return nil },
		Visibility: func(context.Context, core.ResourceTarget) (core.Visibility, error) {
			return core.Visibility{Visible: true}, nil
		},
		Read: func(context.Context, core.ResourceTarget) error { return nil },
	})
}

// create stores it and fails the case if the harness cannot.
func (r *rig) create(ctx context.Context, it Item) string {
	r.t.Helper()
	uri, err := r.h.Create(ctx, it)
	if err != nil {
		r.t.Fatalf("Harness.Create: %v", err)
	}
	return uri
}

// tryPlan plans uri as principal through the store's resolver. The error is
// the resolver's own, or the gateway's when the request never reached it.
func (r *rig) tryPlan(ctx context.Context, principal, uri string) (core.ResourceTarget, error) {
	s := &slot{}
	pctx := context.WithValue(r.h.Context(ctx, principal), slotKey{}, s)
	_, gwErr := r.gw.Read(pctx, uri)
	switch {
	case !s.called:
		return core.ResourceTarget{}, fmt.Errorf("the request for %q never reached the binding's resolver: %w", uri, gwErr)
	case s.err != nil:
		return core.ResourceTarget{}, s.err
	case s.plan.IsZero():
		return core.ResourceTarget{}, errors.New("the resolver returned a zero plan without an error")
	case s.plan.Requested().URI() != uri:
		return core.ResourceTarget{}, fmt.Errorf("the plan's requested target is %q, not the request URI %q", s.plan.Requested().URI(), uri)
	case s.plan.Len() != 1:
		return core.ResourceTarget{}, fmt.Errorf("the plan names %d items; an item's URI must plan exactly its body", s.plan.Len())
	}
	return s.plan.Item(0), nil
}

// plan is tryPlan that fails the case on error.
func (r *rig) plan(ctx context.Context, principal, uri string) core.ResourceTarget {
	r.t.Helper()
	t, err := r.tryPlan(ctx, principal, uri)
	if err != nil {
		r.t.Fatalf("planning %q as %q: %v", uri, principal, err)
	}
	return t
}

// read calls the store's reader directly as principal for one item under
// limit (its Limit and the request's Budget).
func (r *rig) read(ctx context.Context, principal string, t core.ResourceTarget, limit int64) (core.ResourcePayload, error) {
	return ReadOne(r.h.Context(ctx, principal), r.reader, core.ReadItem{Target: t, Limit: limit})
}

// ReadOne asks rd for item alone, as the gateway asks a reader for one
// item (the request's Budget is the item's Limit), and returns that item's
// result; a reader that answers with another number of results is an error.
func ReadOne(ctx context.Context, rd core.Reader, item core.ReadItem) (core.ResourcePayload, error) {
	out, err := rd.Read(ctx, core.ReadRequest{Items: []core.ReadItem{item}, Budget: item.Limit})
	switch {
	case err != nil:
		return core.ResourcePayload{}, err
	case len(out) != 1:
		return core.ResourcePayload{}, fmt.Errorf("storetest: the reader returned %d results for one item", len(out))
	}
	return out[0].Payload, out[0].Err
}

// mustSupport skips the case when err says the store lacks a capability, and
// fails it on any other error.
func mustSupport(t *testing.T, what string, err error) {
	t.Helper()
	switch {
	case err == nil:
	case errors.Is(err, errors.ErrUnsupported):
		t.Skipf("the store does not support %s: %v", what, err)
	default:
		t.Fatalf("Harness.%s: %v", what, err)
	}
}

// body returns a payload's content as bytes, whatever its kind.
func body(p core.ResourcePayload) []byte {
	if p.IsBlob() {
		return p.Blob()
	}
	return []byte(p.Text())
}
