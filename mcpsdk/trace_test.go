package mcpsdk

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/storetest"
)

// tracedClient serves r with tracing to a fresh in-memory exporter.
func tracedClient(t testing.TB, r *core.Resources, requestURI bool) (*mcp.ClientSession, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	s, _ := adapted(&mcp.Implementation{Name: "traced", Version: "v1"}, nil, r, &Options{Principal: func(context.Context, mcp.Request) string { return "principal-secret-1" },
		Tracing: &Tracing{Provider: tp, RequestURI: requestURI}})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	exp.Reset()
	return cs, exp
}

func spanNamed(spans tracetest.SpanStubs, name string) (tracetest.SpanStub, bool) {
	for _, s := range spans {
		if s.Name == name {
			return s, true
		}
	}
	return tracetest.SpanStub{}, false
}

func spanAttr(s tracetest.SpanStub, k string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == k {
			return a.Value.Emit()
		}
	}
	return ""
}

// TestTraceparentInMetaParentsTheRequestSpan proves that a client's W3C
// trace context in the request's _meta continues its trace: the request
// span is the child of the client's span, the phases are the request
// span's children, and the span names the method, the protocol version and
// the outcome without the URI or the principal.
func TestTraceparentInMetaParentsTheRequestSpan(t *testing.T) {
	r, err := core.NewResources([]core.ResourceBinding{selfBinding(core.ResourceDefinition{URI: "bench://doc", Name: "doc"})}, storetest.AllowAll())
	if err != nil {
		t.Fatal(err)
	}
	cs, exp := tracedClient(t, r, false)
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	params := &mcp.ReadResourceParams{URI: "bench://doc", Meta: mcp.Meta{"traceparent": "00-" + traceID + "-" + parentID + "-01"}}
	if _, err := cs.ReadResource(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	req, ok := spanNamed(spans, MethodReadResource)
	if !ok {
		t.Fatalf("no request span among %d", len(spans))
	}
	if req.SpanContext.TraceID().String() != traceID || req.Parent.SpanID().String() != parentID || !req.Parent.IsRemote() {
		t.Fatalf("request span in trace %s under %s: want the client's %s/%s", req.SpanContext.TraceID(), req.Parent.SpanID(), traceID, parentID)
	}
	if spanAttr(req, AttrOutcome) != "ok" || spanAttr(req, AttrMethod) != MethodReadResource || spanAttr(req, AttrProtocolVersion) == "" {
		t.Fatalf("request span attributes %v", req.Attributes)
	}
	for _, p := range []string{"selection", "discovery", "plan", "decide", "item", "recheck", "assembly"} {
		s, ok := spanNamed(spans, SpanPhasePrefix+p)
		if !ok || s.Parent.SpanID() != req.SpanContext.SpanID() {
			t.Errorf("phase %s: found %v, want a child of the request span", p, ok)
		}
	}
	item, _ := spanNamed(spans, SpanPhasePrefix+"item")
	if spanAttr(item, AttrItemIssue) != "none" || spanAttr(item, AttrItemIndex) != "0" {
		t.Errorf("item span attributes %v", item.Attributes)
	}
	raw, _ := json.Marshal(spans)
	for _, private := range []string{"bench://doc", "principal-secret-1"} {
		if strings.Contains(string(raw), private) {
			t.Errorf("the spans contain %q", private)
		}
	}
}

// TestFailedReadSpanHasItsKindAndTheURIOnlyByOption proves a failed
// read's span carries the outcome, the failure kind and the JSON-RPC code,
// and the request URI only with Tracing.RequestURI.
func TestFailedReadSpanHasItsKindAndTheURIOnlyByOption(t *testing.T) {
	r, err := core.NewResources([]core.ResourceBinding{selfBinding(core.ResourceDefinition{URI: "bench://doc", Name: "doc"})}, storetest.AllowAll())
	if err != nil {
		t.Fatal(err)
	}
	for _, withURI := range []bool{false, true} {
		cs, exp := tracedClient(t, r, withURI)
		if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "bench://missing"}); err == nil {
			t.Fatal("read of an unknown URI succeeded")
		}
		req, ok := spanNamed(exp.GetSpans(), MethodReadResource)
		if !ok {
			t.Fatal("no request span")
		}
		if spanAttr(req, AttrOutcome) != "error" || spanAttr(req, AttrFailureKind) != core.FailureUnavailable.String() || spanAttr(req, AttrErrorCode) == "" {
			t.Errorf("failed read span attributes %v", req.Attributes)
		}
		sel, _ := spanNamed(exp.GetSpans(), SpanPhasePrefix+"selection")
		if spanAttr(sel, AttrFailureKind) != core.FailureUnavailable.String() {
			t.Errorf("selection span attributes %v: want the failure kind", sel.Attributes)
		}
		if got := spanAttr(req, AttrResourceURI); (got == "bench://missing") != withURI {
			t.Errorf("RequestURI %v: span URI %q", withURI, got)
		}
	}
}

// BenchmarkReadTraced is BenchmarkReadExact's adapter read with tracing
// on, every request sampled, and a batching exporter that discards.
func BenchmarkReadTraced(b *testing.B) {
	const uri = "bench://doc"
	r, err := core.NewResources([]core.ResourceBinding{selfBinding(core.ResourceDefinition{URI: uri, Name: "doc", MIMEType: "text/plain"})}, storetest.AllowAll())
	if err != nil {
		b.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { tp.Shutdown(context.Background()) })
	s, _ := adapted(&mcp.Implementation{Name: "bench", Version: "v1"}, nil, r, &Options{Tracing: &Tracing{Provider: tp}})
	benchRead(b, benchClient(b, s), uri)
}

// TestTracingMiddlewareTakesARequestWithoutParams proves a request whose
// params are a typed nil (GetMeta would panic on it) gets its span and
// reaches the next handler.
func TestTracingMiddlewareTakesARequestWithoutParams(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := newTracing(&Tracing{Provider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))})
	called := false
	h := tr.middleware(func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		called = true
		return nil, nil
	})
	if _, err := h(context.Background(), MethodReadResource, &mcp.ServerRequest[*mcp.ReadResourceParams]{}); err != nil || !called {
		t.Fatalf("err %v, called %v", err, called)
	}
	if s, ok := spanNamed(exp.GetSpans(), MethodReadResource); !ok || spanAttr(s, AttrOutcome) != "ok" {
		t.Fatalf("spans %v", exp.GetSpans())
	}
}
