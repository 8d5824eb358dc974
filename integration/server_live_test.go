package integration

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/internal/serverproc"
)

// connectLive opens a session with token whose resources/updated
// notifications arrive on the returned channel.
func (s *runningServer) connectLive(t *testing.T, token string) (*mcp.ClientSession, <-chan string) {
	t.Helper()
	updates := make(chan string, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "server-live-test", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case updates <- r.Params.URI:
			default:
			}
		},
	})
	hc := &http.Client{Transport: serverproc.Bearer{Token: token, Next: http.DefaultTransport}}
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + s.addr + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nserver stderr:\n%s", err, s.stderr.String())
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, updates
}

// settled waits until the server has counted at least changes change
// reports and handled every one of them (no check pending, each
// notification sent), and returns how many notifications it has sent in
// all. It is the server's own sequence: what a test asserts about the
// notifications of a change, it asserts after this, never after a window of
// time.
func (s *runningServer) settled(t *testing.T, what string, changes int) (notified int) {
	t.Helper()
	g := s.waitGauges(t, what, func(g map[string]int) bool {
		return g["mcpres_live_changes_total"] >= changes && g["mcpres_live_checks_pending"] == 0
	})
	return g["mcpres_live_notifications_total"]
}

// liveCounts returns the server's change reports and notifications so far.
func (s *runningServer) liveCounts(t *testing.T) (changes, notified int) {
	t.Helper()
	g := s.gauges(t)
	return g["mcpres_live_changes_total"], g["mcpres_live_notifications_total"]
}

// takeUpdates receives exactly n notifications that the server has counted
// as sent (within 10 s: they are on their way), and then fails if one more
// is already there.
func takeUpdates(t *testing.T, updates <-chan string, n int, what string) map[string]int {
	t.Helper()
	got := map[string]int{}
	deadline := time.After(10 * time.Second)
	for range n {
		select {
		case uri := <-updates:
			got[uri]++
		case <-deadline:
			t.Fatalf("%s: the server sent %d notifications, received %v within 10 s", what, n, got)
		}
	}
	select {
	case uri := <-updates:
		t.Fatalf("%s: the server counted %d notifications, but another (%s) arrived", what, n, uri)
	default:
	}
	return got
}

// TestServerSubscriptionsAndCompletionFollowTheGrants runs the reference
// server over the seeded Postgres and S3 server: a subscriber hears of an
// UPDATE committed by another connection, a subscribe to what a principal
// may not read answers exactly like a read of it, and completion offers
// each principal only the assets it may discover.
func TestServerSubscriptionsAndCompletionFollowTheGrants(t *testing.T) {
	t.Parallel()
	dbURL, _, flags := migratedAndSeeded(t)
	srv := startServer(t, append(flags, "--tokens="+tokensFile(t, "alice", "bob"))...)
	alice, aliceUpdates := srv.connectLive(t, "alice-token")
	bob, _ := srv.connectLive(t, "bob-token")
	ctx := t.Context()

	caps := alice.InitializeResult().Capabilities
	if caps.Resources == nil || !caps.Resources.Subscribe || caps.Completions == nil {
		t.Fatalf("capabilities %+v: want resources.subscribe and completions", caps)
	}

	const welcome = "asset://project/handbook/asset/welcome/body"
	if err := alice.Subscribe(ctx, &mcp.SubscribeParams{URI: welcome}); err != nil {
		t.Fatalf("alice subscribes to %s: %v", welcome, err)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `UPDATE mcpres.assets SET title = title || '!' WHERE project_id = 'handbook' AND id = 'welcome'`); err != nil {
		t.Fatal(err)
	}
	committed := time.Now()
	select {
	case uri := <-aliceUpdates:
		if uri != welcome {
			t.Fatalf("notified of %q, want %q", uri, welcome)
		}
		t.Logf("notified %v after the commit", time.Since(committed))
	case <-time.After(5 * time.Second):
		t.Fatalf("no resources/updated within 5 s of the commit\nserver stderr:\n%s", srv.stderr.String())
	}

	const hidden = "asset://project/handbook/asset/intro-video"
	_, readErr := bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: hidden})
	subErr := bob.Subscribe(ctx, &mcp.SubscribeParams{URI: hidden})
	var re, se *jsonrpc.Error
	if !errors.As(readErr, &re) || !errors.As(subErr, &se) || re.Code != se.Code || re.Message != se.Message {
		t.Fatalf("bob: read of a hidden asset %v, subscribe %v: want the same error", readErr, subErr)
	}

	complete := func(cs *mcp.ClientSession) []string {
		t.Helper()
		r, err := cs.Complete(ctx, &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "asset://project/{project}/asset/{asset}"},
			Argument: mcp.CompleteParamsArgument{Name: "asset", Value: ""},
			Context:  &mcp.CompleteContext{Arguments: map[string]string{"project": "handbook"}},
		})
		if err != nil {
			t.Fatalf("complete: %v", err)
		}
		return r.Completion.Values
	}
	av, bv := complete(alice), complete(bob)
	if !slices.Contains(av, "intro-video") || !slices.Contains(av, "welcome") {
		t.Errorf("alice is offered %q: want every handbook asset", av)
	}
	if slices.Contains(bv, "intro-video") || !slices.Contains(bv, "welcome") {
		t.Errorf("bob is offered %q: want his grants only, never intro-video", bv)
	}
}
