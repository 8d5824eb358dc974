package mcpsdk

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/live"
)

// recordingAuditor keeps every event; with refuse set it accepts none.
type recordingAuditor struct {
	mu     sync.Mutex
	events []*AuditEvent
	refuse bool
}

func (r *recordingAuditor) Audit(_ context.Context, e *AuditEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	if r.refuse {
		return errors.New("sink down")
	}
	return nil
}

func (r *recordingAuditor) all() []*AuditEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*AuditEvent(nil), r.events...)
}

// objectResources is a gateway with one object item pinned by ETag and
// version id, beside the test host's bindings.
func objectResources(t *testing.T) *core.Resources {
	t.Helper()
	obj := core.ResourceBinding{
		Definition: core.ResourceDefinition{URI: "obj://doc", Name: "doc"},
		Resolver: core.ResolverFunc(func(_ context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
			it, err := target(t, "obj://doc/file").WithVersion("row-3")
			if err != nil {
				return core.ResourceReadPlan{}, err
			}
			it, err = it.WithObject(core.ObjectRef{Source: "s3", Key: "k", ETag: `"e1"`, VersionID: "v7", Size: -1})
			if err != nil {
				return core.ResourceReadPlan{}, err
			}
			return core.NewResourceReadPlan(target(t, m.URI()), it)
		}),
		Reader: core.ItemReader(func(context.Context, core.ReadItem) (core.ResourcePayload, error) {
			return core.ResourcePayload{}, errors.New("unused")
		}),
	}
	// An object its row does not pin: the source reads the current one
	// and says which version it served.
	unpinned := obj
	unpinned.Definition = core.ResourceDefinition{URI: "obj://unpinned", Name: "unpinned"}
	unpinned.Resolver = core.ResolverFunc(func(_ context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
		it, err := target(t, "obj://unpinned/file").WithObject(core.ObjectRef{Source: "s3", Key: "u", Size: -1, Unpinned: true})
		if err != nil {
			return core.ResourceReadPlan{}, err
		}
		return core.NewResourceReadPlan(target(t, m.URI()), it)
	})
	h := &testHost{slow: make(chan struct{})}
	t.Cleanup(func() { close(h.slow) })
	r, err := core.NewResources(append(h.bindings(t), obj, unpinned), h.policy(),
		core.WithObjectSource("s3", core.ItemReader(func(_ context.Context, it core.ReadItem) (core.ResourcePayload, error) {
			p := core.BlobPayload("application/pdf", []byte("%PDF-secret-body"))
			if ref, _ := it.Target.Object(); ref.Key == "u" {
				p = p.WithObjectVersion(core.ObjectRef{ETag: `"served"`, VersionID: "v9"})
			}
			return p, nil
		})))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Every request that touches resources is audited once, with the items a
// read served (their pins, sizes and MIME types), the missing ones by
// code, the revision and the result, and never a body.
func TestAuditEventsRecordWhatWasServed(t *testing.T) {
	r := objectResources(t)
	aud := &recordingAuditor{}
	c := connect(t, newServer(r, &Options{Auditor: aud, Principal: func(context.Context, mcp.Request) string { return "alice" }}), inMemory, "", "")
	ctx := context.Background()
	if _, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://readme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "obj://doc"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "bundle://partial"}); err != nil {
		t.Fatal(err)
	}
	c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "secret://hidden"})
	c.cs.ListResources(ctx, nil)
	c.cs.Ping(ctx, nil)

	ev := aud.all()
	if len(ev) != 5 {
		t.Fatalf("%d events, want 5", len(ev))
	}
	for _, e := range ev {
		b, _ := json.Marshal(e)
		for _, body := range []string{"hello", "PDF-secret", "fine", "canary"} {
			if strings.Contains(string(b), body) {
				t.Errorf("event %s holds %q", b, body)
			}
		}
		if e.Principal != "alice" || e.Revision != r.Revision() || e.Client != "test-client/v0.0.1" || e.Transport != "stdio" || e.Time.IsZero() || e.Duration <= 0 {
			t.Errorf("event lacks its context: %s", b)
		}
	}
	if e := ev[0]; e.Method != MethodReadResource || e.URI != "notes://readme" || e.Result != "complete" ||
		len(e.Items) != 1 || e.Items[0] != (AuditItem{URI: "notes://readme", Size: 5, MIMEType: "text/plain"}) {
		t.Errorf("text read: %+v", e)
	}
	if e := ev[1]; len(e.Items) != 1 || e.Items[0] != (AuditItem{URI: "obj://doc/file", Version: "row-3", ETag: `"e1"`, VersionID: "v7", Size: 16, MIMEType: "application/pdf"}) {
		t.Errorf("object read: %+v", e.Items)
	}
	if e := ev[2]; e.Result != "partial" || len(e.Items) != 1 || e.Items[0].URI != "bundle://partial/ok" ||
		e.Missing["read_failed"]+e.Missing["unavailable"]+e.MissingUncounted != 3 {
		t.Errorf("partial read: %+v", e)
	}
	if e := ev[3]; e.Result != "error" || e.ErrorKind != core.FailureUnavailable.String() || len(e.Items) != 0 {
		t.Errorf("refused read: %+v", e)
	}
	if e := ev[4]; e.Method != MethodListResources || e.Result != "complete" {
		t.Errorf("list: %+v", e)
	}
}

// An auditor that does not accept an event refuses the request as a
// retryable outage, and the client gets nothing of the answer.
func TestAuditRefusalServesNothing(t *testing.T) {
	r := objectResources(t)
	aud := &recordingAuditor{refuse: true}
	c := connect(t, newServer(r, &Options{Auditor: aud, Tools: &ToolOptions{}}), inMemory, "", "")
	ctx := context.Background()
	res, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://readme"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInternalError || string(je.Data) != `{"retryable":true}` || res != nil {
		t.Fatalf("refused read answered %+v, %v", res, err)
	}
	tr, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_resource", Arguments: map[string]any{"uri": "notes://readme"}})
	if err != nil || !tr.IsError {
		t.Fatalf("refused tool read answered %+v, %v", tr, err)
	}
	b, _ := json.Marshal(tr)
	if strings.Contains(string(b), "hello") {
		t.Fatalf("refused tool read served the body: %s", b)
	}
	if ev := aud.all(); len(ev) != 2 || ev[1].Tool != "read_resource" || ev[1].URI != "notes://readme" || len(ev[1].Items) != 1 {
		t.Fatalf("events %+v", ev)
	}
}

// Subscriptions are audited too, and an auditor that accepts nothing
// refuses them.
func TestAuditSubscriptions(t *testing.T) {
	st, res := liveStore(t)
	for _, refuse := range []bool{false, true} {
		aud := &recordingAuditor{refuse: refuse}
		a := New(res, &Options{Principal: func(context.Context, mcp.Request) string { return "alice" },
			Live: &live.Options{}, Sources: []core.ChangeSource{st}, Auditor: aud})
		s := a.NewServer(&mcp.Implementation{Name: "live", Version: "v0"}, nil)
		lc := connectLive(t, s, "2025-11-25")
		ctx := context.Background()
		err := lc.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: liveDoc("a")})
		if (err != nil) != refuse {
			t.Fatalf("refuse %v: subscribe: %v", refuse, err)
		}
		if refuse {
			var je *jsonrpc.Error
			if !errors.As(err, &je) || string(je.Data) != `{"retryable":true}` {
				t.Fatalf("refused subscribe: %v, want a retryable outage", err)
			}
			continue
		}
		lc.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: liveDoc("s")}) // hidden from alice
		lc.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: liveDoc("a")})
		ev := aud.all()
		if len(ev) != 3 {
			t.Fatalf("%d events, want 3", len(ev))
		}
		if e := ev[0]; e.Method != MethodSubscribe || e.URI != liveDoc("a") || e.Result != "complete" || e.Principal != "alice" {
			t.Errorf("subscribe: %+v", e)
		}
		if e := ev[1]; e.Method != MethodSubscribe || e.Result != "error" || e.ErrorKind == "internal" {
			t.Errorf("refused subscribe: %+v", e)
		}
		if e := ev[2]; e.Method != MethodUnsubscribe || e.URI != liveDoc("a") || e.Result != "complete" {
			t.Errorf("unsubscribe: %+v", e)
		}
	}
}

// What a client or token supplies reaches an event as text a sink can
// store: valid UTF-8 without NUL, bounded.
func TestAuditTextIsStorable(t *testing.T) {
	for _, in := range []string{"doc://a\x00b", "doc://\xff\xfe", strings.Repeat("é", maxAuditText)} {
		out := auditText(in)
		if strings.ContainsRune(out, 0) || !utf8.ValidString(out) || len(out) > maxAuditText+utf8.UTFMax {
			t.Errorf("auditText(%.20q) = %.20q (%d bytes)", in, out, len(out))
		}
	}
	r := objectResources(t)
	aud := &recordingAuditor{}
	c := connect(t, newServer(r, &Options{Auditor: aud}), inMemory, "", "")
	c.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "notes://a\x00b"})
	if ev := aud.all(); len(ev) != 1 || ev[0].URI != "notes://a\uFFFDb" || ev[0].Result != "error" {
		t.Fatalf("events %+v", ev)
	}
}

// A read's event counts what it removed by kind and stage, named by the
// host's namer where an access decision removed it, and an object read
// with no pin records the version its source served.
func TestAuditEventsSayWhatDecidedTheRemovedItems(t *testing.T) {
	r := objectResources(t)
	aud := &recordingAuditor{}
	by := func(d core.ResourceDefinition, s core.PassStage) string {
		return "namer of " + d.URI + " at " + s.String()
	}
	c := connect(t, newServer(r, &Options{Auditor: aud, AuditDecidedBy: by}), inMemory, "", "")
	ctx := context.Background()
	if _, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "bundle://partial"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "obj://unpinned"}); err != nil {
		t.Fatal(err)
	}
	ev := aud.all()
	if len(ev) != 2 {
		t.Fatalf("%d events", len(ev))
	}
	want := []AuditRemoved{
		{Kind: "unavailable", Stage: "decide", DecidedBy: "namer of bundle://partial at " + core.PassBeforeReads.String(), Count: 1},
		{Kind: "read_failed", Stage: "read", Count: 1},
		{Kind: "unavailable", Stage: "read", DecidedBy: "namer of bundle://partial at " + core.PassStage(0).String(), Count: 1},
	}
	got := ev[0].Removed
	sortRemoved(got)
	sortRemoved(want)
	if !slices.Equal(got, want) {
		t.Errorf("removed %+v\nwant    %+v", got, want)
	}
	if it := ev[1].Items; len(it) != 1 || it[0].ETag != `"served"` || it[0].VersionID != "v9" {
		t.Errorf("unpinned object audited as %+v, want the served version", it)
	}
}

func sortRemoved(rs []AuditRemoved) {
	slices.SortFunc(rs, func(a, b AuditRemoved) int { return strings.Compare(a.Kind+a.Stage, b.Kind+b.Stage) })
}
