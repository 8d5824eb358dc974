package core

import (
	"errors"
	"fmt"
)

// ResourceReadPlan is what a [Resolver] returns: the canonical requested target
// (whose URI is the request URI) and the ordered item targets to read. A plan
// may have zero items (a legitimately empty bundle). The zero value is
// invalid; build one with [NewResourceReadPlan].
type ResourceReadPlan struct {
	requested ResourceTarget
	items     []ResourceTarget
	valid     bool
	truncated bool // set by Truncated
}

// NewResourceReadPlan builds a plan. Every target must have been built by
// [NewResourceTarget], and no two items may share a URI, whatever their
// representations. Items may carry their content
// ([ResourceMatch.WithContent]); the requested target's content, if any,
// is dropped (only items are admitted).
func NewResourceReadPlan(requested ResourceTarget, items ...ResourceTarget) (ResourceReadPlan, error) {
	if requested.IsZero() {
		return ResourceReadPlan{}, errors.New("core: plan requested target is zero")
	}
	seen := make(map[string]struct{}, len(items))
	for i, it := range items {
		if it.IsZero() {
			return ResourceReadPlan{}, fmt.Errorf("core: plan item %d is zero", i)
		}
		if _, dup := seen[it.uri]; dup {
			return ResourceReadPlan{}, fmt.Errorf("core: plan item %d repeats an earlier item URI", i)
		}
		seen[it.uri] = struct{}{}
	}
	return ResourceReadPlan{requested: requested.identity(), items: append([]ResourceTarget(nil), items...), valid: true}, nil
}

// Requested returns the canonical requested target.
func (p ResourceReadPlan) Requested() ResourceTarget { return p.requested }

// Len returns the number of item targets.
func (p ResourceReadPlan) Len() int { return len(p.items) }

// Item returns item target i, in plan order.
func (p ResourceReadPlan) Item(i int) ResourceTarget { return p.items[i] }

// IsZero reports whether p was not built by [NewResourceReadPlan].
func (p ResourceReadPlan) IsZero() bool { return !p.valid }

// Truncated returns p marked as cut short by a limit: its resolver left out
// items past a bound it keeps (a store's MaxPlanItems, a listing's keys),
// items the caller might otherwise have read. A resolver that cuts a plan
// must say so: the gateway reports a read of a truncated plan as partial,
// with one budget_exceeded issue for the items left out after the issues
// of the planned items. That issue names no URI (the plan does not know
// which items it left out) and, like any issue, is detailed in the report
// or, past MaxIssues or the report's space, counted in IssuesOmitted. The
// zero plan stays zero.
func (p ResourceReadPlan) Truncated() ResourceReadPlan {
	p.truncated = p.valid
	return p
}

// IsTruncated reports whether p was marked by [ResourceReadPlan.Truncated].
func (p ResourceReadPlan) IsTruncated() bool { return p.truncated }
