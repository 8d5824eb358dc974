package core

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"

	"go.phpboyscout.uk/mcp/resources/internal/itemsize"

	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

// Read selects, resolves, authorizes and reads the resource at uri for the
// caller that ctx identifies to the policy.
//
// A nil error comes with a result that is complete or, when visible items are
// missing (a plan its resolver cut at a limit, [ResourceReadPlan.Truncated],
// included), partial (Partial true, a warning item first). A non-nil error is a
// *[Failure] and comes with no result: root denial or no match
// ([FailureUnavailable]), a bad request, an ambiguous match, an invalid plan,
// an operational policy failure, a storage outage while planning or
// deciding ([FailureOutage], retryable), cancellation, the whole-read
// timeout, a report that cannot fit, or visible items none of which
// survived ([FailureNoItems] with their safe issues, or
// [FailureUnavailable] when every one of them was unavailable, so that an
// item storage refused looks like a missing one).
//
// Body reads run in plan order: an [ItemReader] is asked one item at a
// time, each under ItemTimeout with its [ReadItem] Limit; a native batch
// [Reader] is asked once for consecutive items, under one ItemTimeout.
// Results are admitted in plan order either way; an item carrying its
// content ([ResourceMatch.WithContent]) is admitted from it, unread.
// Before returning, Read rechecks discovery, the requested target and every
// planned item under the current policy. The decision before the reads is
// one [ResourcePolicy].Decide call for the whole plan; the recheck is one
// Decide call for the requested target and the items storage did not decide
// with their body ([ReadResult].Decision, the decision of inline content),
// or, when it decided them all, one Discover call.
//
// Read returns when the whole read ends (cancellation or ReadTimeout) even
// if a host callback ignores its context. From then on it starts no further
// callback of any kind, policy or binding; the callback that was running
// may finish, and what it returns is discarded.
func (r *Resources) Read(ctx context.Context, uri string) (*ResourceResult, error) {
	return scoped(ctx, r.limits.ReadTimeout, func(ctx context.Context) (*ResourceResult, error) {
		return r.read(ctx, uri, exactSize)
	})
}

// The module's adapter reads with its own sizer through itemsize.Read.
func init() {
	itemsize.Install(func(ctx context.Context, r *Resources, uri string, f itemsize.Func) (*ResourceResult, error) {
		sizeOf := func(uri string, p ResourcePayload, meta []byte) int64 {
			return f(itemsize.Item{URI: uri, MIMEType: p.mimeType, Text: p.text, Blob: p.blob, IsBlob: p.kind == payloadBlob, Meta: meta})
		}
		return scoped(ctx, r.limits.ReadTimeout, func(ctx context.Context) (*ResourceResult, error) {
			return r.read(ctx, uri, sizeOf)
		})
	})
}

// itemState follows one planned target through a read.
type itemState struct {
	target ResourceTarget
	first  decision // before any body read
	final  decision // after the last body read
	// rechecked says that final is the decision storage took with the
	// body (a ReadResult's Decision, or the decision of inline content),
	// which the recheck does not ask the policy again.
	rechecked bool
	payload   ResourcePayload
	size      int64 // encoded size of payload, separator included
	admitted  bool
	code      IssueCode // outcome when not admitted
}

type decision struct {
	vis     Visibility
	allowed bool
}

// budget tracks what admission may still spend.
type budget struct {
	payloadCap, encodedCap   int64 // for application items in an empty response
	payloadLeft, encodedLeft int64
	itemsLeft                int
	stopped                  bool
}

func (r *Resources) read(ctx context.Context, uri string, sizeOf itemSizeFunc) (*ResourceResult, error) {
	o := observerFrom(ctx)
	m, plan, st, err := r.prepare(ctx, o, uri)
	if err != nil {
		return nil, err
	}

	l := r.limits
	b := budget{
		payloadCap: l.MaxResponseBytes - l.ReportPayloadBytes,
		encodedCap: l.MaxResponseEncodedBytes - wire.ReserveBytes - wire.ConfigOverheadBytes - l.ReportEncodedBytes,
		itemsLeft:  l.MaxItems,
	}
	b.payloadLeft, b.encodedLeft = b.payloadCap, b.encodedCap
	if err := r.readItems(ctx, o, m.def, st, &b, sizeOf); err != nil {
		return nil, err
	}

	if err := observed(ctx, o, Phase{Name: phaseRecheck, Stage: PassRecheck, Item: -1, Items: len(st)}, func(ctx context.Context) error {
		return r.decidePlan(ctx, PassRecheck, m, plan, st)
	}); err != nil {
		return nil, err
	}
	_, end := startPhase(ctx, o, Phase{Name: phaseAssembly, Item: -1, Items: len(st)})
	res, err := r.assemble(st, plan.truncated, sizeOf)
	if o != nil {
		end.done(Phase{Err: err, Removed: removed(st, plan.truncated)})
	}
	return res, err
}

// removed counts the items of st that the read did not serve, by the step
// that removed them and their issue code, in the order assemble reads
// them, and a truncated plan's left-out items as one.
func removed(st []itemState, truncated bool) []RemovedItems {
	var out []RemovedItems
	add := func(stage PassStage, code IssueCode) {
		for k := range out {
			if out[k].Stage == stage && out[k].Code == code {
				out[k].Count++
				return
			}
		}
		out = append(out, RemovedItems{Stage: stage, Code: code, Count: 1})
	}
	for i := range st {
		s := &st[i]
		switch {
		case !s.final.vis.Visible && !s.first.vis.Visible:
			add(PassBeforeReads, "")
		case !s.final.vis.Visible:
			add(PassRecheck, "")
		case !s.first.vis.Visible:
			add(PassRecheck, IssueUnavailable) // newly visible
		case !s.first.allowed:
			add(PassBeforeReads, IssueUnavailable)
		case !s.final.allowed:
			add(PassRecheck, IssueUnavailable) // revoked
		case s.admitted:
		default:
			add(0, s.code)
		}
	}
	if truncated {
		add(0, IssueBudgetExceeded)
	}
	return out
}

// prepare takes a read of uri up to its first body read: it selects the
// definition, checks discovery, resolves and validates the plan, and
// decides it before the reads, each step a phase that o (when not nil)
// observes. st follows the plan's items, with their first decisions.
func (r *Resources) prepare(ctx context.Context, o Observer, uri string) (m ResourceMatch, plan ResourceReadPlan, st []itemState, err error) {
	_, end := startPhase(ctx, o, Phase{Name: phaseSelection, Item: -1})
	m, err = r.sel.match(uri)
	if o != nil {
		pe := Phase{Err: err}
		if err == nil {
			pe.Definition = m.def.description()
		}
		end.done(pe)
	}
	if err != nil {
		return m, plan, nil, err
	}
	if err = observed(ctx, o, Phase{Name: phaseDiscovery, Item: -1}, func(ctx context.Context) error {
		return r.discover(ctx, m.def)
	}); err != nil {
		return m, plan, nil, err
	}
	m.read = &planning{uri: uri}
	if err = observed(ctx, o, Phase{Name: phasePlan, Item: -1}, func(ctx context.Context) (err error) {
		plan, err = r.resolve(ctx, m.def, m)
		return err
	}); err != nil {
		return m, plan, nil, err
	}
	st, err = r.decideBefore(ctx, o, m, plan)
	return m, plan, st, err
}

// decideBefore decides a resolved plan before the reads (planned on m,
// whose inline contents it keeps) and returns the state that follows its
// items.
func (r *Resources) decideBefore(ctx context.Context, o Observer, m ResourceMatch, plan ResourceReadPlan) ([]itemState, error) {
	st := make([]itemState, len(plan.items))
	for i, t := range plan.items {
		st[i].target = t.plannedBy(m)
	}
	err := observed(ctx, o, Phase{Name: phaseDecide, Stage: PassBeforeReads, Item: -1, Items: len(st)}, func(ctx context.Context) error {
		return r.decidePlan(ctx, PassBeforeReads, m, plan, st)
	})
	return st, err
}

// discover checks that the caller may know of the definition.
func (r *Resources) discover(ctx context.Context, def *definition) error {
	err := guard(ctx, func() error { return r.policy.Discover(ctx, def.description()) })
	switch {
	case err == nil:
		return nil
	case isUnavailable(err):
		return NewFailure(FailureUnavailable, err)
	}
	return callbackFailure(FailurePolicy, err)
}

// resolve asks the binding for a plan and validates it.
func (r *Resources) resolve(ctx context.Context, def *definition, m ResourceMatch) (ResourceReadPlan, error) {
	var plan ResourceReadPlan
	err := guard(ctx, func() (err error) {
		plan, err = def.resolver.Resolve(ctx, m)
		return err
	})
	return r.checkPlan(m, plan, err)
}

// checkPlan validates what the resolver answered for m: its plan, or its
// error as the failure a read reports.
func (r *Resources) checkPlan(m ResourceMatch, plan ResourceReadPlan, err error) (ResourceReadPlan, error) {
	switch {
	case err != nil && isUnavailable(err):
		return plan, NewFailure(FailureUnavailable, err)
	case err != nil:
		return plan, callbackFailure(FailureInvalidPlan, err)
	case plan.IsZero():
		return plan, NewFailure(FailureInvalidPlan, errors.New("resolver returned a zero plan"))
	case plan.requested.uri != m.uri:
		return plan, NewFailure(FailureInvalidPlan, errors.New("plan's requested target is not the request URI"))
	case len(plan.items) > r.limits.MaxPlanItems:
		return plan, NewFailure(FailureInvalidPlan, errors.New("plan names more targets than MaxPlanItems"))
	}
	for _, t := range plan.items {
		if len(t.uri) > r.limits.MaxURIBytes {
			return plan, NewFailure(FailureInvalidPlan, errors.New("plan target URI exceeds MaxURIBytes"))
		}
		if t.obj != nil && r.objects[t.obj.Source] == nil {
			return plan, NewFailure(FailureInvalidPlan, errors.New("plan item names an object source that is not registered"))
		}
	}
	return plan, nil
}

// decidePlan decides the requested target and every item of plan at stage,
// recording each item's decision in st (first before the reads, final at
// the recheck; st[i] follows plan item i). The recheck checks discovery
// too (the policy's Decide stands in for it). A hidden or read-denied
// requested target is [FailureUnavailable]. The whole pass is one call.
//
// At the recheck, an item whose decision storage took with its body
// (st[i].rechecked: a [ReadResult.Decision], or the decision of inline
// content) is decided by it and left out of the pass. The requested
// target stays the first target of any pass that is asked, since policies
// read the first target as the requested one; when its identity is an
// item's, that item's decision decides it too. When nothing is left to
// ask, the recheck of discovery is a Discover call instead of Decide.
func (r *Resources) decidePlan(ctx context.Context, stage PassStage, m ResourceMatch, plan ResourceReadPlan, st []itemState) error {
	def := m.def
	recheck := stage == PassRecheck
	targets, dup := passTargets(plan, st, recheck)
	// own is the decision storage took for the requested target, if any.
	var own *decision
	if recheck && dup >= 0 && st[dup].rechecked {
		own = &st[dup].final
	}
	var req decision
	if own != nil && len(targets) == 1 {
		if err := r.discover(ctx, def); err != nil {
			return err
		}
		req = *own
	} else {
		var ds []TargetDecision
		var decided *perTargetError
		err := guard(ctx, func() (err error) {
			ds, err = r.policy.Decide(ctx, PolicyPass{Stage: stage, Definition: def.description(), Targets: targets, Captures: m.Vars()})
			return err
		})
		switch {
		case err != nil && errors.As(err, &decided):
			return decided.f
		case err != nil && isUnavailable(err):
			return NewFailure(FailureUnavailable, err)
		case err != nil:
			return callbackFailure(FailurePolicy, err)
		case len(ds) != len(targets):
			return NewFailure(FailurePolicy, fmt.Errorf("policy returned %d decisions for %d targets", len(ds), len(targets)))
		}
		req = passDecision(ds[0])
		if own != nil && (!own.vis.Visible || !own.allowed) {
			req = *own // either answer hiding or denying it denies the read
		}
		next := 1 // the pass index of the next listed item
		for i := range st {
			k := 0
			switch {
			case i == dup:
			case recheck && st[i].rechecked:
				continue
			default:
				k, next = next, next+1
			}
			if recheck {
				st[i].final = passDecision(ds[k])
			} else {
				st[i].first = passDecision(ds[k])
			}
		}
	}
	switch {
	case !req.vis.Visible:
		return NewFailure(FailureUnavailable, errors.New("requested target is hidden"))
	case !req.allowed:
		return NewFailure(FailureUnavailable, errors.New("requested target is read-denied"))
	}
	return nil
}

// passTargets lists the distinct targets of plan for a [PolicyPass],
// without their content: the requested target, then the items in plan
// order without the one (item URIs are unique) that has the requested
// target's identity, and, at the recheck, without the items storage
// decided with their body (st[i].rechecked). dup is that item's index, or
// -1.
func passTargets(plan ResourceReadPlan, st []itemState, recheck bool) (targets []ResourceTarget, dup int) {
	dup = -1
	targets = make([]ResourceTarget, 1, len(plan.items)+1)
	targets[0] = plan.requested.identity()
	for i, t := range plan.items {
		switch {
		case dup < 0 && sameTarget(t, plan.requested):
			dup = i
		case recheck && st[i].rechecked:
		default:
			targets = append(targets, t.identity())
		}
	}
	return targets, dup
}

// sameTarget reports whether a and b are one identity: URI, representation,
// authorization data and object reference (content is no part of it).
func sameTarget(a, b ResourceTarget) bool {
	return a.uri == b.uri && a.repr == b.repr && bytes.Equal(a.authz, b.authz) &&
		(a.obj == nil) == (b.obj == nil) && (a.obj == nil || *a.obj == *b.obj)
}

// passDecision is the gateway's decision for a policy's answer: a hidden
// target is hidden whatever else the answer says.
func passDecision(d TargetDecision) decision {
	if !d.Visible {
		return decision{}
	}
	return decision{vis: d.Visibility, allowed: d.Read}
}

// readItems reads the bodies of the readable items in plan order and
// admits them. Each item is read by the object source its [ObjectRef]
// names, or else by the binding's reader; an item carrying its content
// ([ResourceMatch.WithContent]) is admitted from it, unread. Consecutive
// readable items that one native batch [Reader] serves are one request,
// together with at most the items the count limit leaves (inline items
// among them count, and do not split it); an [ItemReader] is asked item by
// item. Only the end of the whole read returns an error.
func (r *Resources) readItems(ctx context.Context, o Observer, def *definition, st []itemState, b *budget, sizeOf itemSizeFunc) error {
	for i := 0; i < len(st); {
		s := &st[i]
		switch {
		case !s.first.vis.Visible:
			i++
			continue
		case !s.first.allowed:
			s.code = IssueUnavailable
			i++
			continue
		case b.stopped || b.itemsLeft == 0:
			b.stopped = true
			s.code = IssueBudgetExceeded
			s.contentDecision(def)
			i++
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.target.inline != nil {
			_, end := startPhase(ctx, o, Phase{Name: phaseItem, Item: i, Items: len(st)})
			r.admitContent(def, s, b, sizeOf)
			end.done(Phase{Issue: s.code, Target: s.target})
			i++
			continue
		}
		rd, from := r.readerOf(def, s.target)
		// The run: this item and, for a native batch reader, the readable
		// items after it (hidden and denied ones need no read, inline ones
		// are admitted in their place), up to what the count limit leaves.
		// An ItemReader's run is its one item.
		run := []int{i}
		j := i + 1
		_, perItem := rd.(ItemReader)
		for ; !perItem && j < len(st) && len(run) < b.itemsLeft; j++ {
			switch t := &st[j]; {
			case !t.first.vis.Visible:
				continue
			case !t.first.allowed:
				t.code = IssueUnavailable
				continue
			case t.target.inline != nil:
				run = append(run, j)
				continue
			}
			if _, other := r.readerOf(def, st[j].target); other != from {
				break
			}
			run = append(run, j)
		}
		if err := r.readBatch(ctx, o, def, rd, st, run, b, sizeOf); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// readerOf returns the reader of target t of def: the object source its
// [ObjectRef] names, else the binding's own reader; from names it ("" for
// the binding's).
func (r *Resources) readerOf(def *definition, t ResourceTarget) (rd Reader, from string) {
	if t.obj != nil {
		return r.objects[t.obj.Source], "object:" + t.obj.Source
	}
	return def.reader, ""
}

// readBatch asks rd for the items of st at the indexes of run that carry
// no content, in one request under one ItemTimeout (an [ItemReader]'s run
// is one item, so each of its items has an ItemTimeout of its own), then
// admits the results and the inline items of run in plan order. The
// Decision of a result becomes its item's recheck, unless the request as a
// whole failed or timed out.
func (r *Resources) readBatch(ctx context.Context, o Observer, def *definition, rd Reader, st []itemState, run []int, b *budget, sizeOf itemSizeFunc) error {
	limit := min(r.limits.MaxItemBytes, b.payloadLeft)
	req := ReadRequest{Items: make([]ReadItem, 0, len(run)), Budget: b.payloadLeft, Policy: def.policy}
	for _, i := range run {
		if st[i].target.inline == nil {
			req.Items = append(req.Items, ReadItem{Target: st[i].target, Limit: limit})
		}
	}
	ictx, end := startPhase(ctx, o, Phase{Name: phaseItem, Item: run[0], Items: len(st)})
	itemCtx, cancel := context.WithTimeout(ictx, r.limits.ItemTimeout)
	defer cancel()
	var res []ReadResult
	err := guard(ctx, func() (err error) {
		res, err = rd.Read(itemCtx, req)
		return err
	})
	if ctx.Err() != nil {
		end.done(Phase{Err: ctx.Err()})
		return ctx.Err()
	}
	if errors.Is(err, errScopeEnded) {
		end.done(Phase{Err: err})
		return err
	}
	timedOut := itemCtx.Err() != nil
	if err == nil && len(res) != len(req.Items) {
		err = fmt.Errorf("core: reader returned %d results for %d items", len(res), len(req.Items))
	}
	// left is what the reader's Budget left it before result k: the limit
	// a TooLarge is judged against (an item past it stops admission).
	left := req.Budget
	k := 0
	for n, i := range run {
		s := &st[i]
		if n > 0 {
			_, end = startPhase(ctx, o, Phase{Name: phaseItem, Item: i, Items: len(st)})
		}
		if s.target.inline != nil {
			r.admitContent(def, s, b, sizeOf)
			end.done(Phase{Issue: s.code, Target: s.target})
			continue
		}
		if !timedOut && err == nil {
			s.final, s.rechecked = storageDecision(def, res[k].Decision)
		}
		switch {
		case b.stopped || b.itemsLeft == 0:
			b.stopped = true
			s.code = IssueBudgetExceeded
		case timedOut:
			s.code = IssueTimeout
		case err != nil:
			r.admit(s, b, ResourcePayload{}, err, min(r.limits.MaxItemBytes, b.payloadLeft), sizeOf)
		default:
			r.admit(s, b, res[k].Payload, res[k].Err, min(limit, left), sizeOf)
			if res[k].Err == nil {
				left = max(left-res[k].Payload.Len(), 0)
			}
		}
		k++
		end.done(Phase{Issue: s.code, Target: s.target, Served: s.payload.ObjectVersion()})
	}
	return nil
}

// admitContent admits the content s's target carries exactly as a body a
// reader returned, and takes the decision that came with it as the item's
// recheck.
func (r *Resources) admitContent(def *definition, s *itemState, b *budget, sizeOf itemSizeFunc) {
	s.contentDecision(def)
	if b.stopped || b.itemsLeft == 0 {
		b.stopped = true
		s.code = IssueBudgetExceeded
		return
	}
	r.admit(s, b, s.target.inline.payload, nil, min(r.limits.MaxItemBytes, b.payloadLeft), sizeOf)
}

// contentDecision takes the decision of the content s's target carries, if
// any, as its recheck. Only an item the decision before the reads let
// through takes it: for one it hid or denied, the inline decision is older
// than the policy's answer, and the recheck asks the policy.
func (s *itemState) contentDecision(def *definition) {
	if in := s.target.inline; in != nil {
		s.final, s.rechecked = storageDecision(def, in.decision)
	}
}

// admit admits the body p a reader returned for s, or records the issue
// of err. limit is the item's read limit as admission stands now.
func (r *Resources) admit(s *itemState, b *budget, p ResourcePayload, err error, limit int64, sizeOf itemSizeFunc) {
	var tooLarge *TooLargeError
	switch {
	case err == nil:
	case errors.As(err, &tooLarge):
		r.overLimit(s, b, tooLarge.Size, limit)
		return
	case isUnavailable(err):
		s.code = IssueUnavailable
		return
	case errors.Is(err, context.DeadlineExceeded):
		s.code = IssueTimeout
		return
	default:
		s.code = IssueReadFailed
		return
	}
	if !p.valid() {
		s.code = IssueInvalidContent
		return
	}
	n, enc := p.Len(), sizeOf(s.target.uri, p, nil)
	switch {
	case n > r.limits.MaxItemBytes || n > b.payloadCap || enc > b.encodedCap:
		s.code = IssueBudgetExceeded
	case n > b.payloadLeft || enc > b.encodedLeft:
		s.code = IssueBudgetExceeded
		b.stopped = true
	default:
		s.payload, s.size, s.admitted = p, enc, true
		b.payloadLeft -= n
		b.encodedLeft -= enc
		b.itemsLeft--
	}
}

// overLimit records a reader's TooLarge: an item that could never fit is an
// issue of its own; one that only overflows what is left stops admission.
func (r *Resources) overLimit(s *itemState, b *budget, size, limit int64) {
	s.code = IssueBudgetExceeded
	oversized := func(n int64) bool { return n > r.limits.MaxItemBytes || n > b.payloadCap }
	switch {
	case size < 0:
		// Unknown size: only a limit cut below the item maximum can have been
		// the aggregate's doing.
		b.stopped = !oversized(limit + 1)
	case size <= limit:
		s.code = IssueReadFailed // the reader contradicts its own limit
	case !oversized(size):
		b.stopped = true
	}
}

// exactSize is the exact size of the module's own item shape, plus one
// separator: the sizer of a read that no adapter sized.
func exactSize(uri string, p ResourcePayload, meta []byte) int64 {
	return itemEncodedSize(uri, p, meta) + 1
}

// itemSizeFunc returns the encoded size of a content entry plus one separator.
type itemSizeFunc func(uri string, p ResourcePayload, meta []byte) int64

// assemble applies the final decisions and builds the result. A truncated
// plan ([ResourceReadPlan.Truncated]) adds one budget_exceeded issue, with
// no URI, for the items its resolver left out, after the items' issues.
func (r *Resources) assemble(st []itemState, truncated bool, sizeOf itemSizeFunc) (*ResourceResult, error) {
	var issues []ResourceIssue
	items := make([]ResourceItem, 1, len(st)+1) // slot 0 for the warning
	var payloadSum, encodedSum int64
	for i := range st {
		s := &st[i]
		code := s.code
		switch {
		case !s.final.vis.Visible:
			continue // hidden now: no item, issue or count
		case !s.first.vis.Visible:
			code = IssueUnavailable // newly visible: never read under this selection
		case !s.final.allowed:
			code = IssueUnavailable // revoked: removed, never refilled
		case s.admitted:
			items = append(items, ResourceItem{uri: s.target.uri, payload: s.payload})
			payloadSum += s.payload.Len()
			encodedSum += s.size
			continue
		}
		is := ResourceIssue{code: code}
		if s.final.vis.DiscloseIssueURI && len(s.target.uri) <= maxDisclosedURIBytes {
			is.uri = s.target.uri
		}
		issues = append(issues, is)
	}
	if truncated {
		issues = append(issues, ResourceIssue{code: IssueBudgetExceeded})
	}
	if len(issues) > 0 && len(items) == 1 {
		return nil, r.noItems(issues)
	}
	res := &ResourceResult{partial: len(issues) > 0}
	if !res.partial {
		res.items = items[1:]
		res.report = completeReport // shared: Report and Meta copy it
	} else {
		warning, report, k, err := r.warning(issues, sizeOf)
		if err != nil {
			return nil, err
		}
		items[0] = warning
		res.items = items
		res.report = report
		res.issues = issues[:k]
		res.omitted = len(issues) - k
		payloadSum += warning.payload.Len()
		encodedSum += sizeOf(warning.uri, warning.payload, warning.meta)
	}
	encodedSum += int64(len(resultEnvelope)) + metaSize(res.report)
	if payloadSum > r.limits.MaxResponseBytes || encodedSum > r.limits.MaxResponseEncodedBytes-wire.ReserveBytes {
		return nil, NewFailure(FailureSize, errors.New("assembled result exceeds the response limits"))
	}
	return res, nil
}

// errAllUnavailable is the private cause of a read whose visible items were
// all unavailable: denied, revoked, newly visible, or refused by storage.
var errAllUnavailable = errors.New("core: every visible item was unavailable and none was admitted")

// noItems is the whole-read failure of a read whose visible items all
// failed (issues, in plan order) and none was admitted. When every one of
// them is unavailable the read fails exactly as a missing resource does,
// [FailureUnavailable] with no detail, because storage refusing an item it
// planned must not tell the caller that the item exists. Otherwise it is
// [FailureNoItems] with the safe part of the report: at most MaxIssues
// detailed issues that fit ReportEncodedBytes, the count of the rest, and
// whether any visible failure was retryable.
func (r *Resources) noItems(issues []ResourceIssue) error {
	f := &Failure{Kind: FailureUnavailable, cause: errAllUnavailable}
	for _, is := range issues {
		if is.code != IssueUnavailable {
			f.Kind, f.cause = FailureNoItems, errors.New("core: no visible item survived")
		}
		if is.Retryable() {
			f.retry = true
		}
	}
	if f.Kind == FailureUnavailable {
		f.retry = false
		return f
	}
	maxK := min(len(issues), r.limits.MaxIssues)
	k := sort.Search(maxK+1, func(k int) bool {
		return int64(len(appendIssues(nil, issues[:k]))) > r.limits.ReportEncodedBytes
	}) - 1
	f.issues = append([]ResourceIssue(nil), issues[:max(k, 0)]...)
	f.omitted = len(issues) - len(f.issues)
	return f
}

// completeReport is the report of every complete result. Results share it:
// nothing writes to a result's report, and its accessors return copies.
var completeReport = appendReport(nil, false, nil, 0)

// metaSize is the encoded size of the result _meta that carries report.
func metaSize(report []byte) int64 { return int64(len(`{"`+wire.ReportMetaKey+`":}`) + len(report)) }

// warning builds the warning item with the most detailed report that fits
// the reserved payload, encoded and metadata space, and says how many
// issues that report details.
func (r *Resources) warning(issues []ResourceIssue, sizeOf itemSizeFunc) (ResourceItem, []byte, int, error) {
	uri := newWarningURI()
	build := func(k int) (ResourceItem, []byte, bool) {
		report := appendReport(nil, true, issues[:k], len(issues)-k)
		w := ResourceItem{uri: uri, payload: TextPayload("text/plain", wire.WarningPrefix+string(report)), meta: []byte(wire.WarningMeta)}
		meta := metaSize(report)
		enc := sizeOf(uri, w.payload, w.meta) + meta
		fits := w.payload.Len() <= r.limits.ReportPayloadBytes && enc <= r.limits.ReportEncodedBytes && meta <= maxMetaBytes
		return w, report, fits
	}
	maxK := min(len(issues), r.limits.MaxIssues)
	// Sizes grow with k, so the largest fitting k is found by bisection.
	k := sort.Search(maxK+1, func(k int) bool {
		_, _, fits := build(k)
		return !fits
	}) - 1
	if k < 0 {
		return ResourceItem{}, nil, 0, NewFailure(FailureSize, errors.New("minimal report does not fit the reserved space"))
	}
	w, report, _ := build(k)
	return w, report, k, nil
}

func newWarningURI() string {
	var b [16]byte
	rand.Read(b[:])
	return wire.WarningURIPrefix + hex.EncodeToString(b[:])
}
