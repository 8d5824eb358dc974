package mcpsdk

import (
	"context"
	"errors"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"go.phpboyscout.uk/mcp/resources/core"
)

// TracerName is the instrumentation scope name of the adapter's spans.
const TracerName = "go.phpboyscout.uk/mcp/resources/mcpsdk"

// Span and attribute names of the adapter's traces; the README lists them
// with their values.
const (
	// SpanPhasePrefix prefixes the name of a gateway phase's span:
	// "resources." followed by the phase's name ([core.Phase].Name).
	SpanPhasePrefix = "resources."

	AttrMethod          = "mcp.method.name"
	AttrProtocolVersion = "mcp.protocol.version"
	AttrOutcome         = "mcp.outcome" // "ok", "partial" or "error"
	AttrFailureKind     = "mcp.failure.kind"
	AttrErrorCode       = "rpc.jsonrpc.error_code"
	AttrResourceURI     = "mcp.resource.uri" // only with Tracing.RequestURI
	AttrPassStage       = "resources.pass.stage"
	AttrItemIndex       = "resources.item.index"
	AttrItemIssue       = "resources.item.issue"
	AttrPlanItems       = "resources.plan.items"
)

// Tracing configures the adapter's OpenTelemetry spans (see
// [Options.Tracing]): one span per MCP request the server receives and,
// for resources/read, one child span per gateway phase ([core.Phase]),
// under which the stores' spans nest. No attribute holds a principal,
// URI, token, capture or private cause unless RequestURI is set.
type Tracing struct {
	// Provider makes the tracer. Nil disables tracing.
	Provider trace.TracerProvider
	// RequestURI adds the request's resource URI to the request span as
	// [AttrResourceURI]. URIs can name private data: set it only for a
	// private deployment.
	RequestURI bool
}

// tracing is the adapter's tracing middleware and phase observer.
type tracing struct {
	tracer trace.Tracer
	uri    bool
}

func newTracing(t *Tracing) *tracing {
	if t == nil || t.Provider == nil {
		return nil
	}
	return &tracing{tracer: t.Provider.Tracer(TracerName), uri: t.RequestURI}
}

// traceContext reads W3C trace context from a request's _meta.
var traceContext = propagation.TraceContext{}

// middleware starts the request's span (see [tracing.parent]) and makes
// the gateway report its phases to it.
func (t *tracing) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		parent, opts := t.parent(ctx, req)
		name := safeMethod(method)
		attrs := []attribute.KeyValue{attribute.String(AttrMethod, name)}
		if v := protocolVersion(req); v != "" {
			attrs = append(attrs, attribute.String(AttrProtocolVersion, v))
		}
		if p, ok := req.GetParams().(*mcp.ReadResourceParams); ok && p != nil && t.uri {
			attrs = append(attrs, attribute.String(AttrResourceURI, p.URI))
		}
		opts = append(opts, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		ctx, span := t.tracer.Start(parent, name, opts...)
		defer span.End()
		ro := &requestOutcome{}
		res, err := next(context.WithValue(core.WithObserver(ctx, t), outcomeKey{}, ro), method, req)
		if err != nil {
			span.SetAttributes(attribute.String(AttrOutcome, "error"))
			var je *jsonrpc.Error
			if errors.As(err, &je) {
				span.SetAttributes(attribute.Int64(AttrErrorCode, je.Code))
			}
			span.SetStatus(codes.Error, "")
		} else {
			outcome := "ok"
			if ro.partial {
				outcome = "partial"
			}
			span.SetAttributes(attribute.String(AttrOutcome, outcome))
		}
		return res, err
	}
}

// parent is the context a request's span starts under: the W3C trace
// context the client sent in the request's _meta (traceparent,
// tracestate); else, for a request that came over HTTP, the one in the
// headers of the HTTP request that carried it (see [TraceHTTP]: in a
// stateful session ctx is the session's, whose span belongs to another
// request); else the span ctx carries.
func (t *tracing) parent(ctx context.Context, req mcp.Request) (context.Context, []trace.SpanStartOption) {
	if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() { // a typed nil's GetMeta panics
		if m, ok := p.(interface{ GetMeta() map[string]any }); ok {
			meta := m.GetMeta()
			if tp, _ := meta["traceparent"].(string); tp != "" {
				c := propagation.MapCarrier{"traceparent": tp}
				if ts, _ := meta["tracestate"].(string); ts != "" {
					c["tracestate"] = ts
				}
				if sc := trace.SpanContextFromContext(traceContext.Extract(context.Background(), c)); sc.IsValid() {
					return trace.ContextWithRemoteSpanContext(ctx, sc), nil
				}
			}
		}
	}
	if x := req.GetExtra(); x != nil && x.Header != nil {
		if sc := trace.SpanContextFromContext(traceContext.Extract(context.Background(), propagation.HeaderCarrier(x.Header))); sc.IsValid() {
			return trace.ContextWithRemoteSpanContext(ctx, sc), nil
		}
	}
	return ctx, nil
}

// requestOutcome carries the gateway's outcome from [traceObservation] to
// the middleware that ends the request span.
type requestOutcome struct{ partial bool }

type outcomeKey struct{}

// traceObservation records the gateway's failure kind on the request span
// and whether a read was partial.
func traceObservation(ctx context.Context, o Observation) {
	var f *core.Failure
	if errors.As(o.Err, &f) {
		trace.SpanFromContext(ctx).SetAttributes(attribute.String(AttrFailureKind, f.Kind.String()))
	}
	if ro, ok := ctx.Value(outcomeKey{}).(*requestOutcome); ok && o.Err == nil && o.Result != nil {
		ro.partial = o.Result.Partial()
	}
}

// Start implements [core.Observer]: one span per phase.
func (t *tracing) Start(ctx context.Context, p core.Phase) (context.Context, func(core.Phase)) {
	attrs := make([]attribute.KeyValue, 0, 3)
	if p.Stage != 0 {
		attrs = append(attrs, attribute.String(AttrPassStage, p.Stage.String()))
	}
	if p.Item >= 0 {
		attrs = append(attrs, attribute.Int(AttrItemIndex, p.Item))
	}
	if p.Items > 0 {
		attrs = append(attrs, attribute.Int(AttrPlanItems, p.Items))
	}
	ctx, span := t.tracer.Start(ctx, SpanPhasePrefix+p.Name, trace.WithAttributes(attrs...))
	return ctx, func(e core.Phase) {
		if e.Name == "item" {
			issue := string(e.Issue)
			if issue == "" {
				issue = "none"
			}
			span.SetAttributes(attribute.String(AttrItemIssue, issue))
		}
		if e.Err != nil {
			kind := core.FailureCanceled.String()
			var f *core.Failure
			switch {
			case errors.As(e.Err, &f):
				kind = f.Kind.String()
			case errors.Is(e.Err, context.DeadlineExceeded):
				kind = core.FailureTimeout.String()
			}
			span.SetAttributes(attribute.String(AttrFailureKind, kind))
			span.SetStatus(codes.Error, "")
		}
		span.End()
	}
}
