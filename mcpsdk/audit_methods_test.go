package mcpsdk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/live"
	"go.phpboyscout.uk/mcp/resources/stores/memory"
)

// eventOf is the part of an event these tests compare.
type eventOf struct {
	method, tool, uri, result, errorKind string
	uris                                 []string
}

func (e eventOf) String() string {
	return fmt.Sprintf("{%s tool=%q uri=%q uris=%q %s %s}", e.method, e.tool, e.uri, e.uris, e.result, e.errorKind)
}

func eventsOf(ev []*AuditEvent) []eventOf {
	out := make([]eventOf, len(ev))
	for i, e := range ev {
		out[i] = eventOf{e.Method, e.Tool, e.URI, e.Result, e.ErrorKind, e.URIs}
	}
	return out
}

func sameEvents(t *testing.T, got []*AuditEvent, want []eventOf) {
	t.Helper()
	g := eventsOf(got)
	if !slices.EqualFunc(g, want, func(a, b eventOf) bool {
		return a.method == b.method && a.tool == b.tool && a.uri == b.uri && a.result == b.result &&
			a.errorKind == b.errorKind && slices.Equal(a.uris, b.uris)
	}) {
		t.Fatalf("events\n%v\nwant\n%v", g, want)
	}
}

// templates/list and completion of a resource reference are audited with
// their method, the template a completion named, and how they ended.
func TestAuditTemplatesListAndCompletion(t *testing.T) {
	r, _ := newResources(t, core.ResourceLimits{}, toolBindings(t)...)
	aud := &recordingAuditor{}
	c := connect(t, newServer(r, &Options{Auditor: aud, Completions: true}), inMemory, "", "")
	ctx := context.Background()
	if _, err := c.cs.ListResourceTemplates(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "docs://d/{id}"},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: "a"}}); err != nil {
		t.Fatal(err)
	}
	// A prompt's completion is not the adapter's: no event.
	c.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"},
		Argument: mcp.CompleteParamsArgument{Name: "x"}})
	sameEvents(t, aud.all(), []eventOf{
		{method: MethodListResourceTemplates, result: "complete"},
		{method: MethodComplete, uri: "docs://d/{id}", result: "complete"},
	})
}

// The tools bridge's list_resources and complete_resource_uri are audited
// under the method each runs, with the tool's name, the template a
// completion named, and a failed call as an error of its kind.
func TestAuditToolsListAndComplete(t *testing.T) {
	r, _ := newResources(t, core.ResourceLimits{}, toolBindings(t)...)
	aud := &recordingAuditor{}
	opts := toolServerOptions()
	opts.Auditor = aud
	c := connect(t, newServer(r, opts), inMemory, "", "")
	callTool(t, c, ToolListResources, nil)
	callTool(t, c, ToolListResources, map[string]any{"cursor": toolCursorTemplates})
	if res, _ := callTool(t, c, ToolCompleteResourceURI, map[string]any{"template": "docs://d/{id}", "argument": "id", "value": "a"}); res.IsError {
		t.Fatalf("completion failed: %+v", res)
	}
	if res, _ := callTool(t, c, ToolCompleteResourceURI, map[string]any{"argument": "id"}); !res.IsError {
		t.Fatalf("a completion without a template answered %+v", res)
	}
	invalid := core.FailureInvalidRequest.String()
	sameEvents(t, aud.all(), []eventOf{
		{method: MethodListResources, tool: ToolListResources, result: "complete"},
		{method: MethodListResourceTemplates, tool: ToolListResources, result: "complete"},
		{method: MethodComplete, tool: ToolCompleteResourceURI, uri: "docs://d/{id}", result: "complete"},
		{method: MethodComplete, tool: ToolCompleteResourceURI, result: "error", errorKind: invalid},
	})
}

// A subscriptions/listen is audited as it opens, with the URIs it
// subscribes to.
func TestAuditListenRecordsItsURIs(t *testing.T) {
	st, res := liveStore(t)
	if _, err := st.Put("b", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("v1")}); err != nil {
		t.Fatal(err)
	}
	st.Grant("b", "alice", memory.Access{Read: true})
	aud := &recordingAuditor{}
	s, a := listenAdapter(t, st, res, Options{Auditor: aud})
	conn := rawSession(t, s)
	conn.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":[%q,%q]}}}`,
		liveDoc("a"), liveDoc("b")))
	waitListens(t, a, 1)
	ev := aud.all()
	sameEvents(t, ev, []eventOf{{method: MethodSubscriptionsListen, uris: []string{liveDoc("a"), liveDoc("b")}, result: "complete"}})
	if e := ev[0]; e.Principal != "alice" || e.URIsOmitted != 0 {
		t.Fatalf("listen event %+v", e)
	}
}

// The URIs of a listen reach its event bounded in number and in bytes,
// each as storable text, and the event counts those it leaves out.
func TestAuditListenURIsAreBounded(t *testing.T) {
	params := func(uris ...string) mcp.Request {
		return &mcp.SubscriptionsListenRequest{Params: &mcp.SubscriptionsListenParams{
			Notifications: &mcp.NotificationSubscriptions{ResourceSubscriptions: uris}}}
	}
	many := make([]string, maxAuditURIs+7)
	for i := range many {
		many[i] = fmt.Sprintf("doc://%d", i)
	}
	long := strings.Repeat("x", maxAuditText)
	for _, tc := range []struct {
		name    string
		req     mcp.Request
		want    []string
		omitted int
	}{
		{"none", params(), nil, 0},
		{"no notifications", &mcp.SubscriptionsListenRequest{Params: &mcp.SubscriptionsListenParams{}}, nil, 0},
		{"text made storable", params("doc://a\x00b", "doc://\xff"), []string{"doc://a\uFFFDb", "doc://\uFFFD"}, 0},
		{"too many", params(many...), many[:maxAuditURIs], 7},
		{"too long", params(slices.Repeat([]string{long + long}, maxAuditURIBytes/maxAuditText+3)...),
			slices.Repeat([]string{long}, maxAuditURIBytes/maxAuditText), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, omitted := listenURIs(tc.req)
			if !slices.Equal(got, tc.want) || omitted != tc.omitted {
				t.Fatalf("%d URIs (%.60q...), %d omitted; want %d, %d omitted", len(got), got, omitted, len(tc.want), tc.omitted)
			}
		})
	}
}

// switchAuditor accepts events until refuse is set.
type switchAuditor struct {
	mu     sync.Mutex
	refuse bool
	events []*AuditEvent
}

func (s *switchAuditor) Audit(_ context.Context, e *AuditEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
	if s.refuse {
		return errors.New("sink down")
	}
	return nil
}

func (s *switchAuditor) set(refuse bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = refuse
}

// A resources/subscribe the auditor refuses leaves no subscription behind,
// in the hub or the SDK: no change of the resource is ever notified for
// it, so nothing is served unaudited. A subscription audited before stays.
func TestARefusedSubscribeLeavesNoSubscription(t *testing.T) {
	st, res := liveStore(t)
	aud := &switchAuditor{refuse: true}
	a := New(res, &Options{Principal: func(context.Context, mcp.Request) string { return "alice" },
		Live: &live.Options{}, Sources: []core.ChangeSource{st}, Auditor: aud})
	s := a.NewServer(&mcp.Implementation{Name: "live", Version: "v0"}, nil)
	runWatching(t, a, st)
	subs := a.Subscriptions()
	lc := connectLive(t, s, "2025-11-25")

	err := lc.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: liveDoc("a")})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || string(je.Data) != `{"retryable":true}` {
		t.Fatalf("refused subscribe: %v, want a retryable outage", err)
	}
	if n := subs.Hub().Stats().Subscriptions; n != 0 {
		t.Fatalf("the hub holds %d subscriptions after a refused subscribe, want 0", n)
	}
	notified := settled(t, subs).Notified
	st.Put("a", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("v2")})
	lc.none(t, subs, notified)

	// Audited, then subscribed again and refused: the audited one stays.
	aud.set(false)
	if err := lc.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: liveDoc("a")}); err != nil {
		t.Fatal(err)
	}
	aud.set(true)
	if err := lc.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: liveDoc("a")}); err == nil {
		t.Fatal("a refused subscribe succeeded")
	}
	if n := subs.Hub().Stats().Subscriptions; n != 1 {
		t.Fatalf("the hub holds %d subscriptions, want the audited one", n)
	}
	st.Put("a", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("v3")})
	lc.await(t, liveDoc("a"), 5*time.Second)
}
