package integration

import (
	"bytes"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP trace endpoint that keeps what it decodes
// and the raw bodies.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	raw   [][]byte
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := &coltrace.ExportTraceServiceRequest{}
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, req) != nil {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	o.raw = append(o.raw, body)
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// TestServerExportsOneTracePerReadToAnOTLPEndpoint proves the command's
// wiring: with OTEL_EXPORTER_OTLP_ENDPOINT set, the reference server on
// real PostgreSQL and S3 exports bob's partial handbook bundle as one
// trace, the HTTP span over the MCP request span over the gateway phases,
// Postgres batches under the phases, the unavailable salaries item among
// the item spans, and no principal, token, URI or capture in the export.
func TestServerExportsOneTracePerReadToAnOTLPEndpoint(t *testing.T) {
	recv := &otlpReceiver{}
	ep := httptest.NewServer(recv)
	defer ep.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", ep.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_SERVICE_NAME", "mcpres-integration")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	_, _, flags := migratedAndSeeded(t)
	srv := startServer(t, append(flags, "--tokens="+tokensFile(t, "alice", "bob"))...)
	bob := srv.connect(t, "bob-token")
	const hb = "asset://project/handbook"
	r, err := readAll(t, bob, hb)
	if err != nil || !strings.HasPrefix(r.Contents[0].URI, "mcp-warning:") {
		t.Fatalf("bob's handbook bundle: %v, want a partial result", err)
	}
	bob.Close()
	if err := srv.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-srv.done:
		srv.done <- err
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop on SIGINT")
	}

	recv.mu.Lock()
	defer recv.mu.Unlock()
	byID := map[string]*tracepb.Span{}
	var read *tracepb.Span
	for _, s := range recv.spans {
		byID[hex.EncodeToString(s.SpanId)] = s
		if s.Name == "resources/read" {
			read = s
		}
	}
	if read == nil {
		t.Fatalf("no resources/read span among %d exported", len(recv.spans))
	}
	if p := byID[hex.EncodeToString(read.ParentSpanId)]; p == nil || p.Name != "HTTP POST" {
		t.Fatalf("the request span's parent is %v: want the HTTP span", p)
	}
	count := map[string]int{}
	var issues []string
	planned := 0
	for _, s := range recv.spans {
		if !bytes.Equal(s.TraceId, read.TraceId) {
			continue
		}
		count[s.Name]++
		parent := byID[hex.EncodeToString(s.ParentSpanId)]
		switch {
		case strings.HasPrefix(s.Name, "resources.") && parent != read:
			t.Errorf("phase %s is not a child of the request span", s.Name)
		case strings.HasPrefix(s.Name, "postgres.") && (parent == nil || !strings.HasPrefix(parent.Name, "resources.")):
			t.Errorf("%s is not under a gateway phase", s.Name)
		case strings.HasPrefix(s.Name, "s3.") && (parent == nil || parent.Name != "resources.item"):
			t.Errorf("%s is not under an item", s.Name)
		}
		for _, a := range s.Attributes {
			switch {
			case s.Name == "resources.item" && a.Key == "resources.item.issue":
				issues = append(issues, a.GetValue().GetStringValue())
			case s.Name == "resources.decide" && a.Key == "resources.plan.items":
				planned = int(a.GetValue().GetIntValue())
			}
		}
	}
	for _, n := range []string{"HTTP POST", "resources.plan", "resources.decide", "resources.recheck", "resources.assembly", "postgres.batch"} {
		if count[n] == 0 {
			t.Errorf("the read's trace has no %s span: %v", n, count)
		}
	}
	if count["HTTP POST"] != 1 || count["resources/read"] != 1 || count["initialize"] != 0 {
		t.Errorf("the read's trace %v: want its own HTTP request and the read only", count)
	}
	// Salaries is planned but denied before any read: it has no item span
	// (its issue is in the report); the four read items were admitted.
	if planned != 5 || strings.Join(issues, ",") != "none,none,none,none" {
		t.Errorf("%d planned, item issues %v: want five planned and four read and admitted", planned, issues)
	}
	for _, body := range recv.raw {
		for _, private := range []string{"bob", "handbook", "salaries", "asset://", "Bearer"} {
			if bytes.Contains(body, []byte(private)) {
				t.Errorf("the export contains %q", private)
			}
		}
	}
	t.Logf("the read's trace: %v", count)
}
