package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// outcome summarises a read: its failure kind, or its items and issues.
func outcome(res *ResourceResult, err error) string {
	if err != nil {
		var f *Failure
		if !errors.As(err, &f) {
			return fmt.Sprintf("error %T", err)
		}
		return "failure " + f.Kind.String()
	}
	var is []string
	for _, i := range res.Issues() {
		is = append(is, string(i.Code())+" "+i.ResourceURI())
	}
	return fmt.Sprintf("items %v issues %v partial %v", itemURIs(res), is, res.Partial())
}

// policyCalls counts the policy callbacks of the rig's last read.
func policyCalls(g *rig) string {
	var discover, perTarget, decide int
	for _, e := range g.eventLog() {
		switch {
		case e == "discover":
			discover++
		case strings.HasPrefix(e, "vis "), strings.HasPrefix(e, "perm "):
			perTarget++
		case strings.HasPrefix(e, "decide "):
			decide++
		}
	}
	return fmt.Sprintf("discover %d, per-target %d, decide %d", discover, perTarget, decide)
}

// perTargetCalls is what the per-target path asks for a read that reaches
// its recheck: per phase, Visibility and Read of the requested target, then
// Visibility of every item and Read of each visible one.
func perTargetCalls(g *rig, uris []string) int {
	n := 0
	for p := range 2 {
		n += 2
		for _, u := range uris {
			n++
			if !g.hidden[p][u] {
				n++
			}
		}
	}
	return n
}

// TestDecideKeepsEveryOutcomeOfThePerTargetPath runs each outcome of the
// contract through Decide and through the per-target callbacks, and wants
// the stated result from both.
func TestDecideKeepsEveryOutcomeOfThePerTargetPath(t *testing.T) {
	cases := []struct {
		name  string
		setup func(g *rig)
		want  string
	}{
		{"all allowed", func(g *rig) {}, "items [test://a test://b] issues [] partial false"},
		{"hidden item is outside the selection", func(g *rig) { g.hide("test://b", 0, 1) },
			"items [test://a] issues [] partial false"},
		{"denied visible item is an omission", func(g *rig) {
			g.deny("test://b", 0, 1)
			g.disclose[1]["test://b"] = true
		}, "items [test://a] issues [unavailable test://b] partial true"},
		{"denied item without disclosure", func(g *rig) { g.deny("test://b", 0, 1) },
			"items [test://a] issues [unavailable ] partial true"},
		{"now hidden disappears silently", func(g *rig) {
			g.hide("test://b", 1)
			g.disclose[1]["test://b"] = true
		}, "items [test://a] issues [] partial false"},
		{"revoked gets its issue", func(g *rig) {
			g.deny("test://b", 1)
			g.disclose[1]["test://b"] = true
		}, "items [test://a] issues [unavailable test://b] partial true"},
		{"newly visible is unavailable", func(g *rig) {
			g.hide("test://b", 0)
			g.disclose[1]["test://b"] = true
		}, "items [test://a] issues [unavailable test://b] partial true"},
		{"disclosure is the recheck's", func(g *rig) {
			g.deny("test://b", 0, 1)
			g.disclose[0]["test://b"] = true
		}, "items [test://a] issues [unavailable ] partial true"},
		{"requested target hidden before reads", func(g *rig) { g.hide(bundleURI, 0) }, "failure unavailable"},
		{"requested target denied before reads", func(g *rig) { g.deny(bundleURI, 0) }, "failure unavailable"},
		{"requested target hidden at recheck", func(g *rig) { g.hide(bundleURI, 1) }, "failure unavailable"},
		{"requested target denied at recheck", func(g *rig) { g.deny(bundleURI, 1) }, "failure unavailable"},
		{"discovery revoked at recheck", func(g *rig) { g.noFind[1] = true }, "failure unavailable"},
		{"discovery fails at recheck", func(g *rig) {
			g.discoverErr = func(p int) error {
				if p == 1 {
					return errors.New("CANARY policy store down")
				}
				return nil
			}
		}, "failure policy failure"},
		// Every visible item unavailable looks like a missing resource (issue 29).
		{"every item revoked", func(g *rig) { g.deny("test://a", 1); g.deny("test://b", 1) }, "failure unavailable"},
		{"no item survived", func(g *rig) {
			g.deny("test://a", 1)
			g.item("test://b").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
				return ResourcePayload{}, errors.New("CANARY broken")
			}
		}, "failure no item survived"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, batch := range []bool{false, true} {
				g := newRig(t, "test://a", "test://b")
				g.batch = batch
				tc.setup(g)
				res, err := g.read()
				if got := outcome(res, err); got != tc.want {
					t.Errorf("batch=%v: %s, want %s", batch, got, tc.want)
				}
				if batch && strings.Contains(policyCalls(g), "per-target 0") == false {
					t.Errorf("batch path called per-target callbacks: %v", g.eventLog())
				}
				if !batch && len(g.passLog()) != 0 {
					t.Errorf("per-target path called Decide")
				}
			}
		})
	}
}

// TestDecideIsOneCallPerPass proves the whole read asks Decide exactly
// twice, before any body and after the last, with the requested target
// first and the items in plan order, and Discover only before resolving.
func TestDecideIsOneCallPerPass(t *testing.T) {
	g := newRig(t, "test://a", "test://b", "test://c")
	g.batch = true
	g.hide("test://b", 0)
	mustRead(t, g)
	want := []string{"discover", "resolve", "decide before reads 4", "read test://a", "read test://c", "decide recheck 4"}
	if ev := g.eventLog(); !slices.Equal(ev, want) {
		t.Fatalf("events %v, want %v", ev, want)
	}
	passes := g.passLog()
	for i, stage := range []PassStage{PassBeforeReads, PassRecheck} {
		p := passes[i]
		var uris []string
		for _, t := range p.Targets {
			uris = append(uris, t.URI())
		}
		if p.Stage != stage || p.Definition.URI != bundleURI || !slices.Equal(uris, []string{bundleURI, "test://a", "test://b", "test://c"}) {
			t.Fatalf("pass %d: stage %v, definition %q, targets %v", i, p.Stage, p.Definition.URI, uris)
		}
		if p.Targets[0].Representation() != "bundle" || p.Targets[1].Representation() != "item" {
			t.Fatalf("pass %d: the targets are not the plan's", i)
		}
	}
}

// TestDecideAsksTheRequestedTargetOnceWhenAnItemHasItsIdentity: a plan
// whose item is the requested target (same URI, representation and
// authorization data) lists it once, and its one decision governs both
// the root and the item; an item with the same URI but other
// authorization data is a target of its own.
func TestDecideAsksTheRequestedTargetOnceWhenAnItemHasItsIdentity(t *testing.T) {
	plan := func(authz string, rest ...string) func(ctx context.Context, m ResourceMatch) (ResourceReadPlan, error) {
		return func(ctx context.Context, m ResourceMatch) (ResourceReadPlan, error) {
			req, err := NewResourceTarget(m.URI(), "item", []byte(`{"k":1}`))
			if err != nil {
				return ResourceReadPlan{}, err
			}
			var items []ResourceTarget
			for _, u := range rest {
				it, _ := NewResourceTarget(u, "item", nil)
				items = append(items, it)
			}
			self, _ := NewResourceTarget(m.URI(), "item", []byte(authz))
			items = append(items[:1:1], append([]ResourceTarget{self}, items[1:]...)...)
			return NewResourceReadPlan(req, items...)
		}
	}
	for _, tc := range []struct {
		authz   string
		targets []string
	}{
		{`{"k":1}`, []string{bundleURI, "test://a", "test://c"}},
		{`{"k":2}`, []string{bundleURI, "test://a", bundleURI, "test://c"}},
	} {
		g := newRig(t)
		g.batch = true
		g.resolve = plan(tc.authz, "test://a", "test://c")
		g.disclose[1][bundleURI] = true
		res := mustRead(t, g)
		if got := outcome(res, nil); got != "items [test://a test://bundle test://c] issues [] partial false" {
			t.Fatalf("authz %s: %s", tc.authz, got)
		}
		for _, p := range g.passLog() {
			var uris []string
			for _, t := range p.Targets {
				uris = append(uris, t.URI())
			}
			if !slices.Equal(uris, tc.targets) {
				t.Fatalf("authz %s: %v targets %v, want %v", tc.authz, p.Stage, uris, tc.targets)
			}
		}
		// The deduplicated item takes the requested target's decision. A
		// requested target the recheck hides fails the read whichever way;
		// so mark the answer for position 0 only (the recheck revokes the
		// read of the item's own position when it has one).
		g = newRig(t)
		g.batch = true
		g.resolve = plan(tc.authz, "test://a", "test://c")
		g.passHook = func(pass PolicyPass, ds []TargetDecision) ([]TargetDecision, error) {
			if pass.Stage == PassRecheck && len(ds) == 4 {
				ds[2].Read = false // the item's own decision, when it is asked apart
				ds[2].DiscloseIssueURI = true
			}
			return ds, nil
		}
		res = mustRead(t, g)
		want := "items [test://a test://bundle test://c] issues [] partial false"
		if len(tc.targets) == 4 {
			want = "items [test://a test://c] issues [unavailable test://bundle] partial true"
		}
		if got := outcome(res, nil); got != want {
			t.Fatalf("authz %s: %s, want %s", tc.authz, got, want)
		}
	}
}

// TestDecideFailuresFailTheWholeRead: an error, a wrong number of
// decisions or a panic of Decide fails the read as a policy failure at
// either pass; a typed Unavailable is a root denial. Nothing is returned,
// no body is read after a failed first pass, and no cause reaches the
// message.
func TestDecideFailuresFailTheWholeRead(t *testing.T) {
	cases := map[string]struct {
		answer func(ds []TargetDecision) ([]TargetDecision, error)
		kind   FailureKind
	}{
		"error":              {func([]TargetDecision) ([]TargetDecision, error) { return nil, errors.New("CANARY") }, FailurePolicy},
		"error with answers": {func(ds []TargetDecision) ([]TargetDecision, error) { return ds, errors.New("CANARY") }, FailurePolicy},
		"unavailable": {func([]TargetDecision) ([]TargetDecision, error) {
			return nil, NewFailure(FailureUnavailable, errors.New("CANARY"))
		}, FailureUnavailable},
		"too few":  {func(ds []TargetDecision) ([]TargetDecision, error) { return ds[:len(ds)-1], nil }, FailurePolicy},
		"too many": {func(ds []TargetDecision) ([]TargetDecision, error) { return append(ds, ds[0]), nil }, FailurePolicy},
		"none":     {func([]TargetDecision) ([]TargetDecision, error) { return nil, nil }, FailurePolicy},
		"panic":    {func([]TargetDecision) ([]TargetDecision, error) { panic("CANARY") }, FailurePolicy},
	}
	for name, tc := range cases {
		for _, stage := range []PassStage{PassBeforeReads, PassRecheck} {
			t.Run(name+"/"+stage.String(), func(t *testing.T) {
				g := newRig(t, "test://a", "test://b")
				g.batch = true
				g.passHook = func(pass PolicyPass, ds []TargetDecision) ([]TargetDecision, error) {
					if pass.Stage == stage {
						return tc.answer(ds)
					}
					return ds, nil
				}
				res, err := g.read()
				f := wantKind(t, err, tc.kind)
				if res != nil || strings.Contains(f.Error(), "CANARY") {
					t.Fatalf("result %v, message %q", res, f.Error())
				}
				if reads := readsOf(g); stage == PassBeforeReads && len(reads) != 0 {
					t.Fatalf("bodies read after a failed first pass: %v", reads)
				}
				if stage == PassBeforeReads && tc.kind == FailureUnavailable {
					// Authorize fails exactly as the read does.
					_, aerr := g.resources().Authorize(context.Background(), bundleURI)
					if af := wantKind(t, aerr, tc.kind); af.Error() != f.Error() {
						t.Fatalf("Authorize %q, read %q", af.Error(), f.Error())
					}
				}
			})
		}
	}
}

// TestDecideReadIgnoredForHiddenTargets: Read true on a hidden answer does
// not make it visible, and a hidden answer's disclosure is not used.
func TestDecideReadIgnoredForHiddenTargets(t *testing.T) {
	g := newRig(t, "test://a", "test://b")
	g.batch = true
	g.hide("test://b", 0, 1)
	g.disclose[1]["test://b"] = true
	res := mustRead(t, g)
	if got := outcome(res, nil); got != "items [test://a] issues [] partial false" {
		t.Fatal(got)
	}
	if slices.Contains(readsOf(g), "test://b") {
		t.Fatal("hidden item read")
	}
}

// TestAuthorizeMakesOneBeforeReadsPass: Authorize asks Decide once, at
// PassBeforeReads, reads nothing, and keeps exactly the visible items with
// their read permission.
func TestAuthorizeMakesOneBeforeReadsPass(t *testing.T) {
	g := newRig(t, "test://a", "test://hidden", "test://denied")
	g.batch = true
	g.hide("test://hidden", 0, 1)
	g.deny("test://denied", 0, 1)
	a, err := g.resources().Authorize(context.Background(), bundleURI)
	if err != nil {
		t.Fatalf("Authorize: %v", err)
	}
	if ev := g.eventLog(); !slices.Equal(ev, []string{"discover", "resolve", "decide before reads 4"}) {
		t.Fatalf("events %v", ev)
	}
	var got []string
	for i := range a.Len() {
		got = append(got, fmt.Sprintf("%s %v", a.Item(i).URI(), a.Readable(i)))
	}
	if !slices.Equal(got, []string{"test://a true", "test://denied false"}) {
		t.Fatalf("items %v", got)
	}
	for name, set := range map[string]func(g *rig){
		"hidden": func(g *rig) { g.hide(bundleURI, 0) },
		"denied": func(g *rig) { g.deny(bundleURI, 0) },
	} {
		g := newRig(t, "test://a")
		g.batch = true
		set(g)
		if _, err := g.resources().Authorize(context.Background(), bundleURI); KindOf(err) != FailureUnavailable {
			t.Fatalf("requested target %s: %v", name, err)
		}
	}
}

// TestWithoutDecideEveryTargetIsAskedAsBefore pins the per-target path's
// sequence of callbacks: discovery, plan, requested target then each item
// (Read only for a visible one), the reads, then the same again with
// discovery first.
func TestWithoutDecideEveryTargetIsAskedAsBefore(t *testing.T) {
	g := newRig(t, "test://a", "test://b")
	g.hide("test://b", 0)
	mustRead(t, g)
	want := []string{"discover", "resolve",
		"vis test://bundle", "perm test://bundle", "vis test://a", "perm test://a", "vis test://b",
		"read test://a",
		"discover", "vis test://bundle", "perm test://bundle", "vis test://a", "perm test://a", "vis test://b", "perm test://b"}
	if ev := g.eventLog(); !slices.Equal(ev, want) {
		t.Fatalf("events %v\nwant   %v", ev, want)
	}
}

func TestPassStageString(t *testing.T) {
	for s, want := range map[PassStage]string{PassBeforeReads: "before reads", PassRecheck: "recheck", 0: "PassStage(?)"} {
		if s.String() != want {
			t.Errorf("%d: %q", s, s.String())
		}
	}
}
