package core

import "context"

// TargetPolicy decides access one target at a time. [PerTarget] adapts it
// to the [ResourcePolicy] the gateway asks. All three callbacks are
// required, must honor ctx and must allow concurrent calls. Discover and
// Read deny by returning a [FailureUnavailable] error; any other error, and any Visibility
// error, fails the whole operation.
type TargetPolicy struct {
	// Discover decides whether the caller may know of a definition.
	Discover func(ctx context.Context, d ResourceDefinition) error
	// Visibility decides whether a target is part of the caller's selection.
	Visibility func(ctx context.Context, t ResourceTarget) (Visibility, error)
	// Read decides whether the caller may read a visible target.
	Read func(ctx context.Context, t ResourceTarget) error
}

// PerTarget returns the [ResourcePolicy] that answers each pass by asking p
// about every target of it in order: Visibility, then Read for a visible
// target. At the [PassRecheck] stage it asks Discover first, since the
// recheck stands in for discovery. A hidden or read-denied requested target
// (the first of the pass) ends the pass without asking about the items. A
// nil callback in p makes [NewResources] fail with a *[ConfigError].
func PerTarget(p TargetPolicy) ResourcePolicy {
	rp := ResourcePolicy{Discover: p.Discover}
	switch {
	case p.Visibility == nil:
		rp.missing = "TargetPolicy.Visibility"
	case p.Read == nil:
		rp.missing = "TargetPolicy.Read"
	}
	rp.Decide = func(ctx context.Context, pass PolicyPass) ([]TargetDecision, error) {
		if pass.Stage == PassRecheck {
			if err := guard(ctx, func() error { return p.Discover(ctx, pass.Definition) }); err != nil {
				if isUnavailable(err) {
					return nil, err
				}
				return nil, &perTargetError{callbackFailure(FailurePolicy, err)}
			}
		}
		ds := make([]TargetDecision, len(pass.Targets))
		for i, t := range pass.Targets {
			d, err := p.decide(ctx, t)
			if err != nil {
				return nil, err
			}
			ds[i] = d
			if i == 0 && (!d.Visible || !d.Read) {
				break // the requested target ends the read
			}
		}
		return ds, nil
	}
	return rp
}

// decide asks for a target's visibility and, when visible, its read
// permission. Any error it returns is a whole-read policy failure (even a
// [FailureUnavailable] error from Visibility), wrapped so that the gateway does not
// read it as a denial.
func (p TargetPolicy) decide(ctx context.Context, t ResourceTarget) (TargetDecision, error) {
	var vis Visibility
	err := guard(ctx, func() (err error) {
		vis, err = p.Visibility(ctx, t)
		return err
	})
	if err != nil {
		return TargetDecision{}, &perTargetError{callbackFailure(FailurePolicy, err)}
	}
	if !vis.Visible {
		return TargetDecision{}, nil
	}
	err = guard(ctx, func() error { return p.Read(ctx, t) })
	switch {
	case err == nil:
		return TargetDecision{Visibility: vis, Read: true}, nil
	case isUnavailable(err):
		return TargetDecision{Visibility: vis}, nil
	}
	return TargetDecision{}, &perTargetError{callbackFailure(FailurePolicy, err)}
}

// perTargetError carries the whole-read failure a [PerTarget] callback
// decided, past the gateway's reading of a Decide error.
type perTargetError struct{ f *Failure }

func (e *perTargetError) Error() string { return e.f.Error() }
func (e *perTargetError) Unwrap() error { return e.f }
