package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/live"
	"go.phpboyscout.uk/mcp/resources/migrations"
)

// TestLiveChannelNamesAgree: every resource of the reference file names
// the channel on which migration 3's triggers send key payloads.
func TestLiveChannelNamesAgree(t *testing.T) {
	f, err := referenceFile()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Resources {
		if r.Listen != migrations.KeyChannel {
			t.Errorf("resource %s listens on %q, want %q", r.Name, r.Listen, migrations.KeyChannel)
		}
	}
}

// TestLiveUpdateCommittedByAnotherConnectionIsNotified: a commit by
// another connection reaches a subscriber on both protocols. How soon is
// logged, not asserted (a figure for BENCHMARKS.md, not a timed test): the
// wait is bounded only so that a failing run ends.
func TestLiveUpdateCommittedByAnotherConnectionIsNotified(t *testing.T) {
	t.Parallel()
	d := liveDB(t)
	in := newLiveInstance(t, d, "alice", nil)
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		lc := in.connect(t, v)
		lc.subscribe(t, liveA1)
		waitLive(t, in, 1)
		committed := commitUpdate(t, writer(t, d), "p", "a1", "changed at "+v)
		u := lc.await(t, liveA1, 10*time.Second)
		t.Logf("protocol %s: resources/updated %v after the commit", v, u.at.Sub(committed))
		if err := lc.cs.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: liveA1}); err != nil {
			t.Fatal(err)
		}
		waitLive(t, in, 0)
		in.settle(t)
	}
}

// waitLive waits until the instance holds n subscriptions.
func waitLive(t *testing.T, in *liveInstance, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if in.subs.Hub().Stats().Subscriptions == n {
			return
		}
	}
	t.Fatalf("%d subscriptions, want %d", in.subs.Hub().Stats().Subscriptions, n)
}

func TestLiveSubscriberWhoseGrantIsRevokedBeforeTheChangeGetsNothing(t *testing.T) {
	t.Parallel()
	d := liveDB(t)
	alice, bob := newLiveInstance(t, d, "alice", nil), newLiveInstance(t, d, "bob", nil)
	ca, cb := alice.connect(t, "2025-11-25"), bob.connect(t, "2025-11-25")
	ca.subscribe(t, liveA1)
	cb.subscribe(t, liveA1)
	d.revoke(t, "alice", "p", "")
	notified := alice.settle(t).Notified // the revocation itself is checked first
	commitUpdate(t, writer(t, d), "p", "a1", "after the revocation")
	cb.await(t, liveA1, 10*time.Second)
	ca.none(t, alice, notified)
	if n := alice.subs.Hub().Stats().Subscriptions; n != 0 {
		t.Fatalf("the revoked subscription was kept (%d)", n)
	}
}

func TestLiveListenerReconnectsAfterItsBackendIsTerminated(t *testing.T) {
	t.Parallel()
	d := liveDB(t)
	in := newLiveInstance(t, d, "alice", nil)
	lc := in.connect(t, "2025-11-25")
	lc.subscribe(t, liveA1)
	old := in.listener.PID()
	var killed bool
	if err := d.admin.QueryRow(context.Background(), `SELECT pg_terminate_backend($1)`, int32(old)).Scan(&killed); err != nil || !killed {
		t.Fatalf("pg_terminate_backend(%d): %v %v", old, killed, err)
	}
	start := time.Now()
	for in.listener.Connects() < 2 || in.listener.PID() == 0 || in.listener.PID() == old {
		if time.Since(start) > 5*time.Second {
			t.Fatal("the listener did not reconnect within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("reconnected in %v (backend %d -> %d)", time.Since(start), old, in.listener.PID())
	// Notifications may have been lost while disconnected: the subscriber
	// is told its resource possibly changed.
	lc.await(t, liveA1, 10*time.Second)
	committed := commitUpdate(t, writer(t, d), "p", "a1", "after the reconnect")
	u := lc.await(t, liveA1, 10*time.Second)
	t.Logf("a change after the reconnect was notified %v after its commit", u.at.Sub(committed))
}

func TestLiveTwoServerInstancesOnOneDatabaseBothNotifyTheirOwnSubscribers(t *testing.T) {
	t.Parallel()
	d := liveDB(t)
	one, two := newLiveInstance(t, d, "alice", nil), newLiveInstance(t, d, "bob", nil)
	c1, c2 := one.connect(t, "2025-11-25"), two.connect(t, "2026-07-28")
	c1.subscribe(t, liveA1)
	c2.subscribe(t, liveA1)
	waitLive(t, two, 1)
	if one.listener.PID() == two.listener.PID() {
		t.Fatal("the instances share a listening connection")
	}
	committed := commitUpdate(t, writer(t, d), "p", "a1", "seen by both")
	u1, u2 := c1.await(t, liveA1, 10*time.Second), c2.await(t, liveA1, 10*time.Second)
	t.Logf("instance one notified after %v, instance two after %v", u1.at.Sub(committed), u2.at.Sub(committed))
	if s1, s2 := one.subs.Hub().Stats().Notified, two.subs.Hub().Stats().Notified; s1 != 1 || s2 != 1 {
		t.Fatalf("instances notified %d and %d times, want once each", s1, s2)
	}
}

func TestLiveSubscribeToHiddenOrMissingURIAnswersExactlyLikeARead(t *testing.T) {
	t.Parallel()
	d := liveDB(t)
	d.project(t, "q")
	d.textAsset(t, "q", "secret", "s")
	d.grant(t, "bob", "q", "")
	in := newLiveInstance(t, d, "alice", nil)
	lc := in.connect(t, "2025-11-25")
	for _, uri := range []string{
		"asset://project/q/asset/secret", "asset://project/q", "asset://project/p/asset/nope",
		"asset://project/p/asset/a1/nope", "nothing://here", "asset://project/p/asset/%2e%2e", "asset://project/p/asset/'; DROP TABLE x; --",
	} {
		_, rerr := lc.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		serr := lc.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri})
		var re, se *jsonrpc.Error
		if !errors.As(rerr, &re) || !errors.As(serr, &se) {
			t.Fatalf("%s: read %v, subscribe %v: want JSON-RPC errors", uri, rerr, serr)
		}
		if re.Code != se.Code || re.Message != se.Message || strings.Contains(se.Message, "secret") {
			t.Fatalf("%s: subscribe answered %d %q, read %d %q", uri, se.Code, se.Message, re.Code, re.Message)
		}
	}
	if n := in.subs.Hub().Stats().Subscriptions; n != 0 {
		t.Fatalf("%d refused subscriptions kept", n)
	}
}

func TestLiveThousandUpdatesInOneSecondGiveABoundedNumberOfNotifications(t *testing.T) {
	t.Parallel()
	d := liveDB(t)
	in := newLiveInstance(t, d, "alice", nil)
	lc := in.connect(t, "2025-11-25")
	lc.subscribe(t, liveA1)
	w := writer(t, d)
	if _, err := w.Exec(context.Background(), `SET synchronous_commit = off`); err != nil {
		t.Fatal(err)
	}
	// Spread over one second (one commit per millisecond), so the storm
	// spans several coalescing intervals.
	start := time.Now()
	for i := range 1000 {
		commitUpdate(t, w, "p", "a1", fmt.Sprint("storm ", i))
		if ahead := time.Duration(i+1)*time.Millisecond - time.Since(start); ahead > 0 {
			time.Sleep(ahead)
		}
	}
	storm := time.Since(start)
	// The bound holds for the time from the first commit until the hub has
	// handled the last one (on a busy machine the listener may receive the
	// storm later than it was committed, and spread out).
	sent := in.settle(t).Notified // the trailing notification included
	span := time.Since(start)
	n := lc.count()
	bound := 1 + int((span+live.DefaultMinInterval-1)/live.DefaultMinInterval)
	t.Logf("1000 committed updates in %v, handled after %v: %d notifications (bound 1+ceil(d/500ms) = %d)", storm, span, n, bound)
	if int(sent) < n || sent < 1 || sent > int64(bound) {
		t.Fatalf("%d notifications sent (%d received) for 1000 updates handled in %v; want 1..%d", sent, n, span, bound)
	}
	if err := lc.cs.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: liveA1}); err != nil {
		t.Fatal(err)
	}
	waitLive(t, in, 0)
	for i := range 200 {
		commitUpdate(t, w, "p", "a1", fmt.Sprint("after ", i))
	}
	if st := in.settle(t); st.Notified != sent {
		t.Fatalf("%d notifications after unsubscribe", st.Notified-sent)
	}
}
