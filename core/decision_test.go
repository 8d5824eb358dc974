package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The decision rig: one definition whose plan names items that a native
// batch reader reads (each result optionally carrying a Decision) or that
// the plan carries inline (WithContent), and a policy that records every
// pass and Discover call. Its Decide answers allow everything unless the
// test sets an answer for a stage and URI.

type drItem struct {
	uri string
	// decision is what the reader returns with the item's body; nil: none.
	decision *TargetDecision
	// inline, when set, is planned WithContent with inlineDecision, or
	// with no decision when undecided is set.
	inline         *ResourcePayload
	inlineDecision TargetDecision
	undecided      bool
	// names is the policy key its decisions name; nil: the key the
	// gateway gave (ReadRequest.Policy, ResourceMatch.Policy).
	names any
	// body is what the reader returns; nil: "body of URI".
	body *ResourcePayload
}

type decisionRig struct {
	t *testing.T
	// single reads the first item's URI, planned as that one item: the
	// requested target and the item are one identity.
	single bool
	items  []drItem
	limits ResourceLimits
	// answers are Decide's answers by stage and URI; missing ones allow.
	answers map[PassStage]map[string]TargetDecision
	// discoverErr is the error of Discover call n (0: discovery, 1: the
	// recheck), or nil.
	discoverErr func(n int) error
	// wrap, when set, wraps the binding's reader.
	wrap func(Reader) Reader
	// whole, when set, replaces the reader's answer.
	whole func(ctx context.Context, req ReadRequest) ([]ReadResult, error)
	// key is the policy's Key (newDecisionRig sets rigKey); nil: none.
	key any
	// honest reads through an ItemReader that refuses a body over its Limit
	// with TooLarge, instead of the batch reader.
	honest bool

	mu        sync.Mutex
	passes    []PolicyPass
	discovers int
	requests  [][]string
}

var (
	allow   = TargetDecision{Visibility: Visibility{Visible: true, DiscloseIssueURI: true}, Read: true}
	revoked = TargetDecision{Visibility: Visibility{Visible: true, DiscloseIssueURI: true}}
	hidden  = TargetDecision{}
)

func decisionOf(d TargetDecision) *TargetDecision { return &d }

// rigKey is the Key of the decision rig's policy.
var rigKey = new(int)

// named returns d naming the key the item names, or else key.
func (it *drItem) named(d *TargetDecision, key any) *TargetDecision {
	if d == nil {
		return nil
	}
	dc := *d
	switch dc.Policy = key; it.names {
	case nil:
	case unnamed:
		dc.Policy = nil
	default:
		dc.Policy = it.names
	}
	return &dc
}

// unnamed, as a drItem's names, has its decisions name no key.
var unnamed any = new(byte)

func newDecisionRig(t *testing.T, uris ...string) *decisionRig {
	g := &decisionRig{t: t, key: rigKey, answers: map[PassStage]map[string]TargetDecision{PassBeforeReads: {}, PassRecheck: {}}}
	for _, u := range uris {
		g.items = append(g.items, drItem{uri: u})
	}
	return g
}

// inlineText plans each of uris with the text/plain content prefix+URI
// and a decision that allows it.
func (g *decisionRig) inlineText(prefix string, uris ...string) {
	for _, u := range uris {
		p := TextPayload("text/plain", prefix+u)
		g.item(u).inline, g.item(u).inlineDecision = &p, allow
	}
}

func (g *decisionRig) item(uri string) *drItem {
	for i := range g.items {
		if g.items[i].uri == uri {
			return &g.items[i]
		}
	}
	g.t.Fatalf("no item %s", uri)
	return nil
}

// authzOf is the authorization data every target of uri carries.
func authzOf(uri string) []byte { return []byte(`{"key":"` + uri + `"}`) }

func (g *decisionRig) requestURI() string {
	if g.single {
		return g.items[0].uri
	}
	return bundleURI
}

func (g *decisionRig) plan(m ResourceMatch) (ResourceReadPlan, error) {
	var req ResourceTarget
	var err error
	if g.single {
		req, err = NewResourceTarget(g.items[0].uri, "item", authzOf(g.items[0].uri))
	} else {
		req, err = NewResourceTarget(bundleURI, "bundle", nil)
	}
	if err != nil {
		return ResourceReadPlan{}, err
	}
	ts := make([]ResourceTarget, len(g.items))
	for i, it := range g.items {
		if ts[i], err = NewResourceTarget(it.uri, "item", authzOf(it.uri)); err != nil {
			return ResourceReadPlan{}, err
		}
		if it.inline != nil {
			d := &it.inlineDecision
			if it.undecided {
				d = nil
			}
			if ts[i], err = m.WithContent(ts[i], *it.inline, it.named(d, m.Policy())); err != nil {
				return ResourceReadPlan{}, err
			}
		}
	}
	if g.single {
		req = ts[0] // the resolver may plan the requested target as its item, content included
	}
	return NewResourceReadPlan(req, ts...)
}

func (g *decisionRig) bodyOf(uri string) ResourcePayload {
	for _, it := range g.items {
		if it.uri == uri && it.body != nil {
			return *it.body
		}
	}
	return TextPayload("text/plain", textOf(uri))
}

func (g *decisionRig) Read(ctx context.Context, req ReadRequest) ([]ReadResult, error) {
	var us []string
	for _, it := range req.Items {
		if it.Target.inline != nil {
			g.t.Errorf("reader asked for inline item %s", it.Target.URI())
		}
		us = append(us, it.Target.URI())
	}
	g.mu.Lock()
	g.requests = append(g.requests, us)
	g.mu.Unlock()
	if g.whole != nil {
		return g.whole(ctx, req)
	}
	out := make([]ReadResult, len(req.Items))
	for k, it := range req.Items {
		item := g.item(it.Target.URI())
		out[k] = ReadResult{Payload: g.bodyOf(it.Target.URI()), Decision: item.named(item.decision, req.Policy)}
	}
	return out, nil
}

func (g *decisionRig) policy() ResourcePolicy {
	return ResourcePolicy{
		Key: func(ResourceDefinition) any { return g.key },
		Discover: func(context.Context, ResourceDefinition) error {
			g.mu.Lock()
			n := g.discovers
			g.discovers++
			g.mu.Unlock()
			if g.discoverErr != nil {
				return g.discoverErr(n)
			}
			return nil
		},
		Decide: func(_ context.Context, pass PolicyPass) ([]TargetDecision, error) {
			g.mu.Lock()
			g.passes = append(g.passes, PolicyPass{Stage: pass.Stage, Targets: slices.Clone(pass.Targets)})
			g.mu.Unlock()
			ds := make([]TargetDecision, len(pass.Targets))
			for i, t := range pass.Targets {
				d, ok := g.answers[pass.Stage][t.URI()]
				if !ok {
					d = allow
				}
				ds[i] = d
			}
			return ds, nil
		},
	}
}

func (g *decisionRig) resources() *Resources {
	g.t.Helper()
	var rd Reader = g
	if g.honest {
		rd = ItemReader(func(ctx context.Context, it ReadItem) (ResourcePayload, error) {
			g.mu.Lock()
			g.requests = append(g.requests, []string{it.Target.URI()})
			g.mu.Unlock()
			p := g.bodyOf(it.Target.URI())
			if p.Len() > it.Limit {
				return ResourcePayload{}, &TooLargeError{Size: p.Len()}
			}
			return p, nil
		})
	}
	if g.wrap != nil {
		rd = g.wrap(rd)
	}
	binding := ResourceBinding{
		Definition: ResourceDefinition{URI: g.requestURI(), Name: "decided"},
		Resolver:   ResolverFunc(func(_ context.Context, m ResourceMatch) (ResourceReadPlan, error) { return g.plan(m) }),
		Reader:     rd,
	}
	r, err := NewResources([]ResourceBinding{binding}, g.policy(), WithResourceLimits(g.limits))
	if err != nil {
		g.t.Fatal(err)
	}
	return r
}

func (g *decisionRig) read() (*ResourceResult, error) {
	g.t.Helper()
	g.mu.Lock()
	g.passes, g.discovers, g.requests = nil, 0, nil
	g.mu.Unlock()
	return g.resources().Read(context.Background(), g.requestURI())
}

// stages lists the stage of every Decide call.
func (g *decisionRig) stages() []PassStage {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []PassStage
	for _, p := range g.passes {
		out = append(out, p.Stage)
	}
	return out
}

// passURIs returns the URIs of the targets of the Decide call at stage.
func (g *decisionRig) passURIs(stage PassStage) []string {
	g.t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.passes {
		if p.Stage == stage {
			var us []string
			for _, t := range p.Targets {
				us = append(us, t.URI())
			}
			return us
		}
	}
	return nil
}

// seenBy is what a read showed the caller: its items with their text, its
// report, or its failure kind.
func seenBy(res *ResourceResult, err error) string {
	if err != nil {
		var f *Failure
		errors.As(err, &f)
		return fmt.Sprintf("failure %v %s", f.Kind, f.Report())
	}
	var b strings.Builder
	for _, it := range res.Items()[boolInt(res.Partial()):] {
		fmt.Fprintf(&b, "%s=%q ", it.URI(), it.Text())
	}
	return b.String() + string(res.Report())
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestReadDecisionsReplaceTheRechecksDecideCall(t *testing.T) {
	g := newDecisionRig(t, "test://doc/1")
	g.single = true
	g.item("test://doc/1").decision = decisionOf(allow)
	res, err := g.read()
	if err != nil {
		t.Fatal(err)
	}
	if got := itemURIs(res); !slices.Equal(got, []string{"test://doc/1"}) || res.Partial() {
		t.Fatalf("items = %v, partial %v", got, res.Partial())
	}
	// The body's Decision covers the item and the requested target (the
	// same identity), so the recheck asks the policy nothing but discovery.
	if got := g.stages(); !slices.Equal(got, []PassStage{PassBeforeReads}) {
		t.Fatalf("Decide calls = %v, want only the one before the reads", got)
	}
	if g.discovers != 2 {
		t.Fatalf("Discover calls = %d, want 2 (discovery, and the recheck in Decide's place)", g.discovers)
	}

	// Without a Decision, the recheck is Decide's, as before.
	g.item("test://doc/1").decision = nil
	if _, err := g.read(); err != nil {
		t.Fatal(err)
	}
	if got := g.stages(); !slices.Equal(got, []PassStage{PassBeforeReads, PassRecheck}) || g.discovers != 1 {
		t.Fatalf("Decide calls = %v, Discover calls %d; want both passes and one Discover", got, g.discovers)
	}
}

func TestReadDecisionsLeaveDecideOnlyTheTargetsWithoutOne(t *testing.T) {
	for name, c := range map[string]struct {
		single   bool
		decided  []string // items whose body comes with a Decision
		want     []string // the recheck pass's targets; nil: no Decide call
		discover int
	}{
		"a bundle, two of three decided":   {decided: []string{"test://a", "test://c"}, want: []string{bundleURI, "test://b"}, discover: 1},
		"a bundle, every item decided":     {decided: []string{"test://a", "test://b", "test://c"}, want: []string{bundleURI}, discover: 1},
		"a bundle, none decided":           {want: []string{bundleURI, "test://a", "test://b", "test://c"}, discover: 1},
		"a single read, every item":        {single: true, decided: []string{"test://a", "test://b", "test://c"}, discover: 2},
		"a single read, the others not":    {single: true, decided: []string{"test://a"}, want: []string{"test://a", "test://b", "test://c"}, discover: 1},
		"a single read, all but the first": {single: true, decided: []string{"test://b", "test://c"}, want: []string{"test://a"}, discover: 1},
	} {
		t.Run(name, func(t *testing.T) {
			g := newDecisionRig(t, "test://a", "test://b", "test://c")
			g.single = c.single
			for _, u := range c.decided {
				g.item(u).decision = decisionOf(allow)
			}
			res, err := g.read()
			if err != nil {
				t.Fatal(err)
			}
			if got := itemURIs(res); len(got) != 3 || res.Partial() {
				t.Fatalf("items = %v, partial %v", got, res.Partial())
			}
			// The requested target stays first in every pass that is asked,
			// as policies expect (PerTarget ends a pass at a denied first
			// target); only when nothing is left to ask is Decide not called.
			if got := g.passURIs(PassRecheck); !slices.Equal(got, c.want) {
				t.Fatalf("recheck pass targets = %v, want %v", got, c.want)
			}
			if got := g.passURIs(PassBeforeReads); len(got) != 4-boolInt(c.single) {
				t.Fatalf("before-reads pass targets = %v, want every target", got)
			}
			if g.discovers != c.discover {
				t.Fatalf("Discover calls = %d, want %d", g.discovers, c.discover)
			}
		})
	}
}

// TestReadDecisionsHideAndRevokeAsDecidesAnswerDoes reads the same plan
// twice: once with the reader's Decision for an item, once with no
// Decision and the same answer from Decide at the recheck, and requires
// the caller to see the same thing.
func TestReadDecisionsHideAndRevokeAsDecidesAnswerDoes(t *testing.T) {
	undisclosed := TargetDecision{Visibility: Visibility{Visible: true}}
	for name, c := range map[string]struct {
		single bool
		d      TargetDecision
		want   string // a fragment of the outcome
	}{
		"a hidden item is removed without a trace":              {d: hidden, want: `"issues":[]`},
		"a revoked item is unavailable":                         {d: revoked, want: `{"code":"unavailable","message":"The resource is unavailable.","retryable":false,"uri":"test://b"}`},
		"a revoked item's URI is disclosed by its own decision": {d: undisclosed, want: `{"code":"unavailable","message":"The resource is unavailable.","retryable":false}`},
		"a hidden requested target fails the read":              {single: true, d: hidden, want: "failure unavailable"},
		"a revoked requested target fails the read":             {single: true, d: revoked, want: "failure unavailable"},
	} {
		t.Run(name, func(t *testing.T) {
			g := newDecisionRig(t, "test://b", "test://a", "test://c")
			g.single = c.single
			for i := range g.items {
				g.items[i].decision = decisionOf(allow)
			}
			g.item("test://b").decision = decisionOf(c.d)
			withDecision := seenBy(g.read())
			if n := len(g.passURIs(PassRecheck)); !c.single && n != 1 {
				t.Fatalf("recheck asked %d targets, want only the bundle", n)
			}

			g.item("test://b").decision = nil
			g.answers[PassRecheck]["test://b"] = c.d
			withDecide := seenBy(g.read())
			if withDecision != withDecide {
				t.Fatalf("with the reader's Decision:\n  %s\nwith Decide's answer:\n  %s", withDecision, withDecide)
			}
			if !strings.Contains(withDecision, c.want) {
				t.Fatalf("outcome %s lacks %s", withDecision, c.want)
			}
			if strings.Contains(withDecision, textOf("test://b")) {
				t.Fatalf("outcome %s holds the removed body", withDecision)
			}
		})
	}
}

func TestReadDecisionsOfAFailedOrTimedOutRequestAreNotTrusted(t *testing.T) {
	for name, whole := range map[string]func(ctx context.Context, req ReadRequest) ([]ReadResult, error){
		"timed out": func(ctx context.Context, req ReadRequest) ([]ReadResult, error) {
			<-ctx.Done()
			return []ReadResult{{Payload: TextPayload("text/plain", "late"), Decision: decisionOf(allow)}}, nil
		},
		"too many results": func(ctx context.Context, req ReadRequest) ([]ReadResult, error) {
			return []ReadResult{{Decision: decisionOf(allow)}, {Decision: decisionOf(allow)}, {Decision: decisionOf(allow)}}, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := newDecisionRig(t, "test://a", "test://b")
			g.limits = ResourceLimits{ItemTimeout: 20 * time.Millisecond}
			g.whole = whole
			g.answers[PassRecheck]["test://a"] = hidden
			g.answers[PassRecheck]["test://b"] = hidden
			res, err := g.read()
			if err != nil {
				t.Fatal(err)
			}
			// Decide was asked about both items, and hid them.
			if got := g.passURIs(PassRecheck); len(got) != 3 {
				t.Fatalf("recheck pass targets = %v, want the bundle and both items", got)
			}
			if res.Partial() || len(res.Items()) != 0 {
				t.Fatalf("outcome %s, want an empty complete bundle", seenBy(res, nil))
			}
		})
	}
}

func TestRecheckDiscoversWhenDecisionsCoverThePass(t *testing.T) {
	for name, c := range map[string]struct {
		err  error
		kind FailureKind
	}{
		"denied":  {NewFailure(FailureUnavailable, errors.New("gone")), FailureUnavailable},
		"failing": {errors.New("boom"), FailurePolicy},
		"outage":  {NewFailure(FailureOutage, errors.New("down")), FailureOutage},
	} {
		t.Run(name, func(t *testing.T) {
			g := newDecisionRig(t, "test://doc/1")
			g.single = true
			g.item("test://doc/1").decision = decisionOf(allow)
			g.discoverErr = func(n int) error {
				if n == 1 {
					return c.err
				}
				return nil
			}
			res, err := g.read()
			wantKind(t, err, c.kind)
			if res != nil {
				t.Fatal("a failed recheck returned a result")
			}
			if got := g.stages(); !slices.Equal(got, []PassStage{PassBeforeReads}) || g.discovers != 2 {
				t.Fatalf("Decide calls %v, Discover calls %d", got, g.discovers)
			}
		})
	}
}

func TestInlineItemsCostNoReaderCall(t *testing.T) {
	g := newDecisionRig(t, "test://a", "test://b", "test://c", "test://d")
	for _, u := range []string{"test://a", "test://c"} {
		p := TextPayload("application/json", `{"inline":"`+u+`"}`)
		g.item(u).inline, g.item(u).inlineDecision = &p, allow
	}
	g.item("test://b").decision = decisionOf(allow)
	g.item("test://d").decision = decisionOf(allow)
	res, err := g.read()
	if err != nil {
		t.Fatal(err)
	}
	want := `test://a="{\"inline\":\"test://a\"}" test://b="body of test://b" test://c="{\"inline\":\"test://c\"}" test://d="body of test://d" `
	if got := seenBy(res, nil); !strings.HasPrefix(got, want) || res.Partial() {
		t.Fatalf("outcome %s, want %s", got, want)
	}
	// The inline item between them does not split the batch.
	if fmt.Sprint(g.requests) != "[[test://b test://d]]" {
		t.Fatalf("reader requests = %v, want one for the read items only", g.requests)
	}
	// The pass before the reads still asks about every target, none with
	// its content, each with its identity unchanged.
	passes := g.passes
	if len(passes) != 2 || len(passes[0].Targets) != 5 {
		t.Fatalf("passes = %v", passes)
	}
	for _, p := range passes {
		for _, tg := range p.Targets {
			if tg.inline != nil {
				t.Fatalf("%s pass target %s carries its content", p.Stage, tg.URI())
			}
			if tg.URI() != bundleURI && string(tg.AuthorizationData()) != string(authzOf(tg.URI())) {
				t.Fatalf("target %s authorization data = %s", tg.URI(), tg.AuthorizationData())
			}
		}
	}
	if got := g.passURIs(PassRecheck); !slices.Equal(got, []string{bundleURI}) {
		t.Fatalf("recheck pass = %v, want the bundle alone (every item had its decision)", got)
	}

	// A single-item read of inline content: no reader call, no Decide at
	// the recheck (the index's one round trip).
	s := newDecisionRig(t, "test://index")
	s.single = true
	p := TextPayload("application/json", `{"projects":[]}`)
	s.items[0].inline, s.items[0].inlineDecision = &p, allow
	res, err = s.read()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.requests) != 0 || !slices.Equal(s.stages(), []PassStage{PassBeforeReads}) || s.discovers != 2 {
		t.Fatalf("reader requests %v, Decide calls %v, Discover calls %d", s.requests, s.stages(), s.discovers)
	}
	if got := res.Items(); len(got) != 1 || got[0].Text() != `{"projects":[]}` || got[0].URI() != "test://index" {
		t.Fatalf("items = %v", seenBy(res, nil))
	}
}

// TestInlineItemsObeyAdmissionAsReadBodies reads the same payloads once
// inline and once from an honest item-by-item reader, under limits that
// stop or refuse some of them, and requires the same outcome.
func TestInlineItemsObeyAdmissionAsReadBodies(t *testing.T) {
	x := func(n int) *ResourcePayload { p := TextPayload("text/plain", strings.Repeat("x", n)); return &p }
	badType, badText := TextPayload("not a type", "x"), TextPayload("text/plain", "\xff")
	for name, c := range map[string]struct {
		limits ResourceLimits
		bodies []*ResourcePayload // of test://0, test://1, ...
		want   string
	}{
		"an oversized item is an issue, later ones fit": {ResourceLimits{MaxItemBytes: 100}, []*ResourcePayload{x(50), x(200), x(50)}, `"code":"budget_exceeded"`},
		"the aggregate budget stops admission":          {appBudget(1000), []*ResourcePayload{x(600), x(600), x(10)}, `"uri":"test://1"},{"code":"budget_exceeded","message":"The resource did not fit the response budget.","retryable":false,"uri":"test://2"`},
		"the item count stops admission":                {ResourceLimits{MaxItems: 2}, []*ResourcePayload{x(1), x(1), x(1)}, `"uri":"test://2"`},
		"a bad MIME type is invalid content":            {ResourceLimits{}, []*ResourcePayload{x(1), &badType, x(1)}, `"code":"invalid_content"`},
		"invalid UTF-8 is invalid content":              {ResourceLimits{}, []*ResourcePayload{&badText, x(1)}, `"code":"invalid_content"`},
	} {
		t.Run(name, func(t *testing.T) {
			var uris []string
			for i := range c.bodies {
				uris = append(uris, fmt.Sprintf("test://%d", i))
			}
			read := newDecisionRig(t, uris...)
			read.limits, read.honest = c.limits, true
			inl := newDecisionRig(t, uris...)
			inl.limits = c.limits
			for i, p := range c.bodies {
				read.items[i].body = p
				inl.items[i].inline, inl.items[i].inlineDecision = p, allow
			}
			fromReader, inline := seenBy(read.read()), seenBy(inl.read())
			if fromReader != inline {
				t.Fatalf("read:\n  %s\ninline:\n  %s", fromReader, inline)
			}
			if !strings.Contains(inline, c.want) {
				t.Fatalf("outcome %s lacks %s", inline, c.want)
			}
			if len(inl.requests) != 0 {
				t.Fatalf("reader requests %v for inline items", inl.requests)
			}
		})
	}
}

func TestInlineItemTheFirstPassHidesOrDeniesIsNotAdmitted(t *testing.T) {
	g := newDecisionRig(t, "test://a", "test://b", "test://c")
	g.inlineText("SECRET ", "test://a", "test://b")
	g.answers[PassBeforeReads]["test://a"] = hidden
	g.answers[PassBeforeReads]["test://b"] = revoked
	// At the recheck the policy still hides a: its inline decision (which
	// allows it) must not stand in for the recheck of an item the pass did
	// not let through, or a would come back as newly visible.
	g.answers[PassRecheck]["test://a"] = hidden
	res, err := g.read()
	if err != nil {
		t.Fatal(err)
	}
	got := seenBy(res, nil)
	if strings.Contains(got, "SECRET") {
		t.Fatalf("outcome %s holds denied content", got)
	}
	if !strings.HasPrefix(got, `test://c="body of test://c" `) || !strings.Contains(got, `"issues":[{"code":"unavailable","message":"The resource is unavailable.","retryable":false,"uri":"test://b"}]`) {
		t.Fatalf("outcome %s, want c, and b unavailable, a without a trace", got)
	}
	if got := g.passURIs(PassRecheck); !slices.Equal(got, []string{bundleURI, "test://a", "test://b", "test://c"}) {
		t.Fatalf("recheck pass = %v, want the hidden and denied inline items asked again", got)
	}
}

func TestInlineDecisionIsTheItemsRecheck(t *testing.T) {
	g := newDecisionRig(t, "test://a", "test://b")
	g.inlineText("SECRET ", "test://a", "test://b")
	g.item("test://a").inlineDecision = hidden
	g.item("test://b").inlineDecision = revoked
	res, err := g.read()
	wantKind(t, err, FailureUnavailable) // b, the one visible item, is revoked
	if res != nil || len(g.passURIs(PassRecheck)) != 1 {
		t.Fatalf("result %v, recheck pass %v", res, g.passURIs(PassRecheck))
	}
}

func TestContentWithoutADecisionIsRecheckedByThePolicy(t *testing.T) {
	g := newDecisionRig(t, "test://a", "test://b")
	g.inlineText("SECRET ", "test://a", "test://b")
	g.item("test://a").undecided, g.item("test://b").undecided = true, true
	g.answers[PassRecheck]["test://b"] = revoked // revoked after planning
	res, err := g.read()
	if err != nil {
		t.Fatal(err)
	}
	got := seenBy(res, nil)
	if !strings.HasPrefix(got, `test://a="SECRET test://a" `) || strings.Contains(got, "SECRET test://b") ||
		!strings.Contains(got, `"code":"unavailable","message":"The resource is unavailable.","retryable":false,"uri":"test://b"`) {
		t.Fatalf("outcome %s, want a, and b removed by the recheck", got)
	}
	if len(g.requests) != 0 {
		t.Fatalf("reader requests %v for inline items", g.requests)
	}
	if got := g.passURIs(PassRecheck); !slices.Equal(got, []string{bundleURI, "test://a", "test://b"}) {
		t.Fatalf("recheck pass = %v, want both items asked", got)
	}
}

func TestContentPlannedBeforeTheReadIsReadAgain(t *testing.T) {
	// A resolver that keeps the plan it made for one read and returns it
	// for the next: the content it carries was read before the second read
	// began, so that read asks the reader, whose body has changed since.
	g := newDecisionRig(t, "test://a", "test://b")
	g.inlineText("planned ", "test://a", "test://b")
	var kept ResourceReadPlan
	res, err := NewResources([]ResourceBinding{{
		Definition: ResourceDefinition{URI: bundleURI, Name: "kept"},
		Resolver: ResolverFunc(func(_ context.Context, m ResourceMatch) (plan ResourceReadPlan, err error) {
			if kept.IsZero() {
				kept, err = g.plan(m)
			}
			return kept, err
		}),
		Reader: g,
	}}, g.policy())
	if err != nil {
		t.Fatal(err)
	}
	if out, err := res.Read(context.Background(), bundleURI); err != nil || !strings.HasPrefix(seenBy(out, nil), `test://a="planned test://a" `) || len(g.requests) != 0 {
		t.Fatalf("first read: %v, reader requests %v", err, g.requests)
	}
	changed := TextPayload("text/plain", "changed test://b")
	g.item("test://b").body = &changed
	out, err := res.Read(context.Background(), bundleURI)
	if err != nil {
		t.Fatal(err)
	}
	if got := seenBy(out, nil); !strings.HasPrefix(got, `test://a="body of test://a" test://b="changed test://b" `) {
		t.Fatalf("outcome %s, want both items as the reader reads them now", got)
	}
	if fmt.Sprint(g.requests) != "[[test://a test://b]]" {
		t.Fatalf("reader requests = %v, want both kept items read", g.requests)
	}
	// A plan made during the read keeps its content: no reader call.
	g.requests = nil
	if out, err = g.read(); err != nil || !strings.HasPrefix(seenBy(out, nil), `test://a="planned test://a" `) || len(g.requests) != 0 {
		t.Fatalf("fresh plan: %s, %v, reader requests %v", seenBy(out, nil), err, g.requests)
	}
}

func TestWithContent(t *testing.T) {
	tg, err := NewResourceTarget("test://a", "item", authzOf("test://a"))
	if err != nil {
		t.Fatal(err)
	}
	p := BlobPayload("application/octet-stream", []byte{1, 2})
	m := ResourceMatch{uri: "test://a", read: &planning{uri: "test://a"}}
	with, err := m.WithContent(tg, p, &allow)
	if err != nil {
		t.Fatal(err)
	}
	if !sameTarget(with, tg) || with.URI() != tg.URI() || string(with.AuthorizationData()) != string(tg.AuthorizationData()) {
		t.Fatal("content changed the target's identity")
	}
	if in := with.inline; in == nil || !slices.Equal(in.payload.Blob(), []byte{1, 2}) || *in.decision != allow {
		t.Fatalf("content = %+v", in)
	}
	if tg.inline != nil {
		t.Fatal("WithContent changed the receiver")
	}
	if _, err := with.WithObject(ObjectRef{Source: "s", Key: "k", Size: -1}); err == nil {
		t.Fatal("an inline target took an object reference")
	}
	obj, err := tg.WithObject(ObjectRef{Source: "s", Key: "k", Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func() (ResourceTarget, error){
		"a match not being resolved": func() (ResourceTarget, error) { return ResourceMatch{}.WithContent(tg, p, &allow) },
		"a zero target":              func() (ResourceTarget, error) { return m.WithContent(ResourceTarget{}, p, &allow) },
		"a zero payload":             func() (ResourceTarget, error) { return m.WithContent(tg, ResourcePayload{}, &allow) },
		"an object target":           func() (ResourceTarget, error) { return m.WithContent(obj, p, &allow) },
		"too large content": func() (ResourceTarget, error) {
			return m.WithContent(tg, TextPayload("text/plain", strings.Repeat("x", maxInlineBytes+1)), &allow)
		},
	} {
		if _, err := f(); err == nil {
			t.Errorf("WithContent accepted %s", name)
		}
	}
	if _, err := m.WithContent(tg, TextPayload("text/plain", strings.Repeat("x", maxInlineBytes)), &allow); err != nil {
		t.Errorf("WithContent refused maxInlineBytes: %v", err)
	}
}

func TestAuthorizeHandsOutTargetsWithoutTheirContent(t *testing.T) {
	g := newDecisionRig(t, "test://a")
	p := TextPayload("text/plain", "SECRET")
	g.items[0].inline, g.items[0].inlineDecision = &p, allow
	a, err := g.resources().Authorize(context.Background(), bundleURI)
	if err != nil {
		t.Fatal(err)
	}
	if a.Item(0).inline != nil || a.Len() != 1 {
		t.Fatal("an authorized item carries its content")
	}
}

// TestAWrapperKeepsTheReadersKind proves that a host's wrapper that wraps
// an ItemReader's function into another ItemReader sees its items one call
// each (so each keeps its own ItemTimeout), and one that wraps a native
// batch reader sees its items in one request whose Decisions reach the
// gateway.
func TestAWrapperKeepsTheReadersKind(t *testing.T) {
	for name, honest := range map[string]bool{"an item reader": true, "a batch reader": false} {
		t.Run(name, func(t *testing.T) {
			g := newDecisionRig(t, "test://a", "test://b", "test://c")
			g.honest = honest
			for i := range g.items {
				g.items[i].decision = decisionOf(allow)
			}
			var seen [][]string
			g.wrap = func(inner Reader) Reader {
				if f, ok := inner.(ItemReader); ok {
					return ItemReader(func(ctx context.Context, item ReadItem) (ResourcePayload, error) {
						seen = append(seen, []string{item.Target.URI()})
						return f(ctx, item)
					})
				}
				return readerFunc(func(ctx context.Context, req ReadRequest) ([]ReadResult, error) {
					var us []string
					for _, it := range req.Items {
						us = append(us, it.Target.URI())
					}
					seen = append(seen, us)
					return inner.Read(ctx, req)
				})
			}
			res, err := g.read()
			if err != nil || len(itemURIs(res)) != 3 {
				t.Fatalf("read: %v, %v", err, seenBy(res, err))
			}
			want, recheck := "[[test://a test://b test://c]]", []string{bundleURI}
			if honest {
				want, recheck = "[[test://a] [test://b] [test://c]]", []string{bundleURI, "test://a", "test://b", "test://c"}
			}
			if fmt.Sprint(seen) != want || fmt.Sprint(g.requests) != want {
				t.Fatalf("wrapper saw %v, reader %v; want %s", seen, g.requests, want)
			}
			if got := g.passURIs(PassRecheck); !slices.Equal(got, recheck) {
				t.Fatalf("recheck pass = %v, want %v", got, recheck)
			}
		})
	}
}

type readerFunc func(ctx context.Context, req ReadRequest) ([]ReadResult, error)

func (f readerFunc) Read(ctx context.Context, req ReadRequest) ([]ReadResult, error) {
	return f(ctx, req)
}

// TestRequestedTargetsDecisionAndDecidesAnswerMustBothAllow covers a
// single-item read whose recheck still asks Decide (another item came
// without a Decision): the requested target is asked again, and the read
// fails when either its item's Decision or Decide's answer hides or
// denies it.
func TestRequestedTargetsDecisionAndDecidesAnswerMustBothAllow(t *testing.T) {
	for name, c := range map[string]struct {
		own, decided TargetDecision
		ok           bool
	}{
		"both allow":            {allow, allow, true},
		"its Decision hides it": {hidden, allow, false},
		"its Decision revokes":  {revoked, allow, false},
		"Decide hides it":       {allow, hidden, false},
		"Decide revokes it":     {allow, revoked, false},
	} {
		t.Run(name, func(t *testing.T) {
			g := newDecisionRig(t, "test://a", "test://b")
			g.single = true
			g.item("test://a").decision = decisionOf(c.own)
			g.answers[PassRecheck]["test://a"] = c.decided
			res, err := g.read()
			if got := g.passURIs(PassRecheck); !slices.Equal(got, []string{"test://a", "test://b"}) {
				t.Fatalf("recheck pass = %v", got)
			}
			if c.ok {
				if err != nil || len(itemURIs(res)) != 2 {
					t.Fatalf("read: %s", seenBy(res, err))
				}
				return
			}
			wantKind(t, err, FailureUnavailable)
		})
	}
}

func TestInlineItemsBetweenItemReaderItems(t *testing.T) {
	g := newDecisionRig(t, "test://a", "test://b", "test://c")
	g.honest = true
	p := TextPayload("text/plain", "inline b")
	g.item("test://b").inline, g.item("test://b").inlineDecision = &p, allow
	res, err := g.read()
	if err != nil {
		t.Fatal(err)
	}
	if got := seenBy(res, nil); !strings.HasPrefix(got, `test://a="body of test://a" test://b="inline b" test://c="body of test://c" `) {
		t.Fatalf("outcome %s", got)
	}
	if fmt.Sprint(g.requests) != "[[test://a] [test://c]]" {
		t.Fatalf("reader requests = %v", g.requests)
	}
	if got := g.passURIs(PassRecheck); !slices.Equal(got, []string{bundleURI, "test://a", "test://c"}) {
		t.Fatalf("recheck pass = %v, want the read items (an ItemReader has no decisions)", got)
	}
}

// TestInlineItemsInsideABatchSpendTheBudgetInPlanOrder reads a body, an
// inline item and a body under a budget that holds only the first two: the
// batch reader's request is one (its Budget cannot know the inline item's
// share), and admission stops at the third, as it does when the same items
// are read one by one.
func TestInlineItemsInsideABatchSpendTheBudgetInPlanOrder(t *testing.T) {
	x := func(n int) *ResourcePayload { p := TextPayload("text/plain", strings.Repeat("x", n)); return &p }
	uris := []string{"test://0", "test://1", "test://2"}
	bodies := []*ResourcePayload{x(600), x(300), x(300)}
	read := newDecisionRig(t, uris...)
	read.limits, read.honest = appBudget(1000), true
	mixed := newDecisionRig(t, uris...)
	mixed.limits = appBudget(1000)
	for i, p := range bodies {
		read.items[i].body = p
		mixed.items[i].body = p
	}
	mixed.items[1].inline, mixed.items[1].inlineDecision = bodies[1], allow
	fromReader, inline := seenBy(read.read()), seenBy(mixed.read())
	if fromReader != inline {
		t.Fatalf("read one by one:\n  %s\nbatch with an inline item:\n  %s", fromReader, inline)
	}
	if !strings.Contains(inline, `"uri":"test://2"`) || fmt.Sprint(mixed.requests) != "[[test://0 test://2]]" {
		t.Fatalf("outcome %s, requests %v", inline, mixed.requests)
	}
}
