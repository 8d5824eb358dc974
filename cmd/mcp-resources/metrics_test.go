package main

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/live"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
	"go.phpboyscout.uk/mcp/resources/stores/memory"
)

// TestMetricsCountEachFailureKindApartWithAFixedVocabulary proves that the
// request counter's kind label names each failure kind on its own (a
// storage outage is not counted as an invalid plan or a policy failure),
// that an error without a kind is "internal", and that the store-call
// counter tells an outage from another error; no label carries a cause.
func TestMetricsCountEachFailureKindApartWithAFixedVocabulary(t *testing.T) {
	m := newMetrics()
	canary := errors.New("CANARY 10.1.2.3 secret")
	for _, err := range []error{
		core.NewFailure(core.FailureOutage, canary),
		core.NewFailure(core.FailureOutage, canary),
		core.NewFailure(core.FailureInvalidPlan, canary),
		core.NewFailure(core.FailurePolicy, canary),
		core.NewFailure(core.FailureNoItems, canary),
		core.NewFailure(core.FailureUnavailable, canary),
		canary,
	} {
		m.observe(context.Background(), mcpsdk.Observation{Method: mcpsdk.MethodReadResource, Duration: time.Millisecond, Err: err})
	}
	m.storeCall("postgres", "resolve", time.Now(), core.NewFailure(core.FailureOutage, canary))
	m.storeCall("postgres", "resolve", time.Now(), canary)
	m.storeCall("s3", "read", time.Now(), core.NewFailure(core.FailureUnavailable, canary))

	rec := httptest.NewRecorder()
	m.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	text := string(body)
	for _, want := range []string{
		`mcpres_requests_total{kind="storage outage",method="resources/read",outcome="failed"} 2`,
		`mcpres_requests_total{kind="invalid plan",method="resources/read",outcome="failed"} 1`,
		`mcpres_requests_total{kind="policy failure",method="resources/read",outcome="failed"} 1`,
		`mcpres_requests_total{kind="no item survived",method="resources/read",outcome="failed"} 1`,
		`mcpres_requests_total{kind="unavailable",method="resources/read",outcome="failed"} 1`,
		`mcpres_requests_total{kind="internal",method="resources/read",outcome="failed"} 1`,
		`mcpres_store_calls_total{op="resolve",outcome="outage",store="postgres"} 1`,
		`mcpres_store_calls_total{op="resolve",outcome="error",store="postgres"} 1`,
		`mcpres_store_calls_total{op="read",outcome="unavailable",store="s3"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(text, "CANARY") || strings.Contains(text, "FailureKind(") {
		t.Errorf("a label carries a cause or an unnamed kind")
	}
}

// TestInstrumentKeepsAndTimesTheBindingsCompletion proves that the metrics
// wrapper keeps a binding's completion (the values a store offers still
// reach the caller through the gateway) and counts each completion as a
// store call, while a binding without completion stays without it.
func TestInstrumentKeepsAndTimesTheBindingsCompletion(t *testing.T) {
	st := memory.New(nil)
	for _, key := range []string{"note/alpha", "note/beta"} {
		if _, err := st.Put(key, memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		st.Grant(key, "alice", memory.Access{Read: true})
	}
	completing := st.KeyBinding(core.ResourceDefinition{URITemplate: "mem://notes/{id}", Name: "notes"}, "id", "note/")
	plain := st.Binding(core.ResourceDefinition{URITemplate: "mem://plain/{id}", Name: "plain"}, func(m core.ResourceMatch) ([]memory.Ref, error) {
		return []memory.Ref{{URI: m.URI(), Key: "note/alpha"}}, nil
	})
	m := newMetrics()
	bs := m.instrument([]core.ResourceBinding{completing, plain}, func(int) string { return "memory" })
	if bs[0].Complete == nil || bs[1].Complete != nil {
		t.Fatalf("completions after instrument: %v, %v; want the first kept and the second still nil", bs[0].Complete != nil, bs[1].Complete != nil)
	}
	res, err := core.NewResources(bs, st.Policy())
	if err != nil {
		t.Fatal(err)
	}
	ctx := core.WithCaller(context.Background(), core.Caller{Principal: "alice"})
	c, err := res.Complete(ctx, "mem://notes/{id}", "id", "al", nil)
	if err != nil || strings.Join(c.Values, ",") != "alpha" {
		t.Fatalf("completion through the wrapper = %q, %v; want [alpha]", c.Values, err)
	}
	rec := httptest.NewRecorder()
	m.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if want := `mcpres_store_calls_total{op="complete",outcome="ok",store="memory"} 1`; !strings.Contains(string(body), want) {
		t.Errorf("metrics lack %s", want)
	}
}

// batchReader is a native batch reader that answers every item of a
// request with its body and the decision its storage took with it, for
// the policy the request names.
type batchReader struct{ requests int }

func (b *batchReader) Read(_ context.Context, req core.ReadRequest) ([]core.ReadResult, error) {
	b.requests++
	out := make([]core.ReadResult, len(req.Items))
	for i, it := range req.Items {
		out[i] = core.ReadResult{
			Payload:  core.TextPayload("text/plain", "body of "+it.Target.URI()),
			Decision: &core.TargetDecision{Visibility: core.Visibility{Visible: true}, Read: true, Policy: req.Policy},
		}
	}
	if len(req.Items) > 1 {
		out[1].Err = core.NewFailure(core.FailureUnavailable, errors.New("CANARY"))
	}
	return out, nil
}

// TestInstrumentKeepsANativeBatchOneStoreCall proves that the metrics
// wrapper hands a native batch reader the gateway's request whole (one
// store call counted, with the outcome of its first failing item) and its
// Decisions back (the recheck asks the policy about the bundle alone),
// while an item-by-item reader is still counted once per item.
func TestInstrumentKeepsANativeBatchOneStoreCall(t *testing.T) {
	plan := core.ResolverFunc(func(_ context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
		req, _ := core.NewResourceTarget(m.URI(), "bundle", nil)
		var items []core.ResourceTarget
		for _, u := range []string{"test://a", "test://b", "test://c"} {
			it, _ := core.NewResourceTarget(u, "item", nil)
			items = append(items, it)
		}
		return core.NewResourceReadPlan(req, items...)
	})
	batch := &batchReader{}
	var itemReads int
	items := core.ItemReader(func(_ context.Context, it core.ReadItem) (core.ResourcePayload, error) {
		itemReads++
		return core.TextPayload("text/plain", "x"), nil
	})
	var rechecked [][]string
	policy := core.ResourcePolicy{
		Key:      func(core.ResourceDefinition) any { return "the batch reader's" },
		Discover: func(context.Context, core.ResourceDefinition) error { return nil },
		Decide: func(_ context.Context, pass core.PolicyPass) ([]core.TargetDecision, error) {
			if pass.Stage == core.PassRecheck {
				var us []string
				for _, tg := range pass.Targets {
					us = append(us, tg.URI())
				}
				rechecked = append(rechecked, us)
			}
			ds := make([]core.TargetDecision, len(pass.Targets))
			for i := range ds {
				ds[i] = core.TargetDecision{Visibility: core.Visibility{Visible: true}, Read: true}
			}
			return ds, nil
		},
	}
	m := newMetrics()
	bs := m.instrument([]core.ResourceBinding{
		{Definition: core.ResourceDefinition{URI: "test://batch", Name: "batch"}, Resolver: plan, Reader: batch},
		{Definition: core.ResourceDefinition{URI: "test://items", Name: "items"}, Resolver: plan, Reader: items},
	}, func(i int) string { return []string{"postgres", "memory"}[i] })
	res, err := core.NewResources(bs, policy)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"test://batch", "test://items"} {
		if _, err := res.Read(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
	if batch.requests != 1 || itemReads != 3 {
		t.Fatalf("batch reader asked %d times, item reader %d; want 1 and 3", batch.requests, itemReads)
	}
	if len(rechecked) != 2 || strings.Join(rechecked[0], ",") != "test://batch" {
		t.Fatalf("recheck passes %v, want the batch's to ask about the bundle alone", rechecked)
	}
	rec := httptest.NewRecorder()
	m.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	text := string(body)
	for _, want := range []string{
		`mcpres_store_calls_total{op="read",outcome="unavailable",store="postgres"} 1`,
		`mcpres_store_calls_total{op="read",outcome="ok",store="memory"} 3`,
		`mcpres_store_call_duration_seconds_count{op="read",store="postgres"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(text, `op="read",outcome="ok",store="postgres"`) {
		t.Errorf("the batch was counted item by item")
	}
}

// TestHubMetricsOfOneScrapeComeFromOneSnapshot scrapes the hub's metrics
// while each snapshot differs from the last: every scrape shows the values
// of one snapshot (changes, pending and notifications agree), never a mix
// of two instants.
func TestHubMetricsOfOneScrapeComeFromOneSnapshot(t *testing.T) {
	var calls int64
	m := newMetrics()
	m.reg.MustRegister(newHubCollector(func() live.Stats {
		calls++ // the registry gathers collectors concurrently; this one is called once a scrape
		n := calls
		return live.Stats{Subscriptions: int(n), Sessions: int(n), Pending: int(n), Changes: n, Notified: n}
	}))
	for scrape := int64(1); scrape <= 5; scrape++ {
		families, err := m.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, f := range families {
			switch f.GetName() {
			case "mcpres_subscriptions_active", "mcpres_subscribers_active", "mcpres_live_changes_total",
				"mcpres_live_checks_pending", "mcpres_live_notifications_total":
				seen++
				mm := f.GetMetric()[0]
				v := mm.GetGauge().GetValue() + mm.GetCounter().GetValue()
				if int64(v) != scrape {
					t.Errorf("scrape %d: %s = %v, want %d (one snapshot a scrape)", scrape, f.GetName(), v, scrape)
				}
			}
		}
		if seen != 5 {
			t.Fatalf("scrape %d: %d of the hub's 5 metrics", scrape, seen)
		}
	}
}

// allResolver plans one item per match, and counts its Resolve and
// ResolveAll calls.
type allResolver struct{ resolves, alls int }

func (r *allResolver) Resolve(_ context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
	r.resolves++
	it, err := core.NewResourceTarget(m.URI(), "item", nil)
	if err != nil {
		return core.ResourceReadPlan{}, err
	}
	return core.NewResourceReadPlan(it, it)
}

func (r *allResolver) ResolveAll(ctx context.Context, ms []core.ResourceMatch) ([]core.ResourceReadPlan, []error) {
	r.alls++
	plans, errs := make([]core.ResourceReadPlan, len(ms)), make([]error, len(ms))
	for i, m := range ms {
		it, err := core.NewResourceTarget(m.URI(), "item", nil)
		if err == nil {
			plans[i], err = core.NewResourceReadPlan(it, it)
		}
		errs[i] = err
	}
	return plans, errs
}

// TestInstrumentKeepsTheBatchPlan proves that the metrics wrapper keeps a
// resolver's ResolveAll: a session's recheck of several subscriptions
// (AuthorizeAll) plans them in one store call through the wrapper, as it
// does without it, and that call is counted once.
func TestInstrumentKeepsTheBatchPlan(t *testing.T) {
	r := &allResolver{}
	allow := core.ResourcePolicy{
		Discover: func(context.Context, core.ResourceDefinition) error { return nil },
		Decide: func(_ context.Context, pass core.PolicyPass) ([]core.TargetDecision, error) {
			ds := make([]core.TargetDecision, len(pass.Targets))
			for i := range ds {
				ds[i] = core.TargetDecision{Visibility: core.Visibility{Visible: true}, Read: true}
			}
			return ds, nil
		},
	}
	m := newMetrics()
	bs := m.instrument([]core.ResourceBinding{{
		Definition: core.ResourceDefinition{URITemplate: "test://notes/{id}", Name: "notes"},
		Resolver:   r,
		Reader: core.ItemReader(func(context.Context, core.ReadItem) (core.ResourcePayload, error) {
			return core.TextPayload("text/plain", "x"), nil
		}),
	}}, func(int) string { return "postgres" })
	res, err := core.NewResources(bs, allow)
	if err != nil {
		t.Fatal(err)
	}
	ctx := core.WithCaller(context.Background(), core.Caller{Principal: "alice"})
	_, errs := res.AuthorizeAll(ctx, []string{"test://notes/a", "test://notes/b", "test://notes/c"})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("uri %d: %v", i, err)
		}
	}
	if r.alls != 1 || r.resolves != 0 {
		t.Fatalf("through the wrapper: %d ResolveAll and %d Resolve calls, want 1 and 0", r.alls, r.resolves)
	}
	rec := httptest.NewRecorder()
	m.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if want := `mcpres_store_calls_total{op="resolve",outcome="ok",store="postgres"} 1`; !strings.Contains(string(body), want) {
		t.Errorf("metrics lack %s", want)
	}
}
