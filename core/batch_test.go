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

// batchRig is a bundle of items read by one native batch Reader, whose
// answers the test sets per URI; it records every request.
type batchRig struct {
	t      *testing.T
	uris   []string
	hidden map[string]bool
	denied map[string]bool
	limits ResourceLimits
	// answer gives the result for one item of a request; nil returns the
	// item's body "body of URI".
	answer func(req ReadRequest, k int) ReadResult
	// whole, when set, replaces the reader's answer for the whole request.
	whole func(ctx context.Context, req ReadRequest) ([]ReadResult, error)

	mu       sync.Mutex
	requests []ReadRequest
}

func newBatchRig(t *testing.T, n int) *batchRig {
	b := &batchRig{t: t, hidden: map[string]bool{}, denied: map[string]bool{}}
	for i := range n {
		b.uris = append(b.uris, fmt.Sprintf("test://batch/%d", i))
	}
	return b
}

func (b *batchRig) Read(ctx context.Context, req ReadRequest) ([]ReadResult, error) {
	b.mu.Lock()
	b.requests = append(b.requests, ReadRequest{Items: slices.Clone(req.Items), Budget: req.Budget})
	b.mu.Unlock()
	if b.whole != nil {
		return b.whole(ctx, req)
	}
	out := make([]ReadResult, len(req.Items))
	for k, it := range req.Items {
		if b.answer != nil {
			out[k] = b.answer(req, k)
			continue
		}
		out[k] = ReadResult{Payload: TextPayload("text/plain", textOf(it.Target.URI()))}
	}
	return out, nil
}

// requested lists the URIs of every request, one slice per request.
func (b *batchRig) requested() [][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out [][]string
	for _, req := range b.requests {
		var us []string
		for _, it := range req.Items {
			us = append(us, it.Target.URI())
		}
		out = append(out, us)
	}
	return out
}

func (b *batchRig) read() (*ResourceResult, error) {
	b.t.Helper()
	binding := ResourceBinding{
		Definition: ResourceDefinition{URI: bundleURI, Name: "bundle"},
		Resolver: ResolverFunc(func(context.Context, ResourceMatch) (ResourceReadPlan, error) {
			req, _ := NewResourceTarget(bundleURI, "bundle", nil)
			items := make([]ResourceTarget, len(b.uris))
			for i, u := range b.uris {
				items[i], _ = NewResourceTarget(u, "item", nil)
			}
			return NewResourceReadPlan(req, items...)
		}),
		Reader: b,
	}
	policy := PerTarget(TargetPolicy{
		Discover: func(context.Context, ResourceDefinition) error { return nil },
		Visibility: func(_ context.Context, t ResourceTarget) (Visibility, error) {
			return Visibility{Visible: !b.hidden[t.URI()], DiscloseIssueURI: true}, nil
		},
		Read: func(_ context.Context, t ResourceTarget) error {
			if b.denied[t.URI()] {
				return NewFailure(FailureUnavailable, errors.New("denied"))
			}
			return nil
		},
	})
	r, err := NewResources([]ResourceBinding{binding}, policy, WithResourceLimits(b.limits))
	if err != nil {
		b.t.Fatal(err)
	}
	return r.Read(context.Background(), bundleURI)
}

// issuesByURI maps each detailed issue's URI to its code.
func issuesByURI(res *ResourceResult) map[string]IssueCode {
	out := map[string]IssueCode{}
	for _, is := range res.Issues() {
		out[is.ResourceURI()] = is.Code()
	}
	return out
}

func TestNativeBatchReaderGetsOneRequestForConsecutiveItems(t *testing.T) {
	b := newBatchRig(t, 5)
	b.hidden[b.uris[1]] = true // a hidden item needs no read and does not split the run
	b.denied[b.uris[3]] = true // nor does a denied one
	res, err := b.read()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{b.uris[0], b.uris[2], b.uris[4]}
	if got := b.requested(); len(got) != 1 || !slices.Equal(got[0], want) {
		t.Fatalf("requests = %v, want one request for %v", got, want)
	}
	if !slices.Equal(itemURIs(res), want) {
		t.Fatalf("items = %v, want %v in plan order", itemURIs(res), want)
	}
	if is := issuesByURI(res); len(is) != 1 || is[b.uris[3]] != IssueUnavailable {
		t.Fatalf("issues = %v, want the denied item unavailable", is)
	}
	for _, it := range res.Items()[1:] {
		if it.Text() != textOf(it.URI()) {
			t.Fatalf("item %s holds %q", it.URI(), it.Text())
		}
	}
	req := b.requests[0]
	l := DefaultResourceLimits()
	if req.Budget != l.MaxResponseBytes-l.ReportPayloadBytes {
		t.Errorf("budget = %d, want the whole application payload budget %d", req.Budget, l.MaxResponseBytes-l.ReportPayloadBytes)
	}
	for _, it := range req.Items {
		if it.Limit != min(l.MaxItemBytes, req.Budget) {
			t.Errorf("item %s limit = %d, want %d", it.Target.URI(), it.Limit, min(l.MaxItemBytes, req.Budget))
		}
	}
}

func TestNativeBatchReaderIsNeverAskedForMoreThanTheItemCountLeaves(t *testing.T) {
	b := newBatchRig(t, 6)
	b.limits = ResourceLimits{MaxItems: 2}
	// The first item fails, so the count limit leaves room for a second
	// request; the items after the limit are never read.
	b.answer = func(req ReadRequest, k int) ReadResult {
		if req.Items[k].Target.URI() == b.uris[0] {
			return ReadResult{Err: errors.New("boom")}
		}
		return ReadResult{Payload: TextPayload("text/plain", "x")}
	}
	res, err := b.read()
	if err != nil {
		t.Fatal(err)
	}
	got := b.requested()
	want := [][]string{{b.uris[0], b.uris[1]}, {b.uris[2]}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("requests = %v, want %v: never more items than the count limit leaves", got, want)
	}
	if !slices.Equal(itemURIs(res), []string{b.uris[1], b.uris[2]}) {
		t.Fatalf("items = %v", itemURIs(res))
	}
	is := issuesByURI(res)
	if is[b.uris[0]] != IssueReadFailed || is[b.uris[3]] != IssueBudgetExceeded || is[b.uris[5]] != IssueBudgetExceeded {
		t.Fatalf("issues = %v", is)
	}
}

func TestNativeBatchReaderAtTheCountLimitIsNotAskedAgain(t *testing.T) {
	b := newBatchRig(t, 4)
	b.limits = ResourceLimits{MaxItems: 2}
	res, err := b.read()
	if err != nil {
		t.Fatal(err)
	}
	if got := b.requested(); len(got) != 1 || len(got[0]) != 2 {
		t.Fatalf("requests = %v, want one request of two items", got)
	}
	if !res.Partial() || len(itemURIs(res)) != 2 {
		t.Fatalf("items = %v", itemURIs(res))
	}
}

func TestNativeBatchReaderContradictingItsLimitIsReadFailed(t *testing.T) {
	b := newBatchRig(t, 2)
	// TooLarge with a size that fits the limit it was given: the reader
	// contradicts itself.
	b.answer = func(req ReadRequest, k int) ReadResult {
		if k == 0 {
			return ReadResult{Err: &TooLargeError{Size: req.Items[k].Limit}}
		}
		return ReadResult{Payload: TextPayload("text/plain", "x")}
	}
	res, err := b.read()
	if err != nil {
		t.Fatal(err)
	}
	if is := issuesByURI(res); is[b.uris[0]] != IssueReadFailed {
		t.Fatalf("issues = %v, want read_failed for the contradiction", is)
	}
	if !slices.Equal(itemURIs(res), []string{b.uris[1]}) {
		t.Fatalf("items = %v", itemURIs(res))
	}
}

func TestNativeBatchReaderPastItsBudgetStopsAdmission(t *testing.T) {
	b := newBatchRig(t, 3)
	b.limits = appBudget(1000)
	body := strings.Repeat("x", 600)
	// The first body takes 600 of the 1000 bytes; the second is over what
	// the budget leaves: as the contract says, TooLarge with its size, which
	// stops admission (the third is unattempted).
	b.answer = func(req ReadRequest, k int) ReadResult {
		if k == 1 {
			return ReadResult{Err: &TooLargeError{Size: 600}}
		}
		return ReadResult{Payload: TextPayload("text/plain", body)}
	}
	res, err := b.read()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(itemURIs(res), []string{b.uris[0]}) {
		t.Fatalf("items = %v", itemURIs(res))
	}
	is := issuesByURI(res)
	if is[b.uris[1]] != IssueBudgetExceeded || is[b.uris[2]] != IssueBudgetExceeded {
		t.Fatalf("issues = %v", is)
	}
	if req := b.requests[0]; req.Budget != 1000 || req.Items[0].Limit != 1000 {
		t.Fatalf("request budget %d, limit %d; want 1000", req.Budget, req.Items[0].Limit)
	}
}

func TestNativeBatchReaderReturningABodyOverItsBudgetIsNotAdmitted(t *testing.T) {
	b := newBatchRig(t, 3)
	b.limits = appBudget(1000)
	// A reader that ignores the budget: the second body no longer fits, so
	// admission stops there and keeps the prefix, as for items read one by
	// one.
	b.answer = func(req ReadRequest, k int) ReadResult {
		return ReadResult{Payload: TextPayload("text/plain", strings.Repeat("x", 600))}
	}
	res, err := b.read()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(itemURIs(res), []string{b.uris[0]}) {
		t.Fatalf("items = %v", itemURIs(res))
	}
	is := issuesByURI(res)
	if is[b.uris[1]] != IssueBudgetExceeded || is[b.uris[2]] != IssueBudgetExceeded {
		t.Fatalf("issues = %v", is)
	}
}

func TestNativeBatchReaderFailuresCoverTheWholeRequest(t *testing.T) {
	for name, c := range map[string]struct {
		whole func(ctx context.Context, req ReadRequest) ([]ReadResult, error)
		code  IssueCode
	}{
		"an error": {func(context.Context, ReadRequest) ([]ReadResult, error) { return nil, errors.New("down") }, IssueReadFailed},
		"unavailable": {func(context.Context, ReadRequest) ([]ReadResult, error) {
			return nil, NewFailure(FailureUnavailable, errors.New("no"))
		}, IssueUnavailable},
		"too few results":       {func(context.Context, ReadRequest) ([]ReadResult, error) { return []ReadResult{{}}, nil }, IssueReadFailed},
		"past the item timeout": {func(ctx context.Context, _ ReadRequest) ([]ReadResult, error) { <-ctx.Done(); return nil, ctx.Err() }, IssueTimeout},
	} {
		t.Run(name, func(t *testing.T) {
			b := newBatchRig(t, 3)
			b.limits = ResourceLimits{ItemTimeout: 20 * time.Millisecond, ReadTimeout: 10 * time.Second}
			b.whole = c.whole
			res, err := b.read()
			if c.code == IssueUnavailable {
				wantKind(t, err, FailureUnavailable)
				return
			}
			f := wantKind(t, err, FailureNoItems)
			if res != nil {
				t.Fatal("a failed read returned a result")
			}
			for _, is := range f.Issues() {
				if is.Code() != c.code {
					t.Fatalf("issues = %v, want every item %s", f.Issues(), c.code)
				}
			}
			if len(f.Issues()) != 3 || len(b.requests) != 1 {
				t.Fatalf("%d issues, %d requests", len(f.Issues()), len(b.requests))
			}
		})
	}
}

func TestItemReaderIsAskedItemByItemWithTheLimitLeft(t *testing.T) {
	var limits []int64
	var calls int
	rd := ItemReader(func(_ context.Context, it ReadItem) (ResourcePayload, error) {
		calls++
		limits = append(limits, it.Limit)
		return TextPayload("text/plain", strings.Repeat("x", 300)), nil
	})
	b := newBatchRig(t, 3)
	b.limits = appBudget(1000)
	binding := ResourceBinding{
		Definition: ResourceDefinition{URI: bundleURI, Name: "bundle"},
		Resolver: ResolverFunc(func(context.Context, ResourceMatch) (ResourceReadPlan, error) {
			req, _ := NewResourceTarget(bundleURI, "bundle", nil)
			items := make([]ResourceTarget, len(b.uris))
			for i, u := range b.uris {
				items[i], _ = NewResourceTarget(u, "item", nil)
			}
			return NewResourceReadPlan(req, items...)
		}),
		Reader: rd,
	}
	r, err := NewResources([]ResourceBinding{binding}, ResourcePolicy{
		Discover: func(context.Context, ResourceDefinition) error { return nil },
		Decide: func(_ context.Context, p PolicyPass) ([]TargetDecision, error) {
			ds := make([]TargetDecision, len(p.Targets))
			for i := range ds {
				ds[i] = TargetDecision{Visibility: Visibility{Visible: true}, Read: true}
			}
			return ds, nil
		},
	}, WithResourceLimits(b.limits))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(context.Background(), bundleURI); err != nil {
		t.Fatal(err)
	}
	if calls != 3 || fmt.Sprint(limits) != "[1000 700 400]" {
		t.Fatalf("%d calls with limits %v, want 3 calls with [1000 700 400]", calls, limits)
	}
}
