package core

import "errors"

// maxInlineBytes bounds the content a plan item may carry
// ([ResourceTarget.WithContent]).
const maxInlineBytes = 64 << 10

// inline is the content a plan item carries and the decision storage took
// with it. Neither is part of the target's identity.
type inline struct {
	payload  ResourcePayload
	decision TargetDecision
}

// WithContent returns t carrying its content p and d, the policy's answer
// for t that storage evaluated in the same snapshot as p (for example the
// grant flags a plan statement read beside the body it returned). The
// gateway reads no body for such an item: when the decision before the
// reads ([PassBeforeReads], still asked about every target) lets the caller
// read it, p is admitted exactly as a body a reader returned would be
// (MaxItemBytes, the aggregate budget, the item count, invalid content
// give the same issues), and d is its recheck, as a [ReadResult.Decision]
// is for a body read. An item the decision before the reads hides or
// denies is never admitted, and its recheck asks the policy.
//
// Content and decision are not part of the target's identity and never
// reach the policy or a reader: a [PolicyPass] lists the target without
// them, with the same URI, representation, authorization data and object
// reference. p must not be zero and hold at most 64 KiB: a bound on what a
// plan holds in memory, not a recommendation, since inline content is
// fetched for every planned item before the policy has decided any of
// them; a store inlines only small bodies (a few KiB: fields, JSON
// documents) and reads the others with its body reader. A target with an
// [ObjectRef] cannot carry content (it is read by its object source), nor
// can a target with content be given one.
func (t ResourceTarget) WithContent(p ResourcePayload, d TargetDecision) (ResourceTarget, error) {
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
	t.inline = &inline{payload: p, decision: d}
	return t, nil
}

// identity returns t without its content: the target a policy and a
// reader see.
func (t ResourceTarget) identity() ResourceTarget {
	t.inline = nil
	return t
}
