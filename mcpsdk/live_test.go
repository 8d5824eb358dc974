package mcpsdk

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
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

const liveTemplate = "mem://docs/{id}"

func liveDoc(id string) string { return "mem://docs/" + id }

// liveStore is a memory store with docs a (alice and bob) and s (bob only).
func liveStore(t *testing.T) (*memory.Store, *core.Resources) {
	t.Helper()
	st := memory.New(nil)
	for _, id := range []string{"a", "s"} {
		if _, err := st.Put(id, memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("v1")}); err != nil {
			t.Fatal(err)
		}
	}
	st.Grant("a", "alice", memory.Access{Read: true})
	st.Grant("a", "bob", memory.Access{Read: true})
	st.Grant("s", "bob", memory.Access{Read: true})
	b := st.KeyBinding(core.ResourceDefinition{URITemplate: liveTemplate, Name: "doc"}, "id", "")
	res, err := core.NewResources([]core.ResourceBinding{b}, st.Policy())
	if err != nil {
		t.Fatal(err)
	}
	return st, res
}

// liveServer serves res to principal with subscriptions and completion.
func liveServer(t *testing.T, st *memory.Store, res *core.Resources, principal string, hostComplete mcp.ServerOptions) (*mcp.Server, *Subscriptions) {
	t.Helper()
	a := New(res, &Options{Principal: func(context.Context, mcp.Request) string { return principal }, Completions: true,
		Live: &live.Options{}, Sources: []core.ChangeSource{st}})
	s := a.NewServer(&mcp.Implementation{Name: "live", Version: "v0"}, &hostComplete)
	runWatching(t, a, st)
	return s, a.Subscriptions()
}

// runWatching runs a's hub until the test ends and returns once it
// watches st, so that no change the test makes after it is missed.
func runWatching(t *testing.T, a *Adapter, st *memory.Store) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	for deadline := time.Now().Add(10 * time.Second); st.Watching() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hub does not watch the store after 10 s")
		}
	}
}

// settled waits until subs' hub has handled every change reported so far
// (live.Stats.Pending is zero: each check done, each notification written)
// and returns its counters. The memory store reports a change from the
// call that makes it, so what a test asserts after a change it asserts
// after this, not after a window of time.
func settled(t *testing.T, subs *Subscriptions) live.Stats {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := subs.Hub().Stats()
		if st.Pending == 0 {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hub still has %d checks pending after 10 s", st.Pending)
		}
		time.Sleep(time.Millisecond)
	}
}

// liveClient connects to s at version and records the updates it gets.
type liveClient struct {
	cs      *mcp.ClientSession
	mu      sync.Mutex
	updates []string
	ch      chan string
}

func connectLive(t *testing.T, s *mcp.Server, version string) *liveClient {
	t.Helper()
	lc := &liveClient{ch: make(chan string, 1000)}
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			lc.mu.Lock()
			lc.updates = append(lc.updates, r.Params.URI)
			lc.mu.Unlock()
			lc.ch <- r.Params.URI
		},
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := c.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	lc.cs = cs
	return lc
}

func (lc *liveClient) count() int {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return len(lc.updates)
}

func (lc *liveClient) await(t *testing.T, uri string, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case u := <-lc.ch:
			if u == uri {
				return
			}
		case <-deadline:
			t.Fatalf("no update of %s within %v", uri, within)
		}
	}
}

// none asserts that the changes made so far sent lc nothing after the hub
// had sent notified notifications in all.
func (lc *liveClient) none(t *testing.T, subs *Subscriptions, notified int64) {
	t.Helper()
	if st := settled(t, subs); st.Notified != notified {
		t.Fatalf("%d notifications sent, want none", st.Notified-notified)
	}
	select {
	case u := <-lc.ch:
		t.Fatalf("unexpected update of %s", u)
	default:
	}
}

var liveProtocols = []string{"2025-11-25", "2026-07-28"}

func TestSubscribedClientIsNotifiedOfAChangeOnBothProtocols(t *testing.T) {
	t.Parallel() // mostly waits for notifications, or for none
	for _, v := range liveProtocols {
		t.Run(v, func(t *testing.T) {
			st, res := liveStore(t)
			s, subs := liveServer(t, st, res, "alice", mcp.ServerOptions{})
			lc := connectLive(t, s, v)
			if caps := lc.cs.InitializeResult().Capabilities; caps.Resources == nil || !caps.Resources.Subscribe || caps.Completions == nil {
				t.Fatalf("capabilities %+v: want resources.subscribe and completions", caps)
			}
			if err := lc.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: liveDoc("a")}); err != nil {
				t.Fatal(err)
			}
			waitSubscribed(t, subs, 1)
			st.Put("a", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("v2")})
			lc.await(t, liveDoc("a"), 2*time.Second)
			if err := lc.cs.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: liveDoc("a")}); err != nil {
				t.Fatal(err)
			}
			waitSubscribed(t, subs, 0)
			notified := settled(t, subs).Notified
			st.Put("a", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("v3")})
			lc.none(t, subs, notified)
		})
	}
}

// waitSubscribed waits until the hub holds n subscriptions (the
// 2026-07-28 client subscribes and unsubscribes asynchronously).
func waitSubscribed(t *testing.T, subs *Subscriptions, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if subs.Hub().Stats().Subscriptions == n {
			return
		}
	}
	t.Fatalf("hub holds %d subscriptions, want %d", subs.Hub().Stats().Subscriptions, n)
}

func TestSubscribeToHiddenOrMissingURIAnswersExactlyLikeARead(t *testing.T) {
	st, res := liveStore(t)
	s, subs := liveServer(t, st, res, "alice", mcp.ServerOptions{})
	lc := connectLive(t, s, "2025-11-25")
	for _, uri := range []string{liveDoc("s"), liveDoc("missing"), "other://nothing", "mem://docs/%2e%2e"} {
		_, rerr := lc.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		serr := lc.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri})
		var re, se *jsonrpc.Error
		if !errors.As(rerr, &re) || !errors.As(serr, &se) {
			t.Fatalf("%s: read %v, subscribe %v: want JSON-RPC errors", uri, rerr, serr)
		}
		if re.Code != se.Code || re.Message != se.Message {
			t.Fatalf("%s: subscribe answered %d %q, read %d %q", uri, se.Code, se.Message, re.Code, re.Message)
		}
	}
	if n := subs.Hub().Stats().Subscriptions; n != 0 {
		t.Fatalf("%d refused subscriptions kept", n)
	}
}

func TestRevokedSubscriberIsNotNotifiedWhileOthersAre(t *testing.T) {
	t.Parallel() // mostly waits for notifications, or for none
	st, res := liveStore(t)
	sa, subsA := liveServer(t, st, res, "alice", mcp.ServerOptions{})
	sb, _ := liveServer(t, st, res, "bob", mcp.ServerOptions{})
	alice, bob := connectLive(t, sa, "2025-11-25"), connectLive(t, sb, "2025-11-25")
	for _, c := range []*liveClient{alice, bob} {
		if err := c.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: liveDoc("a")}); err != nil {
			t.Fatal(err)
		}
	}
	notified := settled(t, subsA).Notified
	st.Revoke("a", "alice")
	st.Put("a", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("v2")})
	bob.await(t, liveDoc("a"), 2*time.Second)
	alice.none(t, subsA, notified)
	if n := subsA.Hub().Stats().Subscriptions; n != 0 {
		t.Fatalf("the revoked subscription was kept (%d)", n)
	}
}

func TestSubscriptionLimitAnswersOnlyReadableURIs(t *testing.T) {
	st, res := liveStore(t)
	s, _ := adapted(&mcp.Implementation{Name: "live", Version: "v0"}, nil, res, &Options{Principal: func(context.Context, mcp.Request) string { return "bob" },
		Live: &live.Options{MaxPerSession: 1}, Sources: []core.ChangeSource{st}})
	lc := connectLive(t, s, "2025-11-25")
	if err := lc.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: liveDoc("a")}); err != nil {
		t.Fatal(err)
	}
	var je *jsonrpc.Error
	if err := lc.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: liveDoc("s")}); !errors.As(err, &je) || je.Message != SubscriptionLimitMessage {
		t.Fatalf("over the session limit: %v", err)
	}
	if err := lc.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: liveDoc("missing")}); !errors.As(err, &je) || je.Code != mcp.CodeResourceNotFound { //nolint:staticcheck
		t.Fatalf("a missing URI over the limit: %v, want not found", err)
	}
}

func TestSessionEndReleasesItsSubscriptions(t *testing.T) {
	st, res := liveStore(t)
	s, subs := liveServer(t, st, res, "alice", mcp.ServerOptions{})
	lc := connectLive(t, s, "2025-11-25")
	if err := lc.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: liveDoc("a")}); err != nil {
		t.Fatal(err)
	}
	waitSubscribed(t, subs, 1)
	lc.cs.Close()
	waitSubscribed(t, subs, 0)
}

func TestCompletionOffersOnlyDiscoverableValuesAndLeavesPromptsToTheHost(t *testing.T) {
	st, res := liveStore(t)
	for _, id := range []string{"ab", "ac", "b1"} {
		st.Put(id, memory.Item{MIMEType: "text/plain", Text: true})
		st.Grant(id, "alice", memory.Access{Read: true})
	}
	prompts := 0
	host := mcp.ServerOptions{CompletionHandler: func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		prompts++
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"from-host"}}}, nil
	}}
	for p, want := range map[string]string{"alice": "a,ab,ac", "bob": "a"} {
		s, _ := liveServer(t, st, res, p, host)
		lc := connectLive(t, s, "2025-11-25")
		r, err := lc.cs.Complete(context.Background(), &mcp.CompleteParams{
			Ref: &mcp.CompleteReference{Type: "ref/resource", URI: liveTemplate}, Argument: mcp.CompleteParamsArgument{Name: "id", Value: "a"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(r.Completion.Values, ","); got != want {
			t.Fatalf("%s completes %q, want %q", p, got, want)
		}
		r, err = lc.cs.Complete(context.Background(), &mcp.CompleteParams{
			Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}, Argument: mcp.CompleteParamsArgument{Name: "x", Value: "a"}})
		if err != nil || fmt.Sprint(r.Completion.Values) != "[from-host]" {
			t.Fatalf("prompt completion: %v %v", r, err)
		}
	}
	if prompts != 2 {
		t.Fatalf("host completion handler called %d times, want 2", prompts)
	}
}

func TestSubscribeFollowsTheLegacyNotFoundCodeAndSurvivesAPanickingPrincipal(t *testing.T) {
	st, res := liveStore(t)
	calls := 0
	s, _ := adapted(&mcp.Implementation{Name: "live", Version: "v0"}, nil, res, &Options{LegacyNotFoundCode: true,
		Live: &live.Options{}, Sources: []core.ChangeSource{st}, Principal: func(context.Context, mcp.Request) string {
			calls++
			if calls > 2 {
				panic("host bug")
			}
			return "alice"
		}})
	lc := connectLive(t, s, "2025-11-25")
	_, rerr := lc.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: liveDoc("s")})
	serr := lc.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: liveDoc("s")})
	var re, se *jsonrpc.Error
	if !errors.As(rerr, &re) || !errors.As(serr, &se) || re.Code != LegacyResourceNotFoundCode || se.Code != re.Code || se.Message != re.Message {
		t.Fatalf("read %v, subscribe %v: want the same legacy not-found error", rerr, serr)
	}
	serr = lc.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: liveDoc("a")})
	if !errors.As(serr, &se) || se.Code != jsonrpc.CodeInternalError || se.Message != internalMessage {
		t.Fatalf("subscribe with a panicking principal function: %v", serr)
	}
	if err := lc.cs.Ping(context.Background(), nil); err != nil {
		t.Fatalf("the session did not survive the panic: %v", err)
	}
}

func TestSubscriptionsNotifyOverStatefulStreamableHTTP(t *testing.T) {
	for _, v := range liveProtocols {
		t.Run(v, func(t *testing.T) {
			st, res := liveStore(t)
			s, subs := liveServer(t, st, res, "alice", mcp.ServerOptions{})
			srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
			t.Cleanup(srv.Close)
			lc := &liveClient{ch: make(chan string, 100)}
			c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, &mcp.ClientOptions{
				ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { lc.ch <- r.Params.URI },
			})
			cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL}, &mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			lc.cs = cs
			if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: liveDoc("a")}); err != nil {
				t.Fatal(err)
			}
			waitSubscribed(t, subs, 1)
			// The standalone stream opens in the background, and nothing
			// says when: a change made before it may reach no one. Change
			// again until one is heard (each change a new version).
			for i := 0; ; i++ {
				before := settled(t, subs).Notified
				st.Put("a", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte(fmt.Sprint("v", i+2))})
				if settled(t, subs).Notified == before {
					t.Fatalf("change %d: the subscriber was not notified at all", i)
				}
				select {
				case <-lc.ch:
				case <-time.After(time.Second):
					if i < 20 {
						continue
					}
					t.Fatal("no update reached the client after 20 changes")
				}
				break
			}
			cs.Close()
			waitSubscribed(t, subs, 0)
		})
	}
}
