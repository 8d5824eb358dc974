package integration

import (
	"testing"
	"time"
)

// TestPGStoreListenerNotifiesTheIndexAndProjectBundles proves the store's
// listener (Source.Listener) gives the store's bundle and index targets
// (planned by the generic machinery) the change keys of migration 3's key
// payloads: a new asset (PROJECT/ASSET) notifies its project's bundle and
// not the index, and a renamed project ("projects") notifies the index.
func TestPGStoreListenerNotifiesTheIndexAndProjectBundles(t *testing.T) {
	t.Parallel()
	d := liveDB(t)
	in := newLiveInstance(t, d, "alice", nil)
	lc := in.connect(t, "2025-11-25")
	const bundle = "asset://project/p"
	lc.subscribe(t, bundle)
	lc.subscribe(t, "asset://projects")
	waitLive(t, in, 2)
	before := in.settle(t).Notified
	lc.drain()

	d.textAsset(t, "p", "a3", "three")
	if st := in.settle(t); st.Notified-before != 1 {
		t.Fatalf("a new asset: %d notifications, want 1 (the bundle's, not the index's)", st.Notified-before)
	}
	if u := lc.await(t, bundle, 10*time.Second); u.uri != bundle {
		t.Fatalf("a new asset notified %s", u.uri)
	}

	d.exec(t, `UPDATE mcpres.projects SET title = 'Renamed' WHERE id = 'p'`)
	lc.await(t, "asset://projects", 10*time.Second)
}

// TestPGStoreListenerProjectWideGrantChangeReachesEveryAssetOfTheProject
// proves a change to a project-wide grant (payload PROJECT/*) reaches the
// subscriptions of every asset of that project and of no other project:
// alice's project grant on p loses disclose_issue_uri, which changes what a
// read of a1 and of a2 would show her (their grant flags), so both are
// notified; her subscription to an asset of q is not even re-checked.
func TestPGStoreListenerProjectWideGrantChangeReachesEveryAssetOfTheProject(t *testing.T) {
	t.Parallel()
	d := liveDB(t)
	d.project(t, "q")
	d.textAsset(t, "q", "qa", "elsewhere")
	d.grant(t, "alice", "q", "")
	in := newLiveInstance(t, d, "alice", nil)
	lc := in.connect(t, "2025-11-25")
	const a2, qa = "asset://project/p/asset/a2", "asset://project/q/asset/qa"
	for _, uri := range []string{liveA1, a2, qa} {
		lc.subscribe(t, uri)
	}
	waitLive(t, in, 3)
	base := in.settle(t)
	lc.drain()

	d.exec(t, `UPDATE mcpres.grants SET disclose_issue_uri = false WHERE principal = 'alice' AND project_id = 'p' AND asset_id IS NULL`)
	st := in.settle(t)
	if n := st.Checks - base.Checks; n != 2 {
		t.Fatalf("%d subscriptions re-checked, want 2 (a1 and a2, not q's asset)", n)
	}
	if n := st.Notified - base.Notified; n != 2 {
		t.Fatalf("%d notifications, want 2 (a1 and a2)", n)
	}
	seen := map[string]bool{}
	for deadline := time.After(10 * time.Second); len(seen) < 2; {
		select {
		case u := <-lc.ch:
			seen[u.uri] = true
		case <-deadline:
			t.Fatalf("after a project-wide grant change, received %v; want %s and %s", seen, liveA1, a2)
		}
	}
	if !seen[liveA1] || !seen[a2] || seen[qa] {
		t.Fatalf("a grant change in project p notified %v, want %s and %s", seen, liveA1, a2)
	}
}
