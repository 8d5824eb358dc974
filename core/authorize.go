package core

import "context"

// Authorization is what [Resources.Authorize] decided for one request URI:
// the plan the binding made, limited to what a read would have shown the
// caller. It holds the requested target and the visible items in plan
// order, each with whether the caller may read it now. Hidden items are
// left out entirely. An Authorization never holds a body: its targets are
// without the content a plan may carry ([ResourceMatch.WithContent]).
type Authorization struct {
	requested ResourceTarget
	items     []ResourceTarget
	readable  []bool
}

// Requested returns the canonical requested target.
func (a Authorization) Requested() ResourceTarget { return a.requested }

// Len returns the number of visible items.
func (a Authorization) Len() int { return len(a.items) }

// Item returns visible item i, in plan order.
func (a Authorization) Item(i int) ResourceTarget { return a.items[i] }

// Readable reports whether the caller may read visible item i. A visible
// item that is not readable is what a read reports as unavailable.
func (a Authorization) Readable(i int) bool { return a.readable[i] }

// IsZero reports whether a was not returned by a successful Authorize.
func (a Authorization) IsZero() bool { return a.requested.IsZero() }

// Authorize selects, resolves and authorizes the resource at uri for the
// caller that ctx identifies, exactly as [Resources.Read] does before its
// first body read, and reads no body: it checks definition discovery,
// resolves and validates the plan, checks the requested target's visibility
// and read permission, and decides the visibility and read permission of
// every planned item (in one [ResourcePolicy].Decide call at
// [PassBeforeReads]).
//
// It fails when Read would fail before reading: the same *[Failure] kinds
// for the same reasons (no match, discovery denied and a hidden or
// read-denied requested target are all [FailureUnavailable]), so a caller
// learns nothing from Authorize that a read would not have told it. Adapters
// use it to admit subscriptions and to re-check them before each change
// notification; a nil error means a read made now would select the same
// definition and be allowed to start.
//
// Authorize runs under ReadTimeout unless ctx already carries a request
// scope, and, like Read, starts no host callback once it has returned.
func (r *Resources) Authorize(ctx context.Context, uri string) (Authorization, error) {
	return scoped(ctx, r.limits.ReadTimeout, func(ctx context.Context) (Authorization, error) {
		return r.authorize(ctx, uri)
	})
}

func (r *Resources) authorize(ctx context.Context, uri string) (Authorization, error) {
	_, plan, st, err := r.prepare(ctx, nil, uri)
	if err != nil {
		return Authorization{}, err
	}
	return authorization(plan, st), nil
}

// authorization is what a plan decided before the reads shows the caller.
func authorization(plan ResourceReadPlan, st []itemState) Authorization {
	a := Authorization{requested: plan.requested}
	for i := range st {
		if !st[i].first.vis.Visible {
			continue
		}
		a.items = append(a.items, st[i].target.identity())
		a.readable = append(a.readable, st[i].first.allowed)
	}
	return a
}
