package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"go.phpboyscout.uk/mcp/resources/mcpsdk"
)

// traceURIEnv, set to "true", adds the request URI to each resources/read
// span (mcpsdk.Tracing.RequestURI): for private deployments only.
const traceURIEnv = "MCPRES_TRACE_REQUEST_URI"

// tracingOn is the provider startTracing installed, or nil: tracing off.
var tracingOn atomic.Pointer[sdktrace.TracerProvider]

// tracingWanted reports whether the OTEL_* environment asks for traces: an
// OTLP endpoint or OTEL_TRACES_EXPORTER=otlp, unless OTEL_SDK_DISABLED is
// true or OTEL_TRACES_EXPORTER is none.
func tracingWanted() bool {
	exp := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))
	switch {
	case strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true"), exp == "none":
		return false
	case exp == "otlp":
		return true
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// startTracing configures the OpenTelemetry SDK from the standard OTEL_*
// variables when [tracingWanted]: the OTLP exporter per
// OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL ("http/protobuf", the default, or
// "grpc"; endpoint, headers, timeout and TLS from the exporter's own
// variables), the sampler from OTEL_TRACES_SAMPLER(_ARG), the resource from
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (service name
// "mcp-resources" by default), and W3C trace context as the propagator.
// The returned function flushes and stops the SDK; it is a no-op when
// tracing is off.
func startTracing(ctx context.Context) (stop func(), err error) {
	if !tracingWanted() {
		return func() {}, nil
	}
	proto := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp sdktrace.SpanExporter
	switch proto {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q is not supported: use http/protobuf or grpc", proto)
	}
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "mcp-resources")),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	tracingOn.Store(tp)
	return func() {
		tracingOn.CompareAndSwap(tp, nil)
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(sctx)
	}, nil
}

// tracerProvider is the provider the stores and the adapter record to, or
// nil when tracing is off.
func tracerProvider() trace.TracerProvider {
	if tp := tracingOn.Load(); tp != nil {
		return tp
	}
	return nil
}

// tracingOptions is the adapter's tracing configuration, nil when off.
func tracingOptions() *mcpsdk.Tracing {
	tp := tracerProvider()
	if tp == nil {
		return nil
	}
	return &mcpsdk.Tracing{Provider: tp, RequestURI: os.Getenv(traceURIEnv) == "true"}
}

// traceHTTP wraps h in [mcpsdk.TraceHTTP]; h unchanged when tracing is
// off.
func traceHTTP(h http.Handler) http.Handler {
	tp := tracerProvider()
	if tp == nil {
		return h
	}
	return mcpsdk.TraceHTTP(h, tp)
}
