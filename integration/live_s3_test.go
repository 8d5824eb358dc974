package integration

import (
	"context"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

func TestLiveS3PollerNotifiesAnOverwrittenObjectAndNotAnUnchangedOne(t *testing.T) {
	t.Parallel()
	env := harness.S3(t)
	c := s3Client(t, env, nil)
	putObject(t, c, env.Bucket, "docs/readme.txt", "text/plain", []byte("v1"))
	b, err := s3store.OpenBucket(context.Background(), c, env.Bucket, nil)
	if err != nil {
		t.Fatal(err)
	}
	binding, err := b.Binding(core.ResourceDefinition{URITemplate: "obj://docs/{name}", Name: "doc"}, "docs/")
	if err != nil {
		t.Fatal(err)
	}
	res := gateway(t, allowAll(), core.ResourceLimits{}, binding)
	poller := s3store.NewPoller(b, &s3store.PollerOptions{Interval: 100 * time.Millisecond, HeadsPerSecond: 20})
	server, subs := liveServer(t, res, []core.ChangeSource{poller}, nil, "alice")

	lc := (&liveInstance{server: server, subs: subs}).connect(t, "2025-11-25")
	lc.subscribe(t, "obj://docs/readme.txt")
	// The hub tells the poller the key to track when it next dispatches:
	// rounds that begin after that take the baseline, then see the same
	// object again. Ordered by the poller's own count of rounds.
	rounds := func(n int64) {
		t.Helper()
		want := poller.Rounds() + n
		for deadline := time.Now().Add(20 * time.Second); poller.Rounds() < want; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the poller completed %d rounds in 20 s, want %d", poller.Rounds(), want)
			}
		}
	}
	for deadline := time.Now().Add(10 * time.Second); poller.Tracking() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the poller does not track the subscribed object after 10 s")
		}
	}
	rounds(3) // one that may have begun before the key was tracked, the baseline, one more
	if st := subs.Hub().Stats(); st.Changes != 0 || st.Notified != 0 {
		t.Fatalf("an unchanged object was reported: %+v", st)
	}
	putObject(t, c, env.Bucket, "docs/readme.txt", "text/plain", []byte("v2"))
	lc.await(t, "obj://docs/readme.txt", 20*time.Second)
}
