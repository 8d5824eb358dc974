package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// TestOTLPHTTPEndpointReceivesTheSpans proves the command's tracing setup:
// with OTEL_EXPORTER_OTLP_ENDPOINT set, an HTTP request carrying a W3C
// traceparent header becomes a span in the client's trace, exported over
// OTLP/HTTP protobuf to the endpoint under OTEL_SERVICE_NAME, and stopping
// flushes it.
func TestOTLPHTTPEndpointReceivesTheSpans(t *testing.T) {
	var mu sync.Mutex
	var got []*coltrace.ExportTraceServiceRequest
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := &coltrace.ExportTraceServiceRequest{}
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Write(out)
	}))
	defer recv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_SERVICE_NAME", "mcpres-under-test")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")

	stop, err := startTracing(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if tracingOptions() == nil {
		t.Fatal("tracing is off with an OTLP endpoint set")
	}
	h := traceHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	r := httptest.NewRequest("POST", "/mcp?secret-query=1", nil)
	r.Header.Set("User-Agent", "agent-secret")
	r.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	h.ServeHTTP(httptest.NewRecorder(), r)
	stop()
	if tracerProvider() != nil {
		t.Fatal("tracing is still on after stop")
	}

	mu.Lock()
	defer mu.Unlock()
	var names []string
	for _, req := range got {
		for _, rs := range req.ResourceSpans {
			service := ""
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					if service != "mcpres-under-test" {
						t.Errorf("span %s from service %q", s.Name, service)
					}
					if hexID := fmtHex(s.TraceId); hexID != traceID {
						t.Errorf("span %s in trace %s: want the header's %s", s.Name, hexID, traceID)
					}
					for _, a := range s.Attributes {
						if a.Key != "http.request.method" && a.Key != "http.response.status_code" {
							t.Errorf("span %s has attribute %s: want the method and status only", s.Name, a.Key)
						}
					}
					names = append(names, s.Name)
				}
			}
		}
	}
	if len(names) != 1 || names[0] != "HTTP POST" {
		t.Fatalf("the endpoint received spans %v: want the one HTTP span", names)
	}
}

func fmtHex(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// TestTracingIsOffWithoutOTELVariables proves tracing stays off, changing
// nothing, when no OTEL_* variable asks for it, and when the SDK is
// disabled even with an endpoint.
func TestTracingIsOffWithoutOTELVariables(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"},
	} {
		for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER"} {
			t.Setenv(k, env[k])
		}
		stop, err := startTracing(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		h := http.NewServeMux()
		if tracingOptions() != nil || tracerProvider() != nil || traceHTTP(h) != http.Handler(h) {
			t.Errorf("env %v: tracing is on", env)
		}
		stop()
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	if _, err := startTracing(context.Background()); err == nil {
		t.Error("an unsupported OTLP protocol was accepted")
	}
}

// grpcTraces is an OTLP/gRPC trace service that keeps the span names.
type grpcTraces struct {
	coltrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	names []string
}

func (g *grpcTraces) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				g.names = append(g.names, s.Name)
			}
		}
	}
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// TestOTLPGRPCEndpointReceivesTheSpans proves OTEL_EXPORTER_OTLP_PROTOCOL
// =grpc selects the gRPC exporter: a loopback gRPC trace service gets the
// HTTP span.
func TestOTLPGRPCEndpointReceivesTheSpans(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	svc := &grpcTraces{}
	coltrace.RegisterTraceServiceServer(gs, svc)
	go gs.Serve(ln)
	defer gs.Stop()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	stop, err := startTracing(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	traceHTTP(http.NotFoundHandler()).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/mcp", nil))
	stop()
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if len(svc.names) != 1 || svc.names[0] != "HTTP GET" {
		t.Fatalf("the gRPC endpoint received %v: want the one HTTP span", svc.names)
	}
}
