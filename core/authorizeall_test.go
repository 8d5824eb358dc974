package core_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
)

// batchNotes plans notes://all/{id}; it counts its Resolve and ResolveAll
// calls, and answers "gone" as missing.
type batchNotes struct{ one, all atomic.Int64 }

func (b *batchNotes) Resolve(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
	b.one.Add(1)
	return b.plan(m)
}

func (b *batchNotes) plan(m core.ResourceMatch) (core.ResourceReadPlan, error) {
	id, _ := m.Var("id")
	if id == "gone" {
		return core.ResourceReadPlan{}, core.NewFailure(core.FailureUnavailable, errors.New("no such note"))
	}
	t, err := core.NewResourceTarget(m.URI(), "note", []byte(`"`+id+`"`))
	if err != nil {
		return core.ResourceReadPlan{}, err
	}
	return core.NewResourceReadPlan(t, t)
}

func (b *batchNotes) ResolveAll(ctx context.Context, ms []core.ResourceMatch) ([]core.ResourceReadPlan, []error) {
	b.all.Add(1)
	plans, errs := make([]core.ResourceReadPlan, len(ms)), make([]error, len(ms))
	for i, m := range ms {
		plans[i], errs[i] = b.plan(m)
	}
	return plans, errs
}

func batchResources(t *testing.T, resolver core.Resolver, decides *atomic.Int64) *core.Resources {
	t.Helper()
	binding := core.ResourceBinding{
		Definition: core.ResourceDefinition{URITemplate: "notes://all/{id}", Name: "note", MIMEType: "text/plain"},
		Resolver:   resolver,
		Reader: core.ItemReader(func(context.Context, core.ReadItem) (core.ResourcePayload, error) {
			return core.TextPayload("text/plain", "x"), nil
		}),
	}
	policy := core.ResourcePolicy{
		Discover: func(context.Context, core.ResourceDefinition) error { return nil },
		Decide: func(_ context.Context, pass core.PolicyPass) ([]core.TargetDecision, error) {
			decides.Add(1)
			out := make([]core.TargetDecision, len(pass.Targets))
			for i, t := range pass.Targets {
				out[i] = core.TargetDecision{Visibility: core.Visibility{Visible: true}, Read: t.URI() != "notes://all/secret"}
			}
			return out, nil
		},
	}
	res, err := core.NewResources([]core.ResourceBinding{binding}, policy)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// AuthorizeAll answers every URI as Authorize does, and plans the URIs of
// a BatchResolver's definition in one ResolveAll call.
func TestAuthorizeAllAnswersAsAuthorizeAndPlansABatchInOneCall(t *testing.T) {
	uris := []string{"notes://all/1", "notes://all/2", "notes://all/gone", "notes://all/secret", "other://x", "notes://all/3"}
	var decides atomic.Int64
	b := &batchNotes{}
	res := batchResources(t, b, &decides)
	ctx := context.Background()
	as, errs := res.AuthorizeAll(ctx, uris)
	if len(as) != len(uris) || len(errs) != len(uris) {
		t.Fatalf("got %d authorizations and %d errors for %d URIs", len(as), len(errs), len(uris))
	}
	if got := b.all.Load(); got != 1 {
		t.Fatalf("ResolveAll calls = %d, want 1 for the whole batch", got)
	}
	if got := b.one.Load(); got != 0 {
		t.Fatalf("Resolve calls = %d, want none", got)
	}
	for i, uri := range uris {
		a, err := res.Authorize(ctx, uri)
		switch {
		case (err == nil) != (errs[i] == nil):
			t.Fatalf("%s: AuthorizeAll error %v, Authorize error %v", uri, errs[i], err)
		case err != nil:
			if core.KindOf(err) != core.KindOf(errs[i]) || err.Error() != errs[i].Error() {
				t.Fatalf("%s: AuthorizeAll error %v, Authorize error %v", uri, errs[i], err)
			}
		case a.Requested().URI() != as[i].Requested().URI() || a.Len() != as[i].Len() || a.Readable(0) != as[i].Readable(0):
			t.Fatalf("%s: AuthorizeAll and Authorize disagree", uri)
		}
	}
	if errs[0] != nil || errs[1] != nil || errs[5] != nil {
		t.Fatalf("readable notes failed: %v", errs)
	}
	if core.KindOf(errs[2]) != core.FailureUnavailable || core.KindOf(errs[3]) != core.FailureUnavailable || core.KindOf(errs[4]) != core.FailureUnavailable {
		t.Fatalf("missing, denied and unmatched URIs: %v, want unavailable", errs[2:5])
	}
}

// plainNotes is a Resolver only.
type plainNotes struct{ b *batchNotes }

func (p plainNotes) Resolve(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
	return p.b.Resolve(ctx, m)
}

// A resolver that is not a BatchResolver is asked once per URI.
func TestAuthorizeAllFallsBackToResolvePerURI(t *testing.T) {
	var decides atomic.Int64
	b := &batchNotes{}
	res := batchResources(t, plainNotes{b}, &decides)
	_, errs := res.AuthorizeAll(context.Background(), []string{"notes://all/1", "notes://all/2", "notes://all/3"})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if b.one.Load() != 3 || b.all.Load() != 0 {
		t.Fatalf("Resolve %d, ResolveAll %d: want 3 and 0", b.one.Load(), b.all.Load())
	}
}

// wrongCount answers ResolveAll with too few plans.
type wrongCount struct{ batchNotes }

func (w *wrongCount) ResolveAll(ctx context.Context, ms []core.ResourceMatch) ([]core.ResourceReadPlan, []error) {
	p, e := w.batchNotes.ResolveAll(ctx, ms)
	return p[:1], e[:1]
}

// A ResolveAll that answers the wrong number of plans fails every URI of
// the batch as an invalid plan.
func TestAuthorizeAllRefusesAResolveAllOfTheWrongLength(t *testing.T) {
	var decides atomic.Int64
	res := batchResources(t, &wrongCount{}, &decides)
	_, errs := res.AuthorizeAll(context.Background(), []string{"notes://all/1", "notes://all/2"})
	for _, err := range errs {
		if core.KindOf(err) != core.FailureInvalidPlan {
			t.Fatalf("error %v, want an invalid plan", err)
		}
	}
}
