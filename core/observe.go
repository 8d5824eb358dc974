package core

import "context"

// The names of the phases of a read, in the order a read passes them
// ([Phase].Name).
const (
	// phaseSelection matches the request URI against the definitions.
	phaseSelection = "selection"
	// phaseDiscovery asks the policy whether the caller may know of the
	// matched definition.
	phaseDiscovery = "discovery"
	// phasePlan asks the binding's resolver for the read plan.
	phasePlan = "plan"
	// phaseDecide is the decision pass before the body reads
	// ([PassBeforeReads]).
	phaseDecide = "decide"
	// phaseItem is one planned item's body read; its end carries the item's
	// issue code, empty when it was admitted.
	phaseItem = "item"
	// phaseRecheck is the final decision pass after the body reads
	// ([PassRecheck]).
	phaseRecheck = "recheck"
	// phaseAssembly applies the final decisions and builds the result.
	phaseAssembly = "assembly"
)

// Phase describes one phase of [Resources.Read] to an [Observer]: Name,
// Stage, Item and Items as the phase begins ([Observer].Start gets only
// those, which hold no URI, principal or authorization data), and the
// same four with how the phase ended in the value the function Start
// returns is called with.
type Phase struct {
	// Name is the phase, as span and attribute tables use it: "selection",
	// "discovery", "plan", "decide", "item" (one per planned item's body
	// read), "recheck" or "assembly", in the order a read passes them.
	Name string
	// Stage is the decision pass's stage for the "decide" and "recheck"
	// phases, else zero.
	Stage PassStage
	// Item is the item's index in plan order for an "item" phase, else -1.
	Item int
	// Items is the number of planned items, known from the "decide" phase on,
	// else zero.
	Items int

	// Issue is an "item" phase's issue code at its end, empty when the item
	// was admitted (a later recheck may still remove it).
	Issue IssueCode
	// Err is the phase's error at its end, nil when it succeeded. It is a
	// *[Failure] or the read's context error; its cause is private.
	Err error
	// Target is an "item" phase's item target at its end, else the zero
	// target. Unlike the fields set at the start it names the item (its
	// URI, its [ObjectRef] pin and private authorization data), for an
	// audit record; a trace observer must not copy it into a span.
	Target ResourceTarget
	// Served is, at the end of an "item" phase admitted from a body its
	// source read, the object version the source served it at: the ETag
	// and VersionID of [ResourcePayload.ObjectVersion]. For an object its
	// plan did not pin, the identity the source pinned or found as it
	// read. Zero for a row's body.
	Served ObjectRef
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
	Start(ctx context.Context, p Phase) (context.Context, func(Phase))
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

// phaseEnd ends a phase that startPhase began: its end function (nil
// when no observer watches) and its start fields.
type phaseEnd struct {
	end         func(Phase)
	name        string
	stage       PassStage
	item, items int
}

// done ends the phase with the end fields of e.
func (pe phaseEnd) done(e Phase) {
	if pe.end != nil {
		e.Name, e.Stage, e.Item, e.Items = pe.name, pe.stage, pe.item, pe.items
		pe.end(e)
	}
}

// startPhase begins p under o, or does nothing when o is nil.
func startPhase(ctx context.Context, o Observer, p Phase) (context.Context, phaseEnd) {
	if o == nil {
		return ctx, phaseEnd{}
	}
	ctx, end := o.Start(ctx, p)
	return ctx, phaseEnd{end, p.Name, p.Stage, p.Item, p.Items}
}

// observed runs f as phase p under o: with o nil, f runs on ctx unobserved.
func observed(ctx context.Context, o Observer, p Phase, f func(context.Context) error) error {
	if o == nil {
		return f(ctx)
	}
	ctx, end := o.Start(ctx, p)
	err := f(ctx)
	p.Err = err
	end(p)
	return err
}
