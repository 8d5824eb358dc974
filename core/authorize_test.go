package core

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

func TestAuthorizeDecidesLikeReadWithoutReadingABody(t *testing.T) {
	g := newRig(t, "test://a", "test://hidden", "test://denied")
	g.hide("test://hidden", 0, 1)
	g.deny("test://denied", 0, 1)
	a, err := g.resources().Authorize(context.Background(), bundleURI)
	if err != nil {
		t.Fatalf("Authorize: %v", err)
	}
	for _, e := range g.eventLog() {
		if strings.HasPrefix(e, "read ") {
			t.Fatalf("Authorize read a body: %v", g.eventLog())
		}
	}
	if a.Requested().URI() != bundleURI {
		t.Fatalf("requested = %s", a.Requested().URI())
	}
	var got []string
	for i := range a.Len() {
		got = append(got, a.Item(i).URI())
		if want := a.Item(i).URI() == "test://a"; a.Readable(i) != want {
			t.Errorf("Readable(%s) = %v, want %v", a.Item(i).URI(), a.Readable(i), want)
		}
	}
	if strings.Join(got, ",") != "test://a,test://denied" {
		t.Fatalf("visible items = %v, want the hidden one left out", got)
	}
}

func TestAuthorizeFailsExactlyWhereReadFailsBeforeReading(t *testing.T) {
	cases := map[string]func(g *rig){
		"discovery denied":        func(g *rig) { g.noFind[0] = true },
		"requested target hidden": func(g *rig) { g.hide(bundleURI, 0) },
		"requested target denied": func(g *rig) { g.deny(bundleURI, 0) },
		"resolver says unavailable": func(g *rig) {
			g.resolve = func(context.Context, ResourceMatch) (ResourceReadPlan, error) {
				return ResourceReadPlan{}, NewFailure(FailureUnavailable, errors.New("gone"))
			}
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			g := newRig(t, "test://a")
			setup(g)
			_, rerr := g.read()
			g2 := newRig(t, "test://a")
			setup(g2)
			_, aerr := g2.resources().Authorize(context.Background(), bundleURI)
			f := wantKind(t, aerr, FailureUnavailable)
			if rerr == nil || rerr.Error() != f.Error() {
				t.Fatalf("Authorize error %q, read error %v: want the same public message", f.Error(), rerr)
			}
		})
	}
	g := newRig(t, "test://a")
	_, err := g.resources().Authorize(context.Background(), "test://nothing-here")
	wantKind(t, err, FailureUnavailable)
	_, err = g.resources().Authorize(context.Background(), "not a uri")
	wantKind(t, err, FailureInvalidRequest)
}

func TestAuthorizeOperationalPolicyErrorFailsAsPolicy(t *testing.T) {
	g := newRig(t, "test://a")
	g.visibilityErr = func(int, string) error { return errors.New("db down") }
	_, err := g.resources().Authorize(context.Background(), bundleURI)
	wantKind(t, err, FailurePolicy)
}

// listCompleter completes with the values that start with the prefix.
type listCompleter struct {
	values []string
	total  int
	calls  *[]CompletionRequest
}

func (c listCompleter) Complete(ctx context.Context, req CompletionRequest) (Completion, error) {
	*c.calls = append(*c.calls, req)
	var out []string
	for _, v := range c.values {
		if strings.HasPrefix(v, req.Prefix) {
			out = append(out, v)
		}
	}
	return Completion{Values: out, Total: c.total}, nil
}

func completionResources(t *testing.T, values []string, total int, calls *[]CompletionRequest, deny bool, extra ...ResourceBinding) *Resources {
	t.Helper()
	plan := ResolverFunc(func(ctx context.Context, m ResourceMatch) (ResourceReadPlan, error) {
		tg, err := NewResourceTarget(m.URI(), "item", nil)
		if err != nil {
			return ResourceReadPlan{}, err
		}
		return NewResourceReadPlan(tg, tg)
	})
	read := ItemReader(func(context.Context, ReadItem) (ResourcePayload, error) {
		return TextPayload("text/plain", "x"), nil
	})
	bs := append([]ResourceBinding{{
		Definition: ResourceDefinition{URITemplate: "test://p/{project}/a/{asset}", Name: "asset"},
		Resolver:   plan,
		Reader:     read,
		Complete:   listCompleter{values: values, total: total, calls: calls}.Complete,
	}}, extra...)
	pol := PerTarget(TargetPolicy{
		Discover: func(context.Context, ResourceDefinition) error {
			if deny {
				return NewFailure(FailureUnavailable, errors.New("no"))
			}
			return nil
		},
		Visibility: func(context.Context, ResourceTarget) (Visibility, error) { return Visibility{Visible: true}, nil },
		Read:       func(context.Context, ResourceTarget) error { return nil },
	})
	r, err := NewResources(bs, pol)
	if err != nil {
		t.Fatalf("NewResources: %v", err)
	}
	return r
}

func TestCompleteOffersOnlyValuesThatCanBeCaptured(t *testing.T) {
	var calls []CompletionRequest
	r := completionResources(t, []string{"alpha", "alp/ha", "..", "alpine", "beta", "al\x00x"}, 0, &calls, false)
	c, err := r.Complete(context.Background(), "test://p/{project}/a/{asset}", "asset", "al", map[string]string{"project": "p1", "nope": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Values, ",") != "alpha,alpine" {
		t.Fatalf("values = %q", c.Values)
	}
	if len(calls) != 1 || calls[0].Arguments["project"] != "p1" || len(calls[0].Arguments) != 1 || calls[0].Limit != wire.MaxCompletionValues {
		t.Fatalf("completer saw %+v", calls)
	}
}

func TestCompleteNeverReturnsMoreThanOneHundredValues(t *testing.T) {
	var vals []string
	for i := range 250 {
		vals = append(vals, "v"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+strings.Repeat("y", i/26))
	}
	var calls []CompletionRequest
	r := completionResources(t, vals, 250, &calls, false)
	c, err := r.Complete(context.Background(), "test://p/{project}/a/{asset}", "asset", "v", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Values) != wire.MaxCompletionValues || !c.HasMore || c.Total != 250 {
		t.Fatalf("got %d values, hasMore=%v total=%d; want 100, true, 250", len(c.Values), c.HasMore, c.Total)
	}
}

func TestCompleteRevealsNothingForUndiscoverableOrUnknownTemplates(t *testing.T) {
	var calls []CompletionRequest
	r := completionResources(t, []string{"alpha"}, 0, &calls, true)
	for _, q := range [][2]string{
		{"test://p/{project}/a/{asset}", "asset"}, // discovery denied
		{"test://other/{x}", "x"},                 // no such template
		{"test://p/{project}/a/{asset}", "nope"},  // no such variable
	} {
		c, err := r.Complete(context.Background(), q[0], q[1], "", nil)
		if err != nil || len(c.Values) != 0 || c.HasMore || c.Total != 0 {
			t.Fatalf("Complete(%s, %s) = %+v, %v; want empty", q[0], q[1], c, err)
		}
	}
	if len(calls) != 0 {
		t.Fatalf("the completer was asked %d times for an undiscoverable definition", len(calls))
	}
	r = completionResources(t, []string{"alpha"}, 0, &calls, false)
	for _, bad := range []string{"\xff", "a\x00", strings.Repeat("a", 4096)} {
		if c, err := r.Complete(context.Background(), "test://p/{project}/a/{asset}", "asset", bad, nil); err != nil || len(c.Values) != 0 {
			t.Fatalf("prefix %q completed: %v %v", bad, c.Values, err)
		}
	}
	if len(calls) != 0 {
		t.Fatalf("the completer was asked with a prefix no capture can start with: %+v", calls)
	}
}

func TestCompleteDropsValuesWhoseURIAnotherRegistrationTakes(t *testing.T) {
	var calls []CompletionRequest
	exact := ResourceBinding{
		Definition: ResourceDefinition{URI: "test://p/p1/a/alpha", Name: "exact"},
		Resolver:   ResolverFunc(func(context.Context, ResourceMatch) (ResourceReadPlan, error) { return ResourceReadPlan{}, nil }),
		Reader:     ItemReader(func(context.Context, ReadItem) (ResourcePayload, error) { return ResourcePayload{}, nil }),
	}
	r := completionResources(t, []string{"alpha", "alpine", "a b"}, 0, &calls, false, exact)
	c, err := r.Complete(context.Background(), "test://p/{project}/a/{asset}", "asset", "a", map[string]string{"project": "p1"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Values, ",") != "alpine,a b" {
		t.Fatalf("values = %q; want alpha (taken by an exact registration) dropped and a b kept (escaped)", c.Values)
	}
}

func TestCompletionIsTheBindingsFieldAndSurvivesAWrapper(t *testing.T) {
	var calls []CompletionRequest
	comp := listCompleter{values: []string{"alpha"}, calls: &calls}
	plan := ResolverFunc(func(ctx context.Context, m ResourceMatch) (ResourceReadPlan, error) {
		tg, _ := NewResourceTarget(m.URI(), "item", nil)
		return NewResourceReadPlan(tg, tg)
	})
	// A resolver that has a Complete method but no Complete field: the
	// gateway does not look for the method.
	withMethod := struct {
		ResolverFunc
		listCompleter
	}{plan, comp}
	pol := PerTarget(TargetPolicy{
		Discover:   func(context.Context, ResourceDefinition) error { return nil },
		Visibility: func(context.Context, ResourceTarget) (Visibility, error) { return Visibility{Visible: true}, nil },
		Read:       func(context.Context, ResourceTarget) error { return nil },
	})
	read := ItemReader(func(context.Context, ReadItem) (ResourcePayload, error) {
		return TextPayload("text/plain", "x"), nil
	})
	base := ResourceBinding{Definition: ResourceDefinition{URITemplate: "test://x/{id}", Name: "x"}, Resolver: plan, Reader: read, Complete: comp.Complete}
	wrapped := base // what a host's timing wrapper does: copy the binding, replace the callbacks
	wrapped.Resolver = ResolverFunc(func(ctx context.Context, m ResourceMatch) (ResourceReadPlan, error) {
		return base.Resolver.Resolve(ctx, m)
	})
	wrapped.Reader = hostReaderFunc(func(ctx context.Context, req ReadRequest) ([]ReadResult, error) {
		return base.Reader.Read(ctx, req)
	})
	for _, c := range []struct {
		name  string
		b     ResourceBinding
		want  int
		calls int
	}{
		{"wrapped binding", wrapped, 1, 1},
		{"method on the resolver, no field", ResourceBinding{Definition: base.Definition, Resolver: withMethod, Reader: read}, 0, 0},
		{"method on the reader, no field", ResourceBinding{Definition: base.Definition, Resolver: plan, Reader: struct {
			Reader
			listCompleter
		}{read, comp}}, 0, 0},
	} {
		calls = nil
		r, err := NewResources([]ResourceBinding{c.b}, pol)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Complete(context.Background(), "test://x/{id}", "id", "a", nil)
		if err != nil || len(got.Values) != c.want || len(calls) != c.calls {
			t.Fatalf("%s: %v %v after %d completer calls, want %d values and %d calls", c.name, got.Values, err, len(calls), c.want, c.calls)
		}
		if _, err := r.Read(context.Background(), "test://x/alpha"); err != nil {
			t.Fatalf("%s: read: %v", c.name, err)
		}
	}
}
