package core

import "context"

// Phase names one phase of [Resources.Read] that an [Observer] sees.
type Phase uint8

// The phases of a read, in the order a read passes them. An observer tells
// them apart by [Phase.String]; PhaseItem, the one phase per planned item
// (with its index), also by value.
const (
	// phaseSelection matches the request URI against the definitions.
	phaseSelection Phase = iota + 1
	// phaseDiscovery asks the policy whether the caller may know of the
	// matched definition.
	phaseDiscovery
	// phasePlan asks the binding's resolver for the read plan.
	phasePlan
	// phaseDecide is the decision pass before the body reads
	// ([PassBeforeReads]).
	phaseDecide
	// PhaseItem is one planned item's body read; its end carries the item's
	// issue code, empty when it was admitted.
	PhaseItem
	// phaseRecheck is the final decision pass after the body reads
	// ([PassRecheck]).
	phaseRecheck
	// phaseAssembly applies the final decisions and builds the result.
	phaseAssembly
)

// String returns the phase's name as the span and attribute tables use it:
// "selection", "discovery", "plan", "decide", "item", "recheck" or
// "assembly".
func (p Phase) String() string {
	switch p {
	case phaseSelection:
		return "selection"
	case phaseDiscovery:
		return "discovery"
	case phasePlan:
		return "plan"
	case phaseDecide:
		return "decide"
	case PhaseItem:
		return "item"
	case phaseRecheck:
		return "recheck"
	case phaseAssembly:
		return "assembly"
	}
	return "unknown"
}

// PhaseStart describes a phase as it begins. It holds no URI, principal or
// authorization data.
type PhaseStart struct {
	Phase Phase
	// Stage is the decision pass's stage for the "decide" and "recheck"
	// phases, else zero.
	Stage PassStage
	// Item is the item's index in plan order for [PhaseItem], else -1.
	Item int
	// Items is the number of planned items, known from the "decide" phase on,
	// else zero.
	Items int
}

// PhaseEnd describes how a phase ended.
type PhaseEnd struct {
	// Issue is a [PhaseItem]'s issue code, empty when the item was admitted
	// (a later recheck may still remove it).
	Issue IssueCode
	// Err is the phase's error, nil when it succeeded. It is a *[Failure]
	// or the read's context error; its cause is private.
	Err error
	// Target is a [PhaseItem]'s item target, else the zero target. Unlike
	// the rest of PhaseStart and PhaseEnd it names the item (its URI, its
	// [ObjectRef] pin and private authorization data), for an audit
	// record; a trace observer must not copy it into a span.
	Target ResourceTarget
	// Served is, for a [PhaseItem] admitted from a body its source read,
	// the object version the source served it at
	// ([ResourcePayload.ObjectVersion]): for an object its plan did not
	// pin, the identity the source pinned or found as it read. Zero for a
	// row's body.
	Served ObjectVersion
	// Definition is the matched definition at the end of the "selection"
	// phase, else the zero definition.
	Definition ResourceDefinition
	// Removed counts, at the end of the "assembly" phase, the planned
	// items the read did not serve, by the step that removed them and
	// their issue code (hidden items included, which no client learns
	// of), for an audit record; like Target it is not for a span.
	Removed []RemovedItems
}

// RemovedItems counts the planned items of a read that it did not serve
// for one reason: the step that removed them and their issue code.
type RemovedItems struct {
	// Stage is the decision pass that removed them: [PassBeforeReads]
	// (hidden or denied before any body read) or [PassRecheck] (hidden,
	// revoked or newly visible at the recheck, including by a decision
	// storage took with the body); zero when the body read itself did not
	// deliver them (storage refused or failed, a limit, bad content).
	Stage PassStage
	// Code is their issue code; empty for hidden items, which have none.
	Code IssueCode
	// Count is how many items (a truncated plan's left-out items count
	// as one, as its issue does).
	Count int
}

// Observer sees the phases of [Resources.Read], for example to record
// trace spans. Start is called as a phase begins, with the read's context;
// the context it returns is the one the phase's callbacks (policy, resolver,
// reader) receive, so a span it carries parents their store calls. The
// function it returns is called once as the phase ends. Both run on the
// goroutine that runs the read's callbacks, possibly after Read has
// returned on a timeout, and must not block.
type Observer interface {
	Start(ctx context.Context, p PhaseStart) (context.Context, func(PhaseEnd))
}

type observerKey struct{}

// WithObserver returns a context whose reads [Resources.Read] reports to o.
// A nil o removes an observer ctx carries.
func WithObserver(ctx context.Context, o Observer) context.Context {
	return context.WithValue(ctx, observerKey{}, o)
}

// observerFrom returns the observer ctx carries, or nil.
func observerFrom(ctx context.Context) Observer {
	o, _ := ctx.Value(observerKey{}).(Observer)
	return o
}

// noEnd ends a phase no observer watches.
func noEnd(PhaseEnd) {}

// startPhase begins p under o, or does nothing when o is nil.
func startPhase(ctx context.Context, o Observer, p PhaseStart) (context.Context, func(PhaseEnd)) {
	if o == nil {
		return ctx, noEnd
	}
	return o.Start(ctx, p)
}

// observed runs f as phase p under o: with o nil, f runs on ctx unobserved.
func observed(ctx context.Context, o Observer, p PhaseStart, f func(context.Context) error) error {
	if o == nil {
		return f(ctx)
	}
	ctx, end := o.Start(ctx, p)
	err := f(ctx)
	end(PhaseEnd{Err: err})
	return err
}
