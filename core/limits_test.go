package core

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

func newWithLimits(t *testing.T, l ResourceLimits) error {
	g := newRig(t)
	_, err := NewResources([]ResourceBinding{g.binding()}, g.policy(), WithResourceLimits(l))
	return err
}

func TestLimitsZeroSelectsDefaults(t *testing.T) {
	got, err := ResourceLimits{}.resolve()
	if err != nil || got != DefaultResourceLimits() {
		t.Fatalf("zero limits = %+v, %v", got, err)
	}
	r := newRig(t).resources()
	if r.Limits() != DefaultResourceLimits() {
		t.Fatal("Resources without options does not use the defaults")
	}
}

func TestLimitsNegativeValuesFail(t *testing.T) {
	v := reflect.ValueOf(&ResourceLimits{}).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		t.Run(name, func(t *testing.T) {
			var l ResourceLimits
			reflect.ValueOf(&l).Elem().Field(i).SetInt(-1)
			err := newWithLimits(t, l)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Path.Field != name {
				t.Fatalf("negative %s: %v", name, err)
			}
		})
	}
}

func TestRaisingOneLimitNeverRaisesAnother(t *testing.T) {
	def := DefaultResourceLimits()
	v := reflect.ValueOf(&ResourceLimits{}).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		t.Run(name, func(t *testing.T) {
			var l ResourceLimits
			f := reflect.ValueOf(&l).Elem().Field(i)
			f.SetInt(reflect.ValueOf(def).Field(i).Int() * 2)
			got, err := l.resolve()
			if err != nil {
				return // raising it alone broke a rule: it was not silently compensated
			}
			for j := range v.NumField() {
				if j != i && reflect.ValueOf(got).Field(j).Int() != reflect.ValueOf(def).Field(j).Int() {
					t.Fatalf("raising %s changed %s", name, v.Type().Field(j).Name)
				}
			}
		})
	}
	// Raising the diagnostic reserve past the aggregate fails rather than
	// raising the aggregate.
	if err := newWithLimits(t, ResourceLimits{ReportPayloadBytes: 9 << 20}); err == nil {
		t.Fatal("aggregate was raised to fit a larger report reserve")
	}
}

func TestLimitValidationBoundaries(t *testing.T) {
	cases := []struct {
		name     string
		atLimit  ResourceLimits
		overEdge ResourceLimits
		field    string
	}{
		{"URI limit fits the 51-byte warning identity", ResourceLimits{MaxURIBytes: 51}, ResourceLimits{MaxURIBytes: 50}, "MaxURIBytes"},
		{"report payload at least 256", ResourceLimits{ReportPayloadBytes: 256}, ResourceLimits{ReportPayloadBytes: 255}, "ReportPayloadBytes"},
		{"report encoded at least 1 KiB", ResourceLimits{ReportEncodedBytes: 1024}, ResourceLimits{ReportEncodedBytes: 1023}, "ReportEncodedBytes"},
		{"aggregate payload exceeds the report reserve",
			ResourceLimits{ReportPayloadBytes: 256, MaxResponseBytes: 257}, ResourceLimits{ReportPayloadBytes: 256, MaxResponseBytes: 256}, "MaxResponseBytes"},
		{"aggregate encoded fits report, wire reserve and overhead",
			ResourceLimits{ReportEncodedBytes: 1024, MaxResponseEncodedBytes: 1024 + 8192 + 256},
			ResourceLimits{ReportEncodedBytes: 1024, MaxResponseEncodedBytes: 1024 + 8192 + 255}, "MaxResponseEncodedBytes"},
		{"page budget leaves 256 bytes of envelope and 256 for a description",
			ResourceLimits{ListPageBytes: 8192 + 256 + 256}, ResourceLimits{ListPageBytes: 8192 + 256 + 255}, "ListPageBytes"},
		{"default page size not above its maximum",
			ResourceLimits{ListPageSize: 10, MaxListPageSize: 10}, ResourceLimits{ListPageSize: 11, MaxListPageSize: 10}, "ListPageSize"},
		{"default page size checked against a lowered maximum", ResourceLimits{MaxListPageSize: 100}, ResourceLimits{MaxListPageSize: 99}, "ListPageSize"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := newWithLimits(t, c.atLimit); err != nil {
				t.Fatalf("exactly at the limit: %v", err)
			}
			err := newWithLimits(t, c.overEdge)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Path.Field != c.field {
				t.Fatalf("one over the edge: %v", err)
			}
		})
	}
}

func TestFixedBoundsOnDefinitionsAndMetadata(t *testing.T) {
	g := newRig(t)
	bind := func(d ResourceDefinition) error {
		b := g.binding()
		b.Definition = d
		_, err := NewResources([]ResourceBinding{b}, g.policy())
		return err
	}
	meta := func(n int) json.RawMessage { // a JSON object of exactly n bytes
		return json.RawMessage(`{"k":"` + strings.Repeat("m", n-8) + `"}`)
	}
	if err := bind(ResourceDefinition{URI: "test://m", Name: "m", Meta: meta(maxMetaBytes - 100)}); err != nil {
		t.Fatalf("metadata under 64 KiB: %v", err)
	}
	if err := bind(ResourceDefinition{URI: "test://m", Name: "m", Meta: meta(maxMetaBytes + 1)}); err == nil {
		t.Fatal("metadata over 64 KiB accepted")
	}
	long := strings.Repeat("d", maxDefinitionBytes)
	if err := bind(ResourceDefinition{URI: "test://m", Name: "m", Description: long}); err == nil {
		t.Fatal("definition over 64 KiB accepted")
	}
	if err := bind(ResourceDefinition{URI: "test://m", Name: "m", Meta: json.RawMessage(`[1]`)}); err == nil {
		t.Fatal("non-object metadata accepted")
	}
}

func TestNewResourcesRequiresEveryCallback(t *testing.T) {
	g := newRig(t)
	pol := g.policy()
	ok := func(context.Context, ResourceTarget) error { return nil }
	vis := func(context.Context, ResourceTarget) (Visibility, error) { return Visibility{Visible: true}, nil }
	for name, p := range map[string]ResourcePolicy{
		"Discover":   {Decide: pol.Decide},
		"Decide":     {Discover: pol.Discover},
		"Visibility": PerTarget(TargetPolicy{Discover: pol.Discover, Read: ok}),
		"Read":       PerTarget(TargetPolicy{Discover: pol.Discover, Visibility: vis}),
	} {
		if _, err := NewResources(nil, p); err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("missing policy %s: %v", name, err)
		}
	}
	b := g.binding()
	b.Reader = nil
	if _, err := NewResources([]ResourceBinding{b}, pol); err == nil || !strings.Contains(err.Error(), "Reader") {
		t.Fatalf("missing Reader: %v", err)
	}
	b = g.binding()
	b.Resolver = nil
	if _, err := NewResources([]ResourceBinding{b}, pol); err == nil || !strings.Contains(err.Error(), "Resolver") {
		t.Fatalf("missing Resolver: %v", err)
	}
}

func TestNewResourcesCopiesWhatItIsGiven(t *testing.T) {
	g := newRig(t)
	b := g.binding()
	b.Definition.Meta = json.RawMessage(`{"a":1}`)
	bindings := []ResourceBinding{b}
	r, err := NewResources(bindings, g.policy())
	if err != nil {
		t.Fatal(err)
	}
	bindings[0].Definition.URI = "test://changed"
	b.Definition.Meta[2] = 'X'
	var seen ResourceDefinition
	r.policy.Discover = func(ctx context.Context, d ResourceDefinition) error { seen = d; return nil }
	_, _ = r.Read(context.Background(), bundleURI)
	if seen.URI != bundleURI || string(seen.Meta) != `{"a":1}` {
		t.Fatalf("definition changed after construction: %q %s", seen.URI, seen.Meta)
	}
}

// --- The request scope ---

func TestDirectAPICreatesAndClosesItsScope(t *testing.T) {
	g := newRig(t, "test://a")
	g.opts = []Option{WithResourceLimits(ResourceLimits{ReadTimeout: time.Hour})}
	var seen context.Context
	g.item("test://a").read = func(ctx context.Context, _ ResourceTarget) (ResourcePayload, error) {
		seen = ctx
		return TextPayload("text/plain", "a"), nil
	}
	start := time.Now()
	mustRead(t, g)
	dl, ok := seen.Deadline()
	if !ok || dl.Before(start.Add(9*time.Second)) || dl.After(time.Now().Add(time.Hour)) {
		t.Fatalf("reader deadline %v (ok %v)", dl, ok) // the item timeout (10 s) is the nearer bound
	}
	if seen.Err() == nil {
		t.Fatal("scope still open after Read returned")
	}
}

func TestScopeDeadlineIsShortenedByCallerDeadline(t *testing.T) {
	g := newRig(t, "test://a")
	var dl time.Time
	g.item("test://a").read = func(ctx context.Context, _ ResourceTarget) (ResourcePayload, error) {
		dl, _ = ctx.Deadline()
		return TextPayload("text/plain", "a"), nil
	}
	want := time.Now().Add(2 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), want)
	defer cancel()
	if _, err := g.readCtx(ctx); err != nil {
		t.Fatal(err)
	}
	if !dl.Equal(want) {
		t.Fatalf("reader deadline %v, want the caller's %v", dl, want)
	}
}

func TestDefinitionHasExactlyOneURIOrTemplate(t *testing.T) {
	g := newRig(t)
	for name, d := range map[string]ResourceDefinition{
		"neither": {Name: "n"},
		"both":    {URI: "test://a", URITemplate: "test://a/{id}", Name: "n"},
	} {
		b := g.binding()
		b.Definition = d
		_, err := NewResources([]ResourceBinding{b}, g.policy())
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Definition != 0 {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func TestNewResourcesOwnsNoGoroutine(t *testing.T) {
	// settle waits, within a bound, until every worker has exited (an
	// idle one exits workerIdle after its last job), then counts.
	settle := func() int {
		deadline := time.Now().Add(10 * workerIdle)
		for liveWorkers.Load() > 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if n := liveWorkers.Load(); n > 0 {
			t.Fatalf("%d workers still live after %v", n, 10*workerIdle)
		}
		return runtime.NumGoroutine()
	}
	before := settle()
	g := newRig(t, "test://a")
	r := g.resources()
	for range 20 {
		if _, err := r.Read(context.Background(), bundleURI); err != nil {
			t.Fatal(err)
		}
	}
	// A worker counts itself out just before its goroutine ends: wait,
	// within the same bound, for the count to come back. A goroutine the
	// Resources owned would never end.
	after := settle()
	for deadline := time.Now().Add(10 * workerIdle); after > before && time.Now().Before(deadline); after = runtime.NumGoroutine() {
		time.Sleep(time.Millisecond)
	}
	if after > before {
		t.Fatalf("goroutines: %d before, %d after construction and reads", before, after)
	}
}

func TestConfigErrorExposesTheURIRule(t *testing.T) {
	g := newRig(t)
	for _, d := range []ResourceDefinition{{URI: "no-scheme", Name: "n"}, {URITemplate: "a b://{x}", Name: "n"}} {
		b := g.binding()
		b.Definition = d
		_, err := NewResources([]ResourceBinding{b}, g.policy())
		var ue *uriError
		if !errors.As(err, &ue) {
			t.Fatalf("%+v: %v does not unwrap to a *uriError", d, err)
		}
	}
}
