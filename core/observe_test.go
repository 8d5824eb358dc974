package core

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// phaseLog records what an Observer sees, and marks the context it returns
// so that the test can see which callbacks received it.
type phaseLog struct {
	events []string
}

type phaseMark struct{}

func (l *phaseLog) Start(ctx context.Context, p Phase) (context.Context, func(Phase)) {
	l.events = append(l.events, fmt.Sprintf("start %s stage=%d item=%d items=%d", p.Name, p.Stage, p.Item, p.Items))
	return context.WithValue(ctx, phaseMark{}, p.Name), func(e Phase) {
		kind := ""
		if e.Err != nil {
			kind = KindOf(e.Err).String()
		}
		if e.Stage != p.Stage || e.Item != p.Item || e.Items != p.Items {
			l.events = append(l.events, fmt.Sprintf("end %s without its start fields", p.Name))
		}
		l.events = append(l.events, fmt.Sprintf("end %s issue=%s err=%s", e.Name, e.Issue, kind))
	}
}

// TestObserverSeesEveryPhaseInOrder proves the hook: a read with an
// observer in its context reports each phase once, in order, with the
// pass stages, each item's index and issue code, and hands the phase's
// context to the callbacks of that phase.
func TestObserverSeesEveryPhaseInOrder(t *testing.T) {
	var seen []string
	mark := func(ctx context.Context, who string) {
		p, _ := ctx.Value(phaseMark{}).(string)
		seen = append(seen, who+"@"+p)
	}
	req, _ := NewResourceTarget("mem://b", "b", nil)
	a, _ := NewResourceTarget("mem://b/a", "i", nil)
	gone, _ := NewResourceTarget("mem://b/gone", "i", nil)
	plan, _ := NewResourceReadPlan(req, a, gone)
	r, err := NewResources([]ResourceBinding{{
		Definition: ResourceDefinition{URI: "mem://b", Name: "b"},
		Resolver: ResolverFunc(func(ctx context.Context, _ ResourceMatch) (ResourceReadPlan, error) {
			mark(ctx, "resolve")
			return plan, nil
		}),
		Reader: ItemReader(func(ctx context.Context, item ReadItem) (ResourcePayload, error) {
			t := item.Target
			mark(ctx, "read")
			if t.URI() == "mem://b/gone" {
				return ResourcePayload{}, NewFailure(FailureUnavailable, nil)
			}
			return TextPayload("text/plain", "x"), nil
		}),
	}}, ResourcePolicy{
		Discover: func(ctx context.Context, _ ResourceDefinition) error { mark(ctx, "discover"); return nil },
		Decide: func(ctx context.Context, p PolicyPass) ([]TargetDecision, error) {
			mark(ctx, "decide")
			ds := make([]TargetDecision, len(p.Targets))
			for i := range ds {
				ds[i] = TargetDecision{Visibility: Visibility{Visible: true}, Read: true}
			}
			return ds, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	log := &phaseLog{}
	res, err := r.Read(WithObserver(context.Background(), log), "mem://b")
	if err != nil || !res.Partial() {
		t.Fatalf("read: %v, want a partial result", err)
	}
	want := []string{
		"start selection stage=0 item=-1 items=0", "end selection issue= err=",
		"start discovery stage=0 item=-1 items=0", "end discovery issue= err=",
		"start plan stage=0 item=-1 items=0", "end plan issue= err=",
		"start decide stage=1 item=-1 items=2", "end decide issue= err=",
		"start item stage=0 item=0 items=2", "end item issue= err=",
		"start item stage=0 item=1 items=2", "end item issue=unavailable err=",
		"start recheck stage=2 item=-1 items=2", "end recheck issue= err=",
		"start assembly stage=0 item=-1 items=2", "end assembly issue= err=",
	}
	if got := strings.Join(log.events, "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if got := strings.Join(seen, " "); got != "discover@discovery resolve@plan decide@decide read@item read@item decide@recheck" {
		t.Fatalf("callback contexts: %s", got)
	}

	log.events = nil
	if _, err := r.Read(WithObserver(context.Background(), log), "mem://other"); KindOf(err) != FailureUnavailable {
		t.Fatalf("unknown URI: %v", err)
	}
	if got := strings.Join(log.events, "\n"); got != "start selection stage=0 item=-1 items=0\nend selection issue= err=unavailable" {
		t.Fatalf("a failed selection: %s", got)
	}
}
