package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// canaryCause is a private cause whose text must never reach a client.
var canaryCause = errors.New("CANARY-private-cause 10.0.0.7:5432 password=hunter2")

// TestOutageWhilePlanningIsAStorageOutageNotAnInvalidPlan proves a resolver's
// Outage (even wrapped) fails the read as FailureOutage, retryable, with its
// fixed message and the cause behind Unwrap; a resolver's other errors stay
// FailureInvalidPlan and are not retryable.
func TestOutageWhilePlanningIsAStorageOutageNotAnInvalidPlan(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		kind FailureKind
	}{
		{"an Outage", NewFailure(FailureOutage, canaryCause), FailureOutage},
		{"a wrapped Outage", fmt.Errorf("resolver: %w", NewFailure(FailureOutage, canaryCause)), FailureOutage},
		{"a plain error", canaryCause, FailureInvalidPlan},
		{"an Unavailable", NewFailure(FailureUnavailable, canaryCause), FailureUnavailable},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newRig(t, "test://a")
			g.resolve = func(context.Context, ResourceMatch) (ResourceReadPlan, error) { return ResourceReadPlan{}, c.err }
			_, err := g.read()
			f := wantKind(t, err, c.kind)
			if !errors.Is(err, canaryCause) {
				t.Fatalf("the cause is not behind Unwrap: %v", err)
			}
			if f.Error() != NewFailure(c.kind, nil).Error() || strings.Contains(f.Error(), "CANARY") {
				t.Fatalf("message %q, want the fixed message of %v", f.Error(), c.kind)
			}
			if f.Retryable() != (c.kind == FailureOutage) {
				t.Fatalf("retryable %v for %v", f.Retryable(), c.kind)
			}
			want := ""
			if c.kind == FailureOutage {
				want = `{"retryable":true}`
			}
			if string(f.Report()) != want {
				t.Fatalf("report %s, want %q", f.Report(), want)
			}
		})
	}
}

// TestOutageInEveryPolicyCallbackIsAStorageOutage proves that a policy whose
// storage is down fails the read as FailureOutage at every step where the
// policy is asked (discovery, visibility, read permission; before the reads
// and in the recheck), where any other error of the same callback is
// FailurePolicy.
func TestOutageInEveryPolicyCallbackIsAStorageOutage(t *testing.T) {
	for _, phase := range []int{0, 1} {
		for _, step := range []string{"discover", "visibility", "read"} {
			for _, outage := range []bool{true, false} {
				name := fmt.Sprintf("%s phase %d outage %v", step, phase, outage)
				t.Run(name, func(t *testing.T) {
					cause := error(canaryCause)
					want := FailurePolicy
					if outage {
						cause, want = NewFailure(FailureOutage, canaryCause), FailureOutage
					}
					fail := func(p int) error {
						if p == phase {
							return cause
						}
						return nil
					}
					g := newRig(t, "test://a", "test://b")
					switch step {
					case "discover":
						g.discoverErr = fail
					case "visibility":
						g.visibilityErr = func(p int, _ string) error { return fail(p) }
					case "read":
						g.readPermErr = func(p int, _ string) error { return fail(p) }
					}
					res, err := g.read()
					wantKind(t, err, want)
					if res != nil || !errors.Is(err, canaryCause) {
						t.Fatalf("result %v, cause kept %v", res, errors.Is(err, canaryCause))
					}
				})
			}
		}
	}
}

// TestOutageWhileListingOrCompletingIsAStorageOutage proves that the
// listing's and the completion's discovery checks, and a completer, report
// an Outage as FailureOutage and other errors as FailurePolicy.
func TestOutageWhileListingOrCompletingIsAStorageOutage(t *testing.T) {
	for _, outage := range []bool{true, false} {
		cause, want := error(canaryCause), FailurePolicy
		if outage {
			cause, want = NewFailure(FailureOutage, canaryCause), FailureOutage
		}
		t.Run(fmt.Sprintf("outage %v", outage), func(t *testing.T) {
			var failDiscover, failComplete bool
			policy := PerTarget(TargetPolicy{
				Discover: func(context.Context, ResourceDefinition) error {
					if failDiscover {
						return cause
					}
					return nil
				},
				Visibility: func(context.Context, ResourceTarget) (Visibility, error) { return Visibility{Visible: true}, nil },
				Read:       func(context.Context, ResourceTarget) error { return nil },
			})
			comp := completingResolver{complete: func() (Completion, error) {
				if failComplete {
					return Completion{}, cause
				}
				return Completion{Values: []string{"x"}}, nil
			}}
			r, err := NewResources([]ResourceBinding{
				{Definition: ResourceDefinition{URI: "test://one", Name: "one"}, Resolver: comp, Reader: ItemReader(nil2)},
				{Definition: ResourceDefinition{URITemplate: "test://t/{id}", Name: "t"}, Resolver: comp, Reader: ItemReader(nil2), Complete: comp.Complete},
			}, policy)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			failDiscover = true
			_, err = r.List(ctx, ListRequest{ScopeKey: []byte("k")})
			wantKind(t, err, want)
			_, err = r.ListTemplates(ctx, ListRequest{ScopeKey: []byte("k")})
			wantKind(t, err, want)
			_, err = r.Complete(ctx, "test://t/{id}", "id", "", nil)
			wantKind(t, err, want)
			failDiscover, failComplete = false, true
			_, err = r.Complete(ctx, "test://t/{id}", "id", "", nil)
			wantKind(t, err, want)
			if !errors.Is(err, canaryCause) {
				t.Fatalf("cause lost: %v", err)
			}
		})
	}
}

type completingResolver struct {
	complete func() (Completion, error)
}

func (completingResolver) Resolve(ctx context.Context, m ResourceMatch) (ResourceReadPlan, error) {
	t, err := NewResourceTarget(m.URI(), "item", nil)
	if err != nil {
		return ResourceReadPlan{}, err
	}
	return NewResourceReadPlan(t, t)
}

func (c completingResolver) Complete(context.Context, CompletionRequest) (Completion, error) {
	return c.complete()
}

func nil2(context.Context, ReadItem) (ResourcePayload, error) {
	return TextPayload("text/plain", "x"), nil
}

// TestReaderOutageIsTheItemsReadFailed proves a body reader's Outage means
// what any reader error means, the item's retryable read_failed, and never a
// whole-read outage: beside a sibling the bundle is partial; alone, the read
// fails as FailureNoItems whose report says read_failed, retryable.
func TestReaderOutageIsTheItemsReadFailed(t *testing.T) {
	outage := func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return ResourcePayload{}, NewFailure(FailureOutage, canaryCause)
	}
	g := newRig(t, "test://a", "test://b")
	g.item("test://b").read = outage
	res := mustRead(t, g)
	if got := issueCodes(res); !res.Partial() || len(got) != 1 || got[0] != IssueReadFailed {
		t.Fatalf("issues %v, want b read_failed", got)
	}

	g = newRig(t, "test://a")
	g.item("test://a").read = outage
	_, err := g.read()
	f := wantKind(t, err, FailureNoItems)
	want := `{"retryable":true,"issues":[{"code":"read_failed","message":"The resource could not be read.","retryable":true}],"issuesOmitted":0}`
	if string(f.Report()) != want || !f.Retryable() {
		t.Fatalf("report %s, want %s", f.Report(), want)
	}
}

// TestNoItemsFailureCarriesTheSafeReportBounded proves the FailureNoItems
// failure details each visible failure in plan order with its fixed code,
// message and retryable flag, a URI only where the final decision disclosed
// it, never a cause; at most MaxIssues issues with the rest counted; and
// retryable when any visible failure (detailed or not) was read_failed.
func TestNoItemsFailureCarriesTheSafeReportBounded(t *testing.T) {
	t.Run("codes, disclosure and no cause", func(t *testing.T) {
		g := newRig(t, "test://a", "test://b", "test://c")
		g.item("test://a").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
			return ResourcePayload{}, NewFailure(FailureUnavailable, canaryCause)
		}
		g.item("test://b").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
			return TextPayload("text/plain", "\xff CANARY"), nil
		}
		g.item("test://c").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
			return ResourcePayload{}, &TooLargeError{Size: 1 << 40}
		}
		g.disclose[1]["test://b"] = true
		g.disclose[0]["test://c"] = true // only the final decision counts
		_, err := g.read()
		f := wantKind(t, err, FailureNoItems)
		want := `{"retryable":false,"issues":[` +
			`{"code":"unavailable","message":"The resource is unavailable.","retryable":false},` +
			`{"code":"invalid_content","message":"The resource returned invalid content.","retryable":false,"uri":"test://b"},` +
			`{"code":"budget_exceeded","message":"The resource did not fit the response budget.","retryable":false}],"issuesOmitted":0}`
		if string(f.Report()) != want {
			t.Fatalf("report\n%s\nwant\n%s", f.Report(), want)
		}
		if got := f.Issues(); len(got) != 3 || got[1].ResourceURI() != "test://b" || got[0].ResourceURI() != "" {
			t.Fatalf("issues %+v", got)
		}
		if strings.Contains(string(f.Report()), "CANARY") || strings.Contains(f.Error(), "CANARY") {
			t.Fatal("a cause reached the report")
		}
	})
	t.Run("bounded by MaxIssues, retryable from an omitted failure", func(t *testing.T) {
		uris := []string{"test://0", "test://1", "test://2", "test://3", "test://4"}
		g := newRig(t, uris...)
		g.opts = []Option{WithResourceLimits(ResourceLimits{MaxIssues: 2})}
		for i, u := range uris {
			g.item(u).read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
				if i == 4 {
					return ResourcePayload{}, canaryCause // read_failed, beyond MaxIssues
				}
				return TextPayload("text/plain", "\xff"), nil
			}
		}
		_, err := g.read()
		f := wantKind(t, err, FailureNoItems)
		if len(f.Issues()) != 2 || f.IssuesOmitted() != 3 || !f.Retryable() {
			t.Fatalf("issues %d omitted %d retryable %v; want 2, 3, true", len(f.Issues()), f.IssuesOmitted(), f.Retryable())
		}
		if !strings.HasSuffix(string(f.Report()), `],"issuesOmitted":3}`) || !strings.HasPrefix(string(f.Report()), `{"retryable":true,`) {
			t.Fatalf("report %s", f.Report())
		}
		f.Issues()[0] = ResourceIssue{} // a copy
		if f.Issues()[0].Code() != IssueInvalidContent {
			t.Fatal("Issues returned the failure's own slice")
		}
	})
	t.Run("other kinds carry no detail", func(t *testing.T) {
		for k := FailureUnavailable; k <= FailureOutage; k++ {
			f := NewFailure(k, canaryCause)
			want := ""
			switch k {
			case FailureOutage:
				want = `{"retryable":true}`
			case FailureNoItems: // built without issues: the shape, empty
				want = `{"retryable":false,"issues":[],"issuesOmitted":0}`
			}
			if f.Issues() != nil || f.IssuesOmitted() != 0 || string(f.Report()) != want || f.Retryable() != (k == FailureOutage) {
				t.Errorf("%v: issues %v report %s retryable %v", k, f.Issues(), f.Report(), f.Retryable())
			}
		}
	})
}

// TestEveryVisibleItemUnavailableLooksLikeAMissingResource proves that a
// read whose visible items all failed as unavailable (refused by the reader,
// denied at the first decision, revoked in the recheck, newly visible) and
// none was admitted fails exactly as a request that matches nothing: the
// same kind, message and detail (none), the cause behind Unwrap; while a
// bundle whose items are all hidden in the recheck is legitimately empty.
func TestEveryVisibleItemUnavailableLooksLikeAMissingResource(t *testing.T) {
	missing := func() *Failure {
		g := newRig(t, "test://a")
		_, err := g.resources().Read(context.Background(), "test://nothing-matches")
		return wantKind(t, err, FailureUnavailable)
	}()
	refused := func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return ResourcePayload{}, NewFailure(FailureUnavailable, canaryCause)
	}
	for name, setup := range map[string]func(g *rig){
		"refused by the reader":       func(g *rig) { g.item("test://a").read = refused; g.item("test://b").read = refused },
		"denied at the first check":   func(g *rig) { g.deny("test://a", 0, 1); g.deny("test://b", 0) },
		"revoked in the recheck":      func(g *rig) { g.deny("test://a", 1); g.deny("test://b", 1) },
		"newly visible":               func(g *rig) { g.hide("test://a", 0); g.hide("test://b", 0) },
		"refused, denied and revoked": func(g *rig) { g.item("test://a").read = refused; g.deny("test://b", 1) },
	} {
		t.Run(name, func(t *testing.T) {
			g := newRig(t, "test://a", "test://b")
			setup(g)
			res, err := g.read()
			f := wantKind(t, err, FailureUnavailable)
			if res != nil || f.Error() != missing.Error() || f.Report() != nil || f.Issues() != nil || f.Retryable() {
				t.Fatalf("%q %s: want exactly what a missing resource gets (%q)", f.Error(), f.Report(), missing.Error())
			}
			if !errors.Is(err, errAllUnavailable) {
				t.Fatalf("cause %v, want errAllUnavailable behind Unwrap", f.Unwrap())
			}
		})
	}
	t.Run("one unavailable and one read_failed is no item survived", func(t *testing.T) {
		g := newRig(t, "test://a", "test://b")
		g.item("test://a").read = refused
		g.item("test://b").read = func(context.Context, ResourceTarget) (ResourcePayload, error) { return ResourcePayload{}, canaryCause }
		_, err := g.read()
		wantKind(t, err, FailureNoItems)
	})
	t.Run("every item hidden in the recheck is an empty bundle", func(t *testing.T) {
		g := newRig(t, "test://a", "test://b")
		g.item("test://a").read = refused
		g.hide("test://a", 1)
		g.hide("test://b", 1)
		res := mustRead(t, g)
		if res.Partial() || len(res.Items()) != 0 {
			t.Fatalf("partial %v items %d, want an empty complete bundle", res.Partial(), len(res.Items()))
		}
	})
}

// TestOutageInAWholePlanDecisionIsAStorageOutage proves that a Decide pass
// whose storage is down, before the reads or in the recheck, fails the read
// as FailureOutage, where any other Decide error is FailurePolicy.
func TestOutageInAWholePlanDecisionIsAStorageOutage(t *testing.T) {
	for _, stage := range []PassStage{PassBeforeReads, PassRecheck} {
		for _, outage := range []bool{true, false} {
			t.Run(fmt.Sprintf("%v outage %v", stage, outage), func(t *testing.T) {
				cause, want := error(canaryCause), FailurePolicy
				if outage {
					cause, want = NewFailure(FailureOutage, canaryCause), FailureOutage
				}
				g := newRig(t, "test://a", "test://b")
				g.batch = true
				g.passHook = func(pass PolicyPass, ds []TargetDecision) ([]TargetDecision, error) {
					if pass.Stage == stage {
						return nil, cause
					}
					return ds, nil
				}
				_, err := g.read()
				wantKind(t, err, want)
				if !errors.Is(err, canaryCause) {
					t.Fatalf("cause lost: %v", err)
				}
			})
		}
	}
}
