package integration

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// rootStore opens env's bucket with the root client, counted by w, for the
// fixed principal "host".
func rootStore(t *testing.T, env harness.S3Env, w *wire) (*s3store.Bucket, *s3.Client) {
	t.Helper()
	c := s3Client(t, env, w)
	b, err := s3store.OpenBucket(t.Context(), c, env.Bucket, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b, c
}

func asHost(ctx context.Context) context.Context {
	return core.WithCaller(ctx, core.Caller{Principal: "host"})
}

// TestS3StoreObjectOverwrittenBetweenPlanAndReadIsNeverServed proves that
// S3 itself refuses the new version (412 to If-Match on the planned ETag):
// the overwritten item is read_failed, its sibling survives, no item holds
// the new bytes, and each item cost exactly one GET.
func TestS3StoreObjectOverwrittenBetweenPlanAndReadIsNeverServed(t *testing.T) {
	t.Parallel()
	env := harness.S3(t)
	w := &wire{}
	store, root := rootStore(t, env, w)
	putObject(t, root, env.Bucket, "docs/a.txt", "text/plain", []byte("first a"))
	putObject(t, root, env.Bucket, "docs/b.txt", "text/plain", []byte("stable b"))

	tp := allowTargets()
	var overwritten atomic.Bool
	tp.Read = func(ctx context.Context, tg core.ResourceTarget) error {
		if tg.URI() == "s3item://bundle/0" && overwritten.CompareAndSwap(false, true) {
			putObject(t, root, env.Bucket, "docs/a.txt", "text/plain", []byte("SECOND!"))
		}
		return nil
	}
	res := gateway(t, core.PerTarget(tp), core.ResourceLimits{}, bundleBinding(store, "s3bundle://test/ab", "docs/a.txt", "docs/b.txt"))
	w.reset()
	got, err := res.Read(asHost(t.Context()), "s3bundle://test/ab")
	gets, heads := w.gets.Load(), w.heads.Load()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if !overwritten.Load() {
		t.Fatal("the object was never overwritten between plan and read")
	}
	if c := codes(got); len(c) != 1 || c["s3item://bundle/0"] != core.IssueReadFailed {
		t.Fatalf("issues %v, want s3item://bundle/0 read_failed only", c)
	}
	b := bodies(got)
	if b["s3item://bundle/1"] != "stable b" || len(b) != 1 {
		t.Fatalf("items %v, want only the stable sibling", b)
	}
	for _, it := range got.Items() {
		if strings.Contains(it.Text(), "SECOND") || strings.Contains(string(it.Blob()), "SECOND") {
			t.Fatal("the new version was served")
		}
	}
	// Neither the planned identity (bucket, key, ETag) nor S3's error
	// reaches the client: not in items, metadata or the report.
	head, err := store.Head(asHost(t.Context()), "docs/b.txt")
	if err != nil {
		t.Fatal(err)
	}
	public := string(got.Meta()) + string(got.Report())
	for _, it := range got.Items() {
		public += it.URI() + it.Text() + string(it.Meta())
	}
	for _, secret := range []string{env.Bucket, "docs/a.txt", strings.Trim(head.ETag, `"`), "PreconditionFailed", "pre-conditions"} {
		if strings.Contains(public, secret) {
			t.Fatalf("the result shows %q to the client: %s", secret, public)
		}
	}
	// The overwrite's own PUT is in "others"; the read itself is 2 HEADs
	// (planning) and one GET per item.
	if g, h := gets, heads; g != 2 || h != 2 {
		t.Fatalf("%d GETs and %d HEADs for a two-item bundle, want 2 and 2", g, h)
	}
}

// TestS3StorePlanThatNamesAVersionReturnsThatVersion proves a target pinned
// to a version id (as a database row that references an object would pin
// it) reads that version after the key is overwritten, and even after it
// is deleted, in one GET.
func TestS3StorePlanThatNamesAVersionReturnsThatVersion(t *testing.T) {
	t.Parallel()
	env := harness.S3(t)
	w := &wire{}
	store, root := rootStore(t, env, w)
	v1 := putObject(t, root, env.Bucket, "docs/report.json", "application/json", []byte(`{"v":1}`))
	if v1.VersionID == "" {
		t.Fatal("the harness bucket is not versioned")
	}
	target, err := s3store.NewObjectTarget("asset://project/1/report", v1)
	if err != nil {
		t.Fatal(err)
	}
	binding := core.ResourceBinding{
		Definition: core.ResourceDefinition{URI: "asset://project/1/report", Name: "report"},
		Resolver: core.ResolverFunc(func(context.Context, core.ResourceMatch) (core.ResourceReadPlan, error) {
			return core.NewResourceReadPlan(target, target)
		}),
		Reader: core.ItemReader(store.Read),
	}
	res := gateway(t, allowAll(), core.ResourceLimits{}, binding)
	putObject(t, root, env.Bucket, "docs/report.json", "application/json", []byte(`{"v":2}`))

	// A version that does not exist, or that S3 cannot even parse, is
	// unavailable on that read.
	for _, version := range []string{"01M8PC4JE8F4HG7CZX4TC23E4Z", "not-a-version"} {
		missing := v1
		missing.VersionID = version
		tg, err := s3store.NewObjectTarget("asset://project/1/missing", missing)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Read(asHost(t.Context()), whole(tg)); core.KindOf(err) != core.FailureUnavailable {
			t.Errorf("version %q: %v, want unavailable", version, err)
		}
	}

	for _, step := range []string{"after an overwrite", "after a delete"} {
		w.reset()
		got, err := res.Read(asHost(t.Context()), "asset://project/1/report")
		if err != nil {
			t.Fatalf("%s: read: %v", step, err)
		}
		items := got.Items()
		if got.Partial() || len(items) != 1 || items[0].IsBlob() || items[0].Text() != `{"v":1}` || items[0].MIMEType() != "application/json" {
			t.Fatalf("%s: got %v partial=%v, want the named version as JSON text", step, bodies(got), got.Partial())
		}
		if g := w.gets.Load(); g != 1 || w.heads.Load() != 0 {
			t.Fatalf("%s: %d GETs, %d HEADs, want one GET", step, g, w.heads.Load())
		}
		if _, err := root.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: aws.String(env.Bucket), Key: aws.String("docs/report.json")}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestS3StoreBindingServesTheCurrentObjectAndRefusesItOnceDeleted proves
// the template binding reads the object under the prefix that the capture
// names, and that an object deleted between plan and read is unavailable
// (the whole read fails as a missing object does), not served from the
// bucket's history.
func TestS3StoreBindingServesTheCurrentObjectAndRefusesItOnceDeleted(t *testing.T) {
	t.Parallel()
	env := harness.S3(t)
	store, root := rootStore(t, env, nil)
	putObject(t, root, env.Bucket, "docs/a.txt", "text/markdown", []byte("# a"))
	binding, err := store.Binding(core.ResourceDefinition{URITemplate: "s3obj://docs/{name}", Name: "doc"}, "docs/")
	if err != nil {
		t.Fatal(err)
	}
	tp := allowTargets()
	var deleteNow atomic.Bool
	tp.Read = func(ctx context.Context, tg core.ResourceTarget) error {
		if deleteNow.Load() {
			_, err := root.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(env.Bucket), Key: aws.String("docs/a.txt")})
			return err
		}
		return nil
	}
	res := gateway(t, core.PerTarget(tp), core.ResourceLimits{}, binding)
	got, err := res.Read(asHost(t.Context()), "s3obj://docs/a.txt")
	if err != nil || bodies(got)["s3obj://docs/a.txt"] != "# a" || got.Items()[0].MIMEType() != "text/markdown" {
		t.Fatalf("read: %v, %v", err, got)
	}
	deleteNow.Store(true)
	_, err = res.Read(asHost(t.Context()), "s3obj://docs/a.txt")
	if core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("read of an object deleted after planning: %v, want unavailable, as a missing object", err)
	}
}

// TestS3StoreEmptyObjectsAreEmptyTextOrBlobInOneRequest proves an empty
// object is empty text or an empty blob by its MIME type, whether the plan
// knows it is empty or not (the ranged GET then answers 416), in one GET;
// and that text that is not UTF-8 is invalid_content, not retryable.
func TestS3StoreEmptyObjectsAreEmptyTextOrBlobInOneRequest(t *testing.T) {
	t.Parallel()
	env := harness.S3(t)
	w := &wire{}
	store, root := rootStore(t, env, w)
	text := putObject(t, root, env.Bucket, "e/empty.txt", "text/plain; charset=utf-8", nil)
	blob := putObject(t, root, env.Bucket, "e/empty.bin", "application/octet-stream", nil)
	bad := putObject(t, root, env.Bucket, "e/latin1.txt", "text/plain", []byte("caf\xe9"))
	unknown := blob
	unknown.Size = -1
	unknown.VersionID = ""
	var targets []core.ResourceTarget
	for i, o := range []s3store.Object{text, blob, unknown, bad} {
		tg, err := s3store.NewObjectTarget("s3item://empty/"+string(rune('a'+i)), o)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, tg)
	}
	binding := pinnedBundle("s3bundle://empty", "empty", core.ItemReader(store.Read), targets)
	w.reset()
	got, err := gateway(t, allowAll(), core.ResourceLimits{}, binding).Read(asHost(t.Context()), "s3bundle://empty")
	if err != nil {
		t.Fatal(err)
	}
	items := got.Items()[1:] // after the warning: the Latin-1 text is missing
	if len(items) != 3 {
		t.Fatalf("%d items, want 3", len(items))
	}
	if items[0].IsBlob() || items[0].Text() != "" || !items[1].IsBlob() || len(items[1].Blob()) != 0 || !items[2].IsBlob() || len(items[2].Blob()) != 0 {
		t.Fatalf("items %v, want empty text, empty blob, empty blob", bodies(got))
	}
	if c := codes(got); len(c) != 1 || c["s3item://empty/d"] != core.IssueInvalidContent {
		t.Fatalf("issues %v, want the Latin-1 text as invalid_content", c)
	}
	if g := w.gets.Load(); g != 4 {
		t.Fatalf("%d GETs for four items, want 4", g)
	}
}

// TestS3StoreListPlansABoundedPrefixFromIdentityOnly proves Bucket.List
// returns at most MaxListKeys objects under the prefix, in key order, with
// ETag and size and no GET; that objects it returns read back exactly when
// pinned by its ETag; and that an object overwritten after the listing is
// refused (412) rather than served new.
func TestS3StoreListPlansABoundedPrefixFromIdentityOnly(t *testing.T) {
	t.Parallel()
	env := harness.S3(t)
	w := &wire{}
	c := s3Client(t, env, w)
	store, err := s3store.OpenBucket(t.Context(), c, env.Bucket, &s3store.Options{MaxListKeys: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"l/a", "l/b", "l/c", "l/d", "other/x", "lx"} {
		putObject(t, c, env.Bucket, k, "text/plain", []byte("body of "+k))
	}
	ctx := asHost(t.Context())
	w.reset()
	objs, truncated, err := store.List(ctx, "l/")
	if err != nil {
		t.Fatal(err)
	}
	if w.gets.Load() != 1 || w.heads.Load() != 0 {
		// The listing itself is one GET of the bucket, never of an object.
		t.Fatalf("listing sent %d GETs and %d HEADs, want the one listing request", w.gets.Load(), w.heads.Load())
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
		if o.ETag == "" || o.Size != int64(len("body of "+o.Key)) {
			t.Errorf("%s: identity %+v", o.Key, o)
		}
	}
	if strings.Join(keys, ",") != "l/a,l/b,l/c" || !truncated {
		t.Fatalf("listed %q (truncated=%v), want l/a,l/b,l/c and truncated", keys, truncated)
	}
	if _, _, err := store.List(ctx, "l"); !errors.As(err, new(*s3store.KeyError)) {
		t.Fatalf("a prefix without a trailing slash: %v, want a *s3store.KeyError", err)
	}

	listed := objs[1]
	listed.ContentType = "text/plain"
	target, err := s3store.NewObjectTarget("s3item://l/b", listed)
	if err != nil {
		t.Fatal(err)
	}
	p, err := store.Read(ctx, whole(target))
	if err != nil || p.Text() != "body of l/b" {
		t.Fatalf("read of a listed object: %q, %v", p.Text(), err)
	}
	putObject(t, c, env.Bucket, "l/b", "text/plain", []byte("BODY OF L/B"))
	if p, err := store.Read(ctx, whole(target)); !errors.Is(err, s3store.ErrChanged) {
		t.Fatalf("read of a listed object overwritten since: %q, %v; want ErrChanged", p.Text(), err)
	}
}
