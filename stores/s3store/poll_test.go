package s3store

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"go.phpboyscout.uk/mcp/resources/core"

	"go.phpboyscout.uk/mcp/resources/live"
)

func TestPollerTracksOnlyItsBucketAndReportsChangesAfterTheBaseline(t *testing.T) {
	b, err := OpenBucket(context.Background(), s3.New(s3.Options{Region: "us-east-1"}), "bucket-a", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := NewPoller(b, nil)
	mine, _ := NewObjectTarget("obj://x", Object{Bucket: "bucket-a", Key: "k/1", ETag: `"e"`, Size: 1})
	theirs, _ := NewObjectTarget("obj://y", Object{Bucket: "bucket-b", Key: "k/1", ETag: `"e"`, Size: 1})
	other, _ := core.NewResourceTarget("obj://z", "item", nil)
	if got := p.ChangeKeys(mine); !slices.Equal(got, []string{changeKey("bucket-a", "k/1")}) {
		t.Fatalf("keys of its own object: %v", got)
	}
	if p.ChangeKeys(theirs) != nil || p.ChangeKeys(other) != nil {
		t.Fatal("keys for a target of another bucket or store")
	}
	p.TrackKeys([]string{changeKey("bucket-a", "k/1"), changeKey("bucket-b", "k/2"), "pg:asset:p/a"})
	if len(p.keys) != 1 {
		t.Fatalf("tracked %v, want k/1 only", p.keys)
	}
	if p.record("k/1", "e1") {
		t.Fatal("the baseline counted as a change")
	}
	if p.record("k/1", "e1") {
		t.Fatal("an unchanged identity counted as a change")
	}
	if !p.record("k/1", "e2") || !p.record("k/1", "-") {
		t.Fatal("a new ETag or a deletion was not a change")
	}
	p.TrackKeys(nil)
	if p.record("k/1", "e3") {
		t.Fatal("an untracked object reported a change")
	}
}

// The hub tells a poller what to watch: it must stay a live.Tracker.
var _ live.Tracker = (*Poller)(nil)
