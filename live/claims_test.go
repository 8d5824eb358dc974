package live

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/memory"
)

// TestReauthorizationKeepsTheSubscribersClaims proves that a subscription
// is re-authorized with the claims and scopes its subscriber had (an OAuth
// token's groups, which row-level security reads, and the scopes a
// resources file can require), not only the principal: under a policy that
// needs both, a change still notifies the subscriber.
func TestReauthorizationKeepsTheSubscribersClaims(t *testing.T) {
	t.Parallel()
	st := memory.New(nil)
	b := st.KeyBinding(core.ResourceDefinition{URITemplate: tmpl, Name: "doc"}, "id", "")
	p := st.Policy()
	decide := p.Decide // wrapped below: it needs the claim
	p.Decide = func(ctx context.Context, pass core.PolicyPass) ([]core.TargetDecision, error) {
		if c, _ := core.CallerFrom(ctx); string(c.Claims) != `{"groups":["eng"]}` || !slices.Contains(c.Scopes, "read") {
			return make([]core.TargetDecision, len(pass.Targets)), nil // all hidden
		}
		return decide(ctx, pass)
	}
	res, err := core.NewResources([]core.ResourceBinding{b}, p)
	if err != nil {
		t.Fatal(err)
	}
	put := func(body string) {
		if _, err := st.Put("a", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	put("v1")
	st.Grant("a", "alice", memory.Access{Read: true})
	sent := make(chan string, 10)
	hub := New(res, func(s, uri string) { sent <- s + " " + uri }, []core.ChangeSource{st}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { hub.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	sctx := core.WithCaller(context.Background(), core.Caller{Principal: "alice", Claims: json.RawMessage(`{"groups":["eng"]}`), Scopes: []string{"read"}})
	if err := hub.Subscribe(sctx, "s1", doc("a")); err != nil {
		t.Fatal(err)
	}
	// Keep changing the item until the hub, registered with the store by
	// Run, notifies: each change is re-authorized with the kept claims.
	for i := 0; ; i++ {
		put("v" + string(rune('2'+i%8)))
		select {
		case got := <-sent:
			if got != "s1 "+doc("a") {
				t.Fatalf("notified %q", got)
			}
			if st := hub.Stats(); st.Subscriptions != 1 {
				t.Fatalf("after the re-authorization: %+v, want the subscription kept", st)
			}
			return
		case <-time.After(50 * time.Millisecond):
			if i == 100 {
				t.Fatalf("no notification after %d changes: the re-authorization lost the claims (stats %+v)", i, hub.Stats())
			}
		}
	}
}
