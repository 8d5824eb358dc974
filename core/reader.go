package core

import "context"

// ReadItem is one planned item a [Reader] is asked for.
type ReadItem struct {
	// Target is the planned target, exactly as the resolver built it.
	Target ResourceTarget
	// Limit is how many payload bytes this item's body may hold: the
	// smaller of MaxItemBytes and what is left of the aggregate payload
	// budget. A store bounds the storage read itself with it (an SQL
	// octet_length check, an S3 Range) and returns a *[TooLargeError] when the
	// stored item is bigger.
	Limit int64
}

// ReadRequest asks a [Reader] for the bodies of consecutive planned items
// it serves, in plan order.
type ReadRequest struct {
	// Items are the items to read: never more than the item-count limit
	// leaves.
	Items []ReadItem
	// Budget is how many payload bytes the bodies returned for the whole
	// request may hold together (what the aggregate payload budget leaves).
	Budget int64
	// Policy is the key of the policy that decides the read
	// ([ResourcePolicy].Key), or nil. A reader that evaluates a policy's
	// answer with the bodies does so only when Policy is its own policy's
	// key, and names it in each [ReadResult].Decision.
	Policy any
}

// ReadResult is a [Reader]'s answer for one item: a payload, or an error
// (a [FailureUnavailable] error to deny, a *[TooLargeError] with the item's size when it does not
// fit, any other error for a failed read), and optionally the policy's
// decision for the item taken with it.
type ReadResult struct {
	Payload ResourcePayload
	Err     error
	// Decision, when set, is the answer of the policy its Policy field
	// names for this item, evaluated by storage in the same snapshot as
	// the body (for example the grants check folded into the body
	// statement). When it names the request's Policy, the gateway rechecks
	// the item by it instead of asking [ResourcePolicy].Decide about it: a
	// hidden Decision removes the item, a visible one without Read revokes
	// it, exactly as the same answer from Decide would; a Decision naming
	// no key or another key is dropped, and Decide is asked. It is taken
	// for this item only (and, when the item has the requested target's
	// identity, for the requested target), whatever Err says, and ignored
	// when the request as a whole failed or timed out. A reader names a
	// key only for the whole answer of that policy (the statement it
	// runs), evaluated no earlier than the body; Discover is still asked.
	Decision *TargetDecision
}

// Reader reads the bodies of planned targets. It must enforce current
// access and the planned identity in the storage request itself, honor ctx
// and allow concurrent calls. It returns one result per item of the
// request, in order, and a body only when it fits its item's Limit and the
// sum of the bodies it returns stays within the request's Budget: an item
// past the Budget is a *[TooLargeError] with its size. An error instead of results
// is the same error for every item. The gateway admits the results in plan
// order exactly as it would the items read one by one; one request runs
// under one ItemTimeout.
type Reader interface {
	Read(ctx context.Context, req ReadRequest) ([]ReadResult, error)
}

// ItemReader is the [Reader] that reads one item at a time with a
// function. The gateway recognizes it and calls the function once per
// item, in plan order, each under its own ItemTimeout and with the Limit
// that admission leaves after the items before it. A host that wraps an
// ItemReader (to time, count or guard its storage requests) keeps that
// by wrapping the function into another ItemReader; any other Reader is
// asked for batches.
type ItemReader func(ctx context.Context, item ReadItem) (ResourcePayload, error)

// Read reads the items of req one after the other within req.Budget.
func (f ItemReader) Read(ctx context.Context, req ReadRequest) ([]ReadResult, error) {
	out := make([]ReadResult, len(req.Items))
	left := req.Budget
	for i, it := range req.Items {
		it.Limit = min(it.Limit, left)
		p, err := f(ctx, it)
		out[i] = ReadResult{Payload: p, Err: err}
		if err == nil {
			left = max(left-p.Len(), 0)
		}
	}
	return out, nil
}
