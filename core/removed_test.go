package core

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
)

// endLog keeps the end of every phase an observer saw, by phase name.
type endLog struct {
	mu   sync.Mutex
	ends map[string][]Phase
}

func (l *endLog) Start(ctx context.Context, p Phase) (context.Context, func(Phase)) {
	return ctx, func(e Phase) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.ends == nil {
			l.ends = map[string][]Phase{}
		}
		l.ends[e.Name] = append(l.ends[e.Name], e)
	}
}

// The assembly phase's end counts every planned item the read did not
// serve by the step that removed it: hidden or denied before the reads,
// hidden, revoked or newly visible at the recheck, refused or failed by
// the body read. The selection's end names the definition, and an item's
// end the object version its source served it at.
func TestObserverSeesWhatARemovedAndWhy(t *testing.T) {
	g := newRig(t, "test://ok", "test://hidden", "test://denied", "test://gone", "test://revoked", "test://new", "test://refused", "test://broken")
	g.batch = true
	g.hide("test://hidden", 0, 1)
	g.deny("test://denied", 0, 1)
	g.hide("test://gone", 1)
	g.deny("test://revoked", 1)
	g.hide("test://new", 0)
	g.item("test://refused").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return ResourcePayload{}, NewFailure(FailureUnavailable, errors.New("storage says no"))
	}
	g.item("test://broken").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return ResourcePayload{}, errors.New("connection reset")
	}
	served := ObjectRef{Source: "files", Key: "ok", ETag: `"e1"`, VersionID: "v1"}
	g.item("test://ok").read = func(_ context.Context, t ResourceTarget) (ResourcePayload, error) {
		return TextPayload("text/plain", textOf(t.URI())).WithObjectVersion(served), nil
	}
	l := &endLog{}
	res, err := g.readCtx(WithObserver(context.Background(), l))
	if err != nil {
		t.Fatal(err)
	}
	if got := itemURIs(res); !slices.Equal(got, []string{"test://ok"}) {
		t.Fatalf("items %v", got)
	}
	asm := l.ends["assembly"]
	if len(asm) != 1 {
		t.Fatalf("%d assembly ends", len(asm))
	}
	want := []RemovedItems{
		{Stage: PassBeforeReads, Code: "", Count: 1},
		{Stage: PassBeforeReads, Code: IssueUnavailable, Count: 1},
		{Stage: PassRecheck, Code: "", Count: 1},
		{Stage: PassRecheck, Code: IssueUnavailable, Count: 2},
		{Stage: 0, Code: IssueUnavailable, Count: 1},
		{Stage: 0, Code: IssueReadFailed, Count: 1},
	}
	if !slices.Equal(asm[0].Removed, want) {
		t.Fatalf("removed %+v\nwant    %+v", asm[0].Removed, want)
	}
	if sel := l.ends["selection"]; len(sel) != 1 || sel[0].Definition.URI != bundleURI {
		t.Fatalf("selection ends %+v", sel)
	}
	var got []ObjectRef
	for _, e := range l.ends["item"] {
		if e.Target.URI() == "test://ok" {
			got = append(got, e.Served)
		}
	}
	if !slices.Equal(got, []ObjectRef{served}) {
		t.Fatalf("served versions %+v", got)
	}
}

// A read all of whose items were denied fails as unavailable, and its
// assembly's end still counts them.
func TestObserverCountsTheItemsOfARefusedRead(t *testing.T) {
	g := newRig(t, "test://a", "test://b")
	g.batch = true
	g.deny("test://a", 0, 1)
	g.deny("test://b", 1)
	l := &endLog{}
	_, err := g.readCtx(WithObserver(context.Background(), l))
	wantKind(t, err, FailureUnavailable)
	asm := l.ends["assembly"]
	want := []RemovedItems{{Stage: PassBeforeReads, Code: IssueUnavailable, Count: 1}, {Stage: PassRecheck, Code: IssueUnavailable, Count: 1}}
	if len(asm) != 1 || asm[0].Err == nil || !slices.Equal(asm[0].Removed, want) {
		t.Fatalf("assembly ends %+v, want an error and %+v", asm, want)
	}
}
