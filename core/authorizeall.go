package core

import (
	"context"
	"fmt"
)

// batchResolver is a [Resolver] that also plans several requests of its
// definition at once, for [Resources.AuthorizeAll]: a store that can plan
// them in one round trip saves one per request. A binding's Resolver may
// have the method; reads still call Resolve.
type batchResolver interface {
	Resolver
	// ResolveAll plans every match of ms, all of the binding's definition,
	// in order: plans[i] and errs[i] answer ms[i] exactly as
	// Resolve(ctx, ms[i]) would. It returns len(ms) of each; an error that
	// fails the whole batch is errs[i] for every i.
	ResolveAll(ctx context.Context, ms []ResourceMatch) (plans []ResourceReadPlan, errs []error)
}

// AuthorizeAll authorizes every URI of uris, for the caller that ctx
// identifies, as [Resources.Authorize] would one by one: as[i] and errs[i]
// answer uris[i], with the same decisions and the same *[Failure] kinds.
// The whole call runs under one ReadTimeout unless ctx already carries a
// request scope; when it ends first, every URI not yet answered gets its
// failure.
//
// It asks once where one question serves several URIs: discovery once per
// definition, and the plans of a definition whose Resolver also has the
// method ResolveAll(ctx, ms []ResourceMatch) (plans []ResourceReadPlan,
// errs []error) in one ResolveAll call (plans[i] and errs[i] answer ms[i]
// exactly as Resolve(ctx, ms[i]) would; an error that fails the whole
// batch is errs[i] for every i). The decision before the reads
// stays one [ResourcePolicy].Decide pass per URI, as each URI has a plan of
// its own (a policy that takes its answer from the plans, as the Postgres
// store's does, asks storage nothing there). Adapters use it to recheck
// all the subscriptions of one session that a change concerns at once. The
// caller bounds len(uris).
func (r *Resources) AuthorizeAll(ctx context.Context, uris []string) (as []Authorization, errs []error) {
	type answer struct {
		as   []Authorization
		errs []error
	}
	ans, err := scoped(ctx, r.limits.ReadTimeout, func(ctx context.Context) (answer, error) {
		as, errs := r.authorizeAll(ctx, uris)
		return answer{as, errs}, nil
	})
	if err != nil {
		errs = make([]error, len(uris))
		for i := range errs {
			errs[i] = err
		}
		return make([]Authorization, len(uris)), errs
	}
	return ans.as, ans.errs
}

func (r *Resources) authorizeAll(ctx context.Context, uris []string) ([]Authorization, []error) {
	as, errs := make([]Authorization, len(uris)), make([]error, len(uris))
	ms := make([]ResourceMatch, len(uris))
	var defs []*definition // in order of first appearance
	byDef := map[*definition][]int{}
	for i, uri := range uris {
		m, err := r.sel.match(uri)
		if err != nil {
			errs[i] = err
			continue
		}
		ms[i] = m
		if byDef[m.def] == nil {
			defs = append(defs, m.def)
		}
		byDef[m.def] = append(byDef[m.def], i)
	}
	for _, def := range defs {
		idx := byDef[def]
		if err := r.discover(ctx, def); err != nil {
			for _, i := range idx {
				errs[i] = err
			}
			continue
		}
		for _, i := range idx {
			ms[i].read = &planning{uri: uris[i]}
		}
		plans, perr := r.resolveAll(ctx, def, ms, idx)
		for k, i := range idx {
			if perr[k] != nil {
				errs[i] = perr[k]
				continue
			}
			st, err := r.decideBefore(ctx, nil, ms[i], plans[k])
			if err != nil {
				errs[i] = err
				continue
			}
			as[i] = authorization(plans[k], st)
		}
	}
	return as, errs
}

// resolveAll plans ms[i] for every i of idx, all matches of def: in one
// ResolveAll call when def's resolver is a batchResolver and there are
// several, else one Resolve each. Every plan is validated as a read's.
func (r *Resources) resolveAll(ctx context.Context, def *definition, ms []ResourceMatch, idx []int) ([]ResourceReadPlan, []error) {
	plans, errs := make([]ResourceReadPlan, len(idx)), make([]error, len(idx))
	br, ok := def.resolver.(batchResolver)
	if !ok || len(idx) < 2 {
		for k, i := range idx {
			plans[k], errs[k] = r.resolve(ctx, def, ms[i])
		}
		return plans, errs
	}
	batch := make([]ResourceMatch, len(idx))
	for k, i := range idx {
		batch[k] = ms[i]
	}
	var got []ResourceReadPlan
	var gerrs []error
	err := guard(ctx, func() error {
		got, gerrs = br.ResolveAll(ctx, batch)
		return nil
	})
	if err == nil && (len(got) != len(batch) || len(gerrs) != len(batch)) {
		err = fmt.Errorf("resolver answered %d plans and %d errors for %d requests", len(got), len(gerrs), len(batch))
	}
	for k := range batch {
		if err != nil {
			_, errs[k] = r.checkPlan(batch[k], ResourceReadPlan{}, err)
			continue
		}
		plans[k], errs[k] = r.checkPlan(batch[k], got[k], gerrs[k])
	}
	return plans, errs
}
