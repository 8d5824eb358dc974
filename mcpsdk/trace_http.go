package mcpsdk

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TraceHTTP wraps the MCP HTTP handler h so that each HTTP request is a
// server span named "HTTP" and the method, continuing the W3C trace
// context of the request's headers, which it then replaces with its own:
// the request span of [Tracing] finds its parent there, because in a
// stateful session the SDK runs a request under the session's context, not
// the HTTP request's. The span holds the method and the status only: a
// client's address and user agent can identify a principal, and the path
// and query could hold anything.
func TraceHTTP(h http.Handler, tp trace.TracerProvider) http.Handler {
	tracer := tp.Tracer(TracerName)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		method := r.Method
		switch method {
		case http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodOptions, http.MethodHead:
		default:
			method = "other"
		}
		ctx, span := tracer.Start(ctx, "HTTP "+method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", method)))
		defer span.End()
		// The MCP request span finds its parent in the headers the SDK
		// hands it (a stateful session's context is not this request's).
		r = r.WithContext(ctx)
		r.Header = r.Header.Clone()
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(r.Header))
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, "")
		}
	})
}

// statusWriter remembers the status a handler wrote; Unwrap keeps
// http.ResponseController (flushes, deadlines for SSE) working.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
