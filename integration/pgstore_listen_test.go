package integration

import (
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// TestPGStoreListenerNotifiesTheIndexAndProjectBundles proves the reference
// Listener gives the store's bundle and index targets (planned by the
// generic machinery) the change keys the triggers report: a new asset
// notifies its project's bundle and not the index, and a renamed project
// notifies the index.
func TestPGStoreListenerNotifiesTheIndexAndProjectBundles(t *testing.T) {
	t.Parallel()
	d := liveDB(t)
	in := newLiveInstance(t, d, "alice", nil)
	lc := in.connect(t, "2025-11-25")
	const bundle = "asset://project/p"
	lc.subscribe(t, bundle)
	lc.subscribe(t, postgres.IndexURI)
	waitLive(t, in, 2)
	lc.drain()

	d.textAsset(t, "p", "a3", "three")
	lc.await(t, bundle, time.Second)
	select {
	case u := <-lc.ch:
		if u.uri == postgres.IndexURI {
			t.Fatalf("a new asset notified the index")
		}
	case <-time.After(300 * time.Millisecond):
	}

	d.exec(t, `UPDATE mcpres.projects SET title = 'Renamed' WHERE id = 'p'`)
	lc.await(t, postgres.IndexURI, 2*time.Second)
}
