package core

import (
	"errors"
	"sync/atomic"
)

// maxInlineBytes bounds the content a plan item may carry
// ([ResourceTarget.WithContent]).
const maxInlineBytes = 64 << 10

// inline is the content a plan item carries and the decision storage took
// with it. Neither is part of the target's identity.
type inline struct {
	payload  ResourcePayload
	decision *TargetDecision // nil: the recheck asks the policy
	planned  uint64          // planClock when WithContent ran
}

// planClock orders the plannings of content against the reads that use
// it: a read ticks it before resolving, and content stamped before that
// tick was planned before the read began (see [ResourceTarget.WithContent]).
var planClock atomic.Uint64

// WithContent returns t carrying its content p, read from storage while
// planning, and, when d is not nil, the policy's answer for t that storage
// evaluated in the same snapshot as p (for example the grant flags a plan
// statement read beside the body it returned). The gateway reads no body
// for such an item: when the decision before the reads ([PassBeforeReads],
// still asked about every target) lets the caller read it, p is admitted
// exactly as a body a reader returned would be (MaxItemBytes, the
// aggregate budget, the item count, invalid content give the same issues),
// and d is its recheck, as a [ReadResult.Decision] is for a body read; with
// a nil d the recheck asks the policy about it. An item the decision
// before the reads hides or denies is never admitted, and its recheck asks
// the policy. Pass d only when it is the answer of the policy the gateway
// serves the binding under: any other policy must be asked.
//
// Content is a read made when the target is planned, so it serves only the
// read whose planning made it: a target planned before the read began (one
// a resolver kept from an earlier request, or took from [Authorize], which
// hands targets out without content) is read by its reader like any
// other, so that a change or revocation since is seen.
//
// Content and decision are not part of the target's identity and never
// reach the policy or a reader: a [PolicyPass] lists the target without
// them, with the same URI, representation, authorization data and object
// reference. p must not be zero and hold at most 64 KiB: a bound on what a
// plan holds in memory, not a recommendation, since inline content is
// fetched for every planned item before the policy has decided any of
// them; a store inlines only small bodies (a few KiB: fields, JSON
// documents) and reads the others with its body reader, which must still
// read the target. A target with an [ObjectRef] cannot carry content (it
// is read by its object source), nor can a target with content be given
// one.
func (t ResourceTarget) WithContent(p ResourcePayload, d *TargetDecision) (ResourceTarget, error) {
	switch {
	case t.IsZero():
		return ResourceTarget{}, errors.New("core: content on a zero target")
	case p.IsZero():
		return ResourceTarget{}, errors.New("core: content must be a payload built by TextPayload or BlobPayload")
	case p.Len() > maxInlineBytes:
		return ResourceTarget{}, errors.New("core: content exceeds 64 KiB")
	case t.obj != nil:
		return ResourceTarget{}, errors.New("core: a target with an object reference cannot carry content")
	}
	in := &inline{payload: p, planned: planClock.Load()}
	if d != nil {
		dc := *d
		in.decision = &dc
	}
	t.inline = in
	return t, nil
}

// planned returns t as a read that ticked planClock to since before
// resolving uses it: without content planned before then.
func (t ResourceTarget) planned(since uint64) ResourceTarget {
	if t.inline != nil && t.inline.planned < since {
		return t.identity()
	}
	return t
}

// identity returns t without its content: the target a policy and a
// reader see.
func (t ResourceTarget) identity() ResourceTarget {
	t.inline = nil
	return t
}
