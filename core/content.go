package core

import (
	"errors"
	"reflect"
)

// maxInlineBytes bounds the content a plan item may carry
// ([ResourceMatch.WithContent]).
const maxInlineBytes = 64 << 10

// inline is the content a plan item carries and the decision storage took
// with it. Neither is part of the target's identity.
type inline struct {
	payload  ResourcePayload
	decision *TargetDecision // nil: the recheck asks the policy
	read     *planning       // the request whose match planned it
}

// WithContent returns t carrying its content p, read from storage while
// planning the request of m, and, when d is not nil, the policy's answer
// for t that storage evaluated in the same snapshot as p (for example the
// grant flags a plan statement read beside the body it returned), naming
// the policy it answers for in its Policy field ([ResourceMatch.Policy]).
// The gateway reads no body for such an item: when the decision before the
// reads ([PassBeforeReads], still asked about every target) lets the
// caller read it, p is admitted exactly as a body a reader returned would
// be (MaxItemBytes, the aggregate budget, the item count, invalid content
// give the same issues), and d is its recheck, as a [ReadResult.Decision]
// is for a body read, when d.Policy is the key of the policy in force
// ([ResourcePolicy].Key); with a nil d, or one naming no key or another
// key, the recheck asks the policy about it. An item the decision before
// the reads hides or denies is never admitted, and its recheck asks the
// policy.
//
// Content is a read made while m's request is planned, so it serves only
// that request: a target with content planned for another request (one a
// resolver kept from an earlier request, or a match kept since), and any
// target from [Authorize], which hands targets out without content, is
// read by its reader like any other, so that a change or revocation since
// is seen. WithContent fails for a match the gateway is not resolving.
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
func (m ResourceMatch) WithContent(t ResourceTarget, p ResourcePayload, d *TargetDecision) (ResourceTarget, error) {
	switch {
	case m.read == nil:
		return ResourceTarget{}, errors.New("core: content needs the match of a request being resolved")
	case t.IsZero():
		return ResourceTarget{}, errors.New("core: content on a zero target")
	case p.IsZero():
		return ResourceTarget{}, errors.New("core: content must be a payload built by TextPayload or BlobPayload")
	case p.Len() > maxInlineBytes:
		return ResourceTarget{}, errors.New("core: content exceeds 64 KiB")
	case t.obj != nil:
		return ResourceTarget{}, errors.New("core: a target with an object reference cannot carry content")
	}
	in := &inline{payload: p, read: m.read}
	if d != nil {
		dc := *d
		in.decision = &dc
	}
	t.inline = in
	return t, nil
}

// plannedBy returns t as the request whose match is m uses it: without
// content another request planned.
func (t ResourceTarget) plannedBy(m ResourceMatch) ResourceTarget {
	if t.inline != nil && t.inline.read != m.read {
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

// storageDecision returns d, a decision storage took with a body for a
// read of def, as the item's recheck: only when d names the key of the
// policy that answers def's passes. Any other is dropped (ok false), and
// the recheck asks the policy.
func storageDecision(def *definition, d *TargetDecision) (_ decision, ok bool) {
	if d == nil || def.policy == nil || !reflect.ValueOf(d.Policy).Comparable() || d.Policy != def.policy {
		return decision{}, false
	}
	return passDecision(*d), true
}
