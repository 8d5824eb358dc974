package live

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/memory"
)

const tmpl = "mem://docs/{id}"

func doc(id string) string { return "mem://docs/" + id }

// rig is a memory store served through core with a hub whose notifications
// are recorded.
type rig struct {
	t   *testing.T
	st  *memory.Store
	res *core.Resources
	hub *Hub[string]

	mu   sync.Mutex
	got  []string // "session uri"
	sent chan string
}

func newRig(t *testing.T, opts *Options) *rig {
	t.Helper()
	g := &rig{t: t, st: memory.New(nil), sent: make(chan string, 10000)}
	b := g.st.KeyBinding(core.ResourceDefinition{URITemplate: tmpl, Name: "doc"}, "id", "")
	res, err := core.NewResources([]core.ResourceBinding{b}, g.st.Policy())
	if err != nil {
		t.Fatal(err)
	}
	g.res = res
	g.hub = New(res, func(s, uri string) {
		g.mu.Lock()
		g.got = append(g.got, s+" "+uri)
		g.mu.Unlock()
		g.sent <- s + " " + uri
	}, []core.ChangeSource{g.st}, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.hub.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	waitWatching(t, g.st)
	return g
}

// waitWatching waits until a hub's Run listens to st, so that no change
// made after it is missed.
func waitWatching(t *testing.T, st *memory.Store) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); st.Watching() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hub does not watch the store after 5 s")
		}
	}
}

// settle waits until the hub has handled every change reported so far:
// the memory store reports a change from the call that makes it, and the
// hub's Pending counts each check until its notification is sent. After
// it, g.sent holds every notification those changes caused.
func (g *rig) settle() Stats {
	g.t.Helper()
	return settle(g.t, g.hub)
}

func settle(t *testing.T, h *Hub[string]) Stats {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := h.Stats()
		if st.Pending == 0 {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hub still has %d checks pending after 10 s: %+v", st.Pending, st)
		}
		time.Sleep(time.Millisecond)
	}
}

func (g *rig) put(id, body string) {
	g.t.Helper()
	if _, err := g.st.Put(id, memory.Item{MIMEType: "text/plain", Text: true, Body: []byte(body)}); err != nil {
		g.t.Fatal(err)
	}
}

func (g *rig) sub(session, principal, id string) error {
	return g.hub.Subscribe(core.WithCaller(context.Background(), core.Caller{Principal: principal}), session, doc(id))
}

func (g *rig) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.got)
}

// expect waits up to 2 s for the notification want.
func (g *rig) expect(want string) {
	g.t.Helper()
	deadline := time.After(2 * time.Second)
	for {
		select {
		case s := <-g.sent:
			if s == want {
				return
			}
		case <-deadline:
			g.t.Fatalf("no notification %q within 2 s; got %v", want, g.snapshot())
		}
	}
}

func (g *rig) snapshot() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.got...)
}

// quiet asserts that the changes made so far notify nothing more: once the
// hub has settled, every notification they caused has been sent.
func (g *rig) quiet() {
	g.t.Helper()
	g.settle()
	select {
	case s := <-g.sent:
		g.t.Fatalf("unexpected notification %q", s)
	default:
	}
}

func TestSubscribeToHiddenOrMissingURIFailsExactlyLikeARead(t *testing.T) {
	t.Parallel() // each test has a hub of its own and mostly waits
	g := newRig(t, nil)
	g.put("secret", "x")
	g.st.Grant("secret", "bob", memory.Access{Read: true})
	ctx := core.WithCaller(context.Background(), core.Caller{Principal: "alice"})
	for _, id := range []string{"secret", "missing"} {
		_, rerr := g.res.Read(ctx, doc(id))
		serr := g.hub.Subscribe(ctx, "s1", doc(id))
		if rerr == nil || serr == nil || core.KindOf(serr) != core.KindOf(rerr) || serr.Error() != rerr.Error() {
			t.Fatalf("%s: subscribe error %v, read error %v: want the same", id, serr, rerr)
		}
	}
	if st := g.hub.Stats(); st.Subscriptions != 0 {
		t.Fatalf("a refused subscribe was kept: %+v", st)
	}
}

// TestSubscribeToABundleOfOnlyReadDeniedItemsFailsLikeItsRead proves a
// bundle whose visible items the caller may all not read is refused at
// subscribe with the very error its read gets (unavailable, as a missing
// bundle), while a bundle with one readable item is admitted, and an
// admitted subscription whose items all become read-denied is dropped.
func TestSubscribeToABundleOfOnlyReadDeniedItemsFailsLikeItsRead(t *testing.T) {
	t.Parallel() // each test has a hub of its own and mostly waits
	st := memory.New(nil)
	for _, id := range []string{"a", "b"} {
		if _, err := st.Put(id, memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		st.Grant(id, "alice", memory.Access{}) // visible, read-denied
	}
	bundle := st.Binding(core.ResourceDefinition{URI: "mem://bundle", Name: "bundle"}, func(core.ResourceMatch) ([]memory.Ref, error) {
		return []memory.Ref{{URI: doc("a"), Key: "a"}, {URI: doc("b"), Key: "b"}}, nil
	})
	res, err := core.NewResources([]core.ResourceBinding{bundle}, st.Policy())
	if err != nil {
		t.Fatal(err)
	}
	hub := New(res, func(string, string) {}, []core.ChangeSource{st}, nil)
	ctx := core.WithCaller(context.Background(), core.Caller{Principal: "alice"})
	_, rerr := res.Read(ctx, "mem://bundle")
	_, merr := res.Read(ctx, "mem://nothing")
	serr := hub.Subscribe(ctx, "s1", "mem://bundle")
	if core.KindOf(rerr) != core.FailureUnavailable || core.KindOf(serr) != core.KindOf(rerr) || serr.Error() != merr.Error() {
		t.Fatalf("subscribe %v, read %v, missing %v: want the same unavailable", serr, rerr, merr)
	}
	st.Grant("b", "alice", memory.Access{Read: true})
	if err := hub.Subscribe(ctx, "s1", "mem://bundle"); err != nil {
		t.Fatalf("a bundle with a readable item: %v", err)
	}
	st.Grant("b", "alice", memory.Access{})
	if _, err := authorize(ctx, res, "mem://bundle"); core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("re-authorization after the last read grant went: %v, want unavailable (dropped)", err)
	}
}

func TestChangeNotifiesAnAuthorizedSubscriber(t *testing.T) {
	t.Parallel() // each test has a hub of its own and mostly waits
	g := newRig(t, nil)
	g.put("a", "v1")
	g.st.Grant("a", "alice", memory.Access{Read: true})
	if err := g.sub("s1", "alice", "a"); err != nil {
		t.Fatal(err)
	}
	g.put("a", "v2")
	g.expect("s1 " + doc("a"))
}

func TestRevokedSubscriberGetsNothingAndIsDropped(t *testing.T) {
	t.Parallel() // each test has a hub of its own and mostly waits
	g := newRig(t, nil)
	g.put("a", "v1")
	g.st.Grant("a", "alice", memory.Access{Read: true})
	g.st.Grant("a", "bob", memory.Access{Read: true})
	for s, p := range map[string]string{"sa": "alice", "sb": "bob"} {
		if err := g.sub(s, p, "a"); err != nil {
			t.Fatal(err)
		}
	}
	g.st.Revoke("a", "alice")
	g.put("a", "v2")
	g.expect("sb " + doc("a"))
	g.quiet()
	for _, n := range g.snapshot() {
		if n == "sa "+doc("a") {
			t.Fatalf("the revoked subscriber was notified: %v", g.snapshot())
		}
	}
	if g.hub.Subscribed("sa", doc("a")) {
		t.Fatal("the revoked subscription was kept")
	}
	if st := g.hub.Stats(); st.Dropped != 1 {
		t.Fatalf("dropped = %d, want 1", st.Dropped)
	}
}

func TestAnotherPrincipalsGrantChangeIsNotNotified(t *testing.T) {
	t.Parallel() // each test has a hub of its own and mostly waits
	g := newRig(t, nil)
	g.put("a", "v1")
	g.st.Grant("a", "alice", memory.Access{Read: true})
	if err := g.sub("sa", "alice", "a"); err != nil {
		t.Fatal(err)
	}
	g.st.Grant("a", "bob", memory.Access{Read: true})
	g.st.Revoke("a", "bob")
	g.quiet()
	if st := g.hub.Stats(); st.Checks == 0 {
		t.Fatal("the grant changes were not even checked")
	}
}

func TestWriteStormIsCoalescedToTheStatedBound(t *testing.T) {
	t.Parallel()        // each test has a hub of its own and mostly waits
	g := newRig(t, nil) // defaults: MinInterval 500 ms
	g.put("a", "v0")
	g.st.Grant("a", "alice", memory.Access{Read: true})
	if err := g.sub("s1", "alice", "a"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 1000 {
		g.put("a", fmt.Sprint("v", i))
		if i%10 == 9 {
			time.Sleep(9 * time.Millisecond)
		}
	}
	storm := time.Since(start)
	g.settle() // the trailing notification included
	n := g.count()
	bound := 2 + int(storm/DefaultMinInterval)
	t.Logf("1000 writes in %v produced %d notifications (bound %d)", storm, n, bound)
	if n < 1 || n > bound {
		t.Fatalf("%d notifications for 1000 writes in %v; want 1..%d", n, storm, bound)
	}
	g.hub.Unsubscribe("s1", doc("a"))
	for i := range 100 {
		g.put("a", fmt.Sprint("after", i))
	}
	g.settle()
	if m := g.count(); m != n {
		t.Fatalf("%d notifications after unsubscribe", m-n)
	}
}

func TestSessionRateLimitBoundsRechecksAcrossURIs(t *testing.T) {
	t.Parallel() // each test has a hub of its own and mostly waits
	// A refill of one token an hour: the burst is all this test can see,
	// however slowly the machine runs it.
	g := newRig(t, &Options{SessionBurst: 3, SessionInterval: time.Hour, MinInterval: time.Millisecond})
	for i := range 20 {
		id := fmt.Sprint("d", i)
		g.put(id, "v1")
		g.st.Grant(id, "alice", memory.Access{Read: true})
		if err := g.sub("s1", "alice", id); err != nil {
			t.Fatal(err)
		}
	}
	// Each change of all 20 is one recheck of the session, covering all
	// 20: three of them spend the burst, and the fourth waits.
	for round := 1; round <= 3; round++ {
		time.Sleep(2 * time.Millisecond) // past MinInterval
		g.hub.Changed(core.Change{All: true})
		st := g.settle()
		if st.Batches != int64(round) || st.Notified != int64(20*round) {
			t.Fatalf("round %d: stats %+v: want %d rechecks and %d notifications", round, st, round, 20*round)
		}
	}
	time.Sleep(2 * time.Millisecond)
	g.hub.Changed(core.Change{All: true})
	for deadline := time.Now().Add(10 * time.Second); g.hub.Stats().Pending != 20; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v: want 20 subscriptions waiting for the session's tokens", g.hub.Stats())
		}
	}
	if st := g.hub.Stats(); st.Batches != 3 || st.Notified != 60 {
		t.Fatalf("stats %+v: want exactly the burst of 3 rechecks", st)
	}
}

// countingAuth counts the calls a hub makes of its Authorizer.
type countingAuth struct {
	res       *core.Resources
	one, many atomicCount
}

type atomicCount struct {
	mu sync.Mutex
	n  int
}

func (c *atomicCount) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *atomicCount) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (a *countingAuth) Authorize(ctx context.Context, uri string) (core.Authorization, error) {
	a.one.add()
	return a.res.Authorize(ctx, uri)
}

func (a *countingAuth) AuthorizeAll(ctx context.Context, uris []string) ([]core.Authorization, []error) {
	a.many.add()
	return a.res.AuthorizeAll(ctx, uris)
}

// A storm over 10 sessions of 100 subscriptions each is one recheck (one
// AuthorizeAll call) per session, and notifies every subscription.
func TestAStormIsOneRecheckPerSession(t *testing.T) {
	t.Parallel()
	st := memory.New(nil)
	b := st.KeyBinding(core.ResourceDefinition{URITemplate: tmpl, Name: "doc"}, "id", "")
	res, err := core.NewResources([]core.ResourceBinding{b}, st.Policy())
	if err != nil {
		t.Fatal(err)
	}
	auth := &countingAuth{res: res}
	var mu sync.Mutex
	got := map[string]int{}
	h := New[string](auth, func(s, uri string) {
		mu.Lock()
		got[s+" "+uri]++
		mu.Unlock()
	}, []core.ChangeSource{st}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	waitWatching(t, st)
	const sessions, perSession = 10, 100
	for s := range sessions {
		p := fmt.Sprint("p", s)
		for i := range perSession {
			id := fmt.Sprint("s", s, "d", i)
			if _, err := st.Put(id, memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("v1")}); err != nil {
				t.Fatal(err)
			}
			st.Grant(id, p, memory.Access{Read: true})
			if err := h.Subscribe(core.WithCaller(context.Background(), core.Caller{Principal: p}), fmt.Sprint("sess", s), doc(id)); err != nil {
				t.Fatal(err)
			}
		}
	}
	settle(t, h)
	one, before := auth.one.get(), h.Stats()
	h.Changed(core.Change{All: true}) // every subscription, as one change
	after := settle(t, h)
	if n := auth.many.get(); n != sessions {
		t.Fatalf("%d AuthorizeAll calls for a storm over %d sessions, want one each (stats %+v)", n, sessions, after)
	}
	if n := auth.one.get() - one; n != 0 {
		t.Fatalf("%d Authorize calls in the storm, want none", n)
	}
	if n := after.Batches - before.Batches; n != sessions {
		t.Fatalf("%d rechecks, want %d", n, sessions)
	}
	if n := after.Notified - before.Notified; n != sessions*perSession {
		t.Fatalf("%d notifications, want %d", n, sessions*perSession)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != sessions*perSession {
		t.Fatalf("%d session/URI pairs notified, want %d", len(got), sessions*perSession)
	}
}

func TestSubscriptionBoundsPerSessionAndPerHub(t *testing.T) {
	t.Parallel() // each test has a hub of its own and mostly waits
	g := newRig(t, &Options{MaxPerSession: 2, MaxTotal: 3})
	for _, id := range []string{"a", "b", "c", "d"} {
		g.put(id, "x")
		for _, p := range []string{"alice", "bob"} {
			g.st.Grant(id, p, memory.Access{Read: true})
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(g.sub("s1", "alice", "a"))
	must(g.sub("s1", "alice", "a")) // again: counts once
	must(g.sub("s1", "alice", "b"))
	if err := g.sub("s1", "alice", "c"); !errors.Is(err, ErrSessionLimit) {
		t.Fatalf("third subscription of a session: %v, want ErrSessionLimit", err)
	}
	must(g.sub("s2", "bob", "a"))
	if err := g.sub("s3", "bob", "b"); !errors.Is(err, ErrHubLimit) {
		t.Fatalf("fourth subscription of the hub: %v, want ErrHubLimit", err)
	}
	// A hidden URI at the limit still answers like a read.
	if err := g.sub("s3", "carol", "a"); core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("hidden URI at the limit: %v, want unavailable", err)
	}
	g.hub.Unsubscribe("s1", doc("b"))
	must(g.sub("s3", "bob", "b"))
	g.hub.EndSession("s1")
	must(g.sub("s2", "bob", "c"))
	if st := g.hub.Stats(); st.Subscriptions != 3 || st.Sessions != 2 {
		t.Fatalf("stats %+v, want 3 subscriptions in 2 sessions", st)
	}
}

func TestLostTrackNotifiesEveryStillAuthorizedSubscriber(t *testing.T) {
	t.Parallel() // each test has a hub of its own and mostly waits
	g := newRig(t, nil)
	g.put("a", "x")
	g.put("b", "x")
	g.st.Grant("a", "alice", memory.Access{Read: true})
	g.st.Grant("b", "alice", memory.Access{Read: true})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(g.sub("s1", "alice", "a"))
	must(g.sub("s1", "alice", "b"))
	g.st.Revoke("b", "alice") // checked right away: dropped
	if st := g.settle(); st.Dropped != 1 {
		t.Fatalf("after the revoke: %+v, want b dropped", st)
	}
	g.hub.Changed(core.Change{All: true})
	g.expect("s1 " + doc("a"))
	g.quiet()
}

func TestEndSessionStopsNotifications(t *testing.T) {
	t.Parallel() // each test has a hub of its own and mostly waits
	g := newRig(t, nil)
	g.put("a", "x")
	g.st.Grant("a", "alice", memory.Access{Read: true})
	if err := g.sub("s1", "alice", "a"); err != nil {
		t.Fatal(err)
	}
	g.hub.EndSession("s1")
	g.put("a", "y")
	g.quiet()
}

// racingAuthorizer changes the item right after the first authorization,
// before the hub has indexed the new subscription.
type racingAuthorizer struct {
	res  *core.Resources
	once sync.Once
	put  func()
}

func (r *racingAuthorizer) Authorize(ctx context.Context, uri string) (core.Authorization, error) {
	a, err := r.res.Authorize(ctx, uri)
	r.once.Do(r.put)
	return a, err
}

func TestAChangeWhileSubscribingIsNotMissed(t *testing.T) {
	t.Parallel() // each test has a hub of its own and mostly waits
	st := memory.New(nil)
	st.Put("a", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("v1")})
	st.Grant("a", "alice", memory.Access{Read: true})
	b := st.KeyBinding(core.ResourceDefinition{URITemplate: tmpl, Name: "doc"}, "id", "")
	res, err := core.NewResources([]core.ResourceBinding{b}, st.Policy())
	if err != nil {
		t.Fatal(err)
	}
	auth := &racingAuthorizer{res: res, put: func() {
		st.Put("a", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("v2")})
	}}
	got := make(chan string, 10)
	h := New[string](auth, func(s, uri string) { got <- uri }, []core.ChangeSource{st}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitWatching(t, st)
	if err := h.Subscribe(core.WithCaller(context.Background(), core.Caller{Principal: "alice"}), "s1", doc("a")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(2 * time.Second):
		t.Fatal("the change made while subscribing was never notified")
	}
}

func TestOnePrincipalCannotTakeAnotherPrincipalsSubscriptions(t *testing.T) {
	t.Parallel() // each test has a hub of its own and mostly waits
	g := newRig(t, &Options{MaxPerSession: 10, MaxPerPrincipal: 3, MaxTotal: 5})
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		g.put(id, "x")
		for _, p := range []string{"mallory", "alice"} {
			g.st.Grant(id, p, memory.Access{Read: true})
		}
	}
	// mallory spreads her subscriptions over many sessions, as abandoned
	// sessions would: the per-session cap alone would not stop her.
	for i, id := range []string{"a", "b", "c"} {
		if err := g.sub(fmt.Sprintf("m%d", i), "mallory", id); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.sub("m1", "mallory", "b"); err != nil { // a replacement counts once
		t.Fatalf("re-subscribing within the cap: %v", err)
	}
	if err := g.sub("m9", "mallory", "d"); !errors.Is(err, ErrPrincipalLimit) {
		t.Fatalf("mallory's fourth subscription: %v, want ErrPrincipalLimit", err)
	}
	for _, id := range []string{"a", "b"} {
		if err := g.sub("a1", "alice", id); err != nil {
			t.Fatalf("alice is refused while mallory is at her own cap: %v", err)
		}
	}
	g.hub.EndSession("m0")
	if err := g.sub("m9", "mallory", "d"); err != nil {
		t.Fatalf("mallory below her cap again after a session ended: %v", err)
	}
	if st := g.hub.Stats(); st.Subscriptions != 5 {
		t.Fatalf("stats %+v, want 5 subscriptions", st)
	}
}

func TestOnRevokedSaysHowManySubscriptionsTheSessionStillHolds(t *testing.T) {
	t.Parallel() // each test has a hub of its own and mostly waits
	g := newRig(t, nil)
	type call struct {
		session   string
		remaining int
	}
	calls := make(chan call, 10)
	g.hub.OnRevoked(func(s string, remaining int) { calls <- call{s, remaining} })
	g.put("a", "v1")
	g.put("b", "v1")
	g.st.Grant("a", "alice", memory.Access{Read: true})
	g.st.Grant("b", "alice", memory.Access{Read: true})
	for _, id := range []string{"a", "b"} {
		if err := g.sub("sa", "alice", id); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(want call) {
		t.Helper()
		select {
		case c := <-calls:
			if c != want {
				t.Fatalf("OnRevoked(%q, %d), want (%q, %d)", c.session, c.remaining, want.session, want.remaining)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("no OnRevoked within 2 s, want (%q, %d)", want.session, want.remaining)
		}
	}
	g.st.Revoke("a", "alice")
	wait(call{"sa", 1})
	g.put("b", "v2") // a still readable subscription: notified, not revoked
	g.expect("sa " + doc("b"))
	g.settle() // OnRevoked is called before a check counts as done
	select {
	case c := <-calls:
		t.Fatalf("OnRevoked(%q, %d) for a change the subscriber may still read", c.session, c.remaining)
	default:
	}
	g.st.Revoke("b", "alice")
	wait(call{"sa", 0})
	if st := g.hub.Stats(); st.Sessions != 0 || st.Subscriptions != 0 || st.Dropped != 2 {
		t.Fatalf("stats %+v: want nothing held and two dropped", st)
	}
}
