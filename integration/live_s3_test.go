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
	time.Sleep(500 * time.Millisecond) // the poller takes its baseline
	lc.none(t, 200*time.Millisecond)   // an unchanged object is not a change
	putObject(t, c, env.Bucket, "docs/readme.txt", "text/plain", []byte("v2"))
	lc.await(t, "obj://docs/readme.txt", 2*time.Second)
}
