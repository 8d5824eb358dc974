package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"

	wirefmt "go.phpboyscout.uk/mcp/resources/internal/wire"
)

// bearerTransport sends a token with every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestTracedPartialReadIsOneNestedTraceWithoutPrivateValues proves issue
// 27's trace: a partial bundle read over stateful streamable HTTP (the
// SDK runs it under the session's context), against the real
// PostgreSQL and S3 servers, is one trace: the HTTP span, the MCP request
// span under it, the gateway phases under that, the item spans with their
// issue codes, and the Postgres batches and S3 GETs under the plan,
// decision and item spans. The serialized spans hold no principal, URI,
// token, object key or capture.
func TestTracedPartialReadIsOneNestedTraceWithoutPrivateValues(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(t.Context())

	const principal, project, asset, token = "alice-principal-7f3", "proj-capture-91", "asset-capture-42", "tok-secret-5521"
	const key = "docs/object-key-3310.txt"
	d := newPGDB(t)
	j := &joinRig{d: d, wire: &wire{}}
	j.env = harness.S3(t)
	j.client = s3Client(t, j.env, j.wire, s3store.WithTracing(tp))
	bucket, err := s3store.OpenBucket(t.Context(), j.client, j.env.Bucket, nil)
	if err != nil {
		t.Fatal(err)
	}
	pool := newPool(t, d.url, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = postgres.NewTracer(tp) })
	st := newStore(t, pool, &refOptions{Objects: bucket})
	res := pgGateway(t, st.Bindings(), st.Policy(), objectsOf(bucket))
	d.project(t, project)
	obj := putObject(t, j.client, j.env.Bucket, key, "text/plain", []byte("first words"))
	d.exec(t, `INSERT INTO mcpres.assets (project_id, id, name, title, mime_type,
			object_bucket, object_key, object_etag, object_version_id, object_size)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, $9)`,
		project, asset, key, "Asset", "text/plain", obj.Bucket, obj.Key, obj.ETag, obj.Size)
	d.grant(t, principal, project, "")
	j.overwrite(t, key, "text/plain", []byte("SECOND WORDS")) // the pinned ETag now fails: a partial read

	a := mcpsdk.New(res, &mcpsdk.Options{
		Principal: func(ctx context.Context, req mcp.Request) string { return principal },
		Tracing:   &mcpsdk.Tracing{Provider: tp},
	})
	server := a.NewServer(&mcp.Implementation{Name: "traced"}, nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	srv := httptest.NewServer(mcpsdk.TraceHTTP(h, tp))
	defer srv.Close()

	client := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL,
		HTTPClient: &http.Client{Transport: bearerTransport{token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	exp.Reset()
	uri := "asset://project/" + project + "/asset/" + asset
	out, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if len(out.Contents) < 2 || !strings.HasPrefix(out.Contents[0].Text, wirefmt.WarningPrefix) {
		t.Fatalf("read returned %d contents: want the warning first (partial)", len(out.Contents))
	}
	tp.ForceFlush(t.Context())
	spans := exp.GetSpans()

	// The read is one trace. The client's own other HTTP requests (the
	// session's standalone SSE GET, the initialized notification's POST,
	// which may still be in flight after Connect) are traces of their own,
	// holding only HTTP and notification spans; every other span belongs to
	// the read's trace.
	byID := map[string]tracetest.SpanStub{}
	readTrace := ""
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
		if s.Name == mcpsdk.MethodReadResource {
			if readTrace != "" {
				t.Fatalf("two %s spans: want one for the one read", s.Name)
			}
			readTrace = s.SpanContext.TraceID().String()
		}
	}
	if readTrace == "" {
		t.Fatalf("no %s span among %d spans", mcpsdk.MethodReadResource, len(spans))
	}
	all := spans
	spans = nil
	for _, s := range all {
		switch {
		case s.SpanContext.TraceID().String() == readTrace:
			spans = append(spans, s)
		case !strings.HasPrefix(s.Name, "HTTP ") && !strings.HasPrefix(s.Name, "notifications/"):
			t.Errorf("span %s is outside the read's trace: want one trace for the read", s.Name)
		}
	}
	parentName := func(s tracetest.SpanStub) string {
		if p, ok := byID[s.Parent.SpanID().String()]; ok {
			return p.Name
		}
		return ""
	}
	attr := func(s tracetest.SpanStub, k string) string {
		for _, a := range s.Attributes {
			if string(a.Key) == k {
				return a.Value.Emit()
			}
		}
		return ""
	}
	count := map[string]int{}
	var issues []string
	for _, s := range spans {
		count[s.Name]++
		p := parentName(s)
		switch {
		case s.Name == mcpsdk.MethodReadResource:
			if p != "HTTP POST" || attr(s, mcpsdk.AttrOutcome) != "partial" || attr(s, mcpsdk.AttrMethod) != mcpsdk.MethodReadResource {
				t.Errorf("request span under %q, outcome %q", p, attr(s, mcpsdk.AttrOutcome))
			}
		case strings.HasPrefix(s.Name, mcpsdk.SpanPhasePrefix):
			if p != mcpsdk.MethodReadResource {
				t.Errorf("phase span %s under %q: want the request span", s.Name, p)
			}
			if s.Name == "resources.item" {
				issues = append(issues, attr(s, mcpsdk.AttrItemIssue))
			}
		case s.Name == postgres.SpanBatch || s.Name == postgres.SpanQuery:
			if !strings.HasPrefix(p, mcpsdk.SpanPhasePrefix) {
				t.Errorf("%s under %q: want a gateway phase", s.Name, p)
			}
		case s.Name == s3store.SpanPrefix+"GetObject":
			if p != "resources.item" {
				t.Errorf("S3 GET under %q: want an item span", p)
			}
		}
	}
	for _, n := range []string{"HTTP POST", mcpsdk.MethodReadResource, "resources.selection", "resources.discovery", "resources.plan",
		"resources.decide", "resources.recheck", "resources.assembly", postgres.SpanBatch, s3store.SpanPrefix + "GetObject"} {
		if count[n] == 0 {
			t.Errorf("no %q span among %v", n, count)
		}
	}
	if strings.Join(issues, ",") != "none,"+string(core.IssueReadFailed) {
		t.Errorf("item issues %v: want the fields admitted and the object read_failed", issues)
	}
	raw, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	for _, private := range []string{principal, project, asset, token, key, uri, obj.ETag, "SELECT", j.env.Bucket} {
		if strings.Contains(string(raw), private) {
			t.Errorf("the exported spans contain %q", private)
		}
	}
	t.Logf("%d spans: %v", len(spans), count)
}
