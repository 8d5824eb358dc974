package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/internal/benchutil"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// TestS3StoreSendsOneRequestPerItem proves, at the round tripper, that a
// gateway read of a planned bundle of n items sends exactly n GETs and no
// other request, and that the template binding adds exactly one HEAD to
// plan its one item.
func TestS3StoreSendsOneRequestPerItem(t *testing.T) {
	t.Parallel()
	env := harness.S3(t)
	w := &wire{}
	store, root := rootStore(t, env, w)
	var targets []core.ResourceTarget
	for i := range 5 {
		obj := putObject(t, root, env.Bucket, fmt.Sprintf("n/%d.txt", i), "text/plain", bytes.Repeat([]byte{'x'}, 1<<(2*i)))
		tg, err := s3store.NewObjectTarget(fmt.Sprintf("s3item://n/%d", i), obj)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, tg)
	}
	pinned := pinnedBundle("s3bundle://n", "n", core.ItemReader(store.Read), targets)
	tmpl, err := store.Binding(core.ResourceDefinition{URITemplate: "s3obj://n/{name}", Name: "one"}, "n/")
	if err != nil {
		t.Fatal(err)
	}
	res := gateway(t, allowAll(), core.ResourceLimits{}, pinned, tmpl)
	ctx := asHost(t.Context())

	w.reset()
	got, err := res.Read(ctx, "s3bundle://n")
	if err != nil || got.Partial() || len(got.Items()) != 5 {
		t.Fatalf("bundle: %v, %v", codes(got), err)
	}
	if g, h, o := w.gets.Load(), w.heads.Load(), w.others.Load(); g != 5 || h != 0 || o != 0 {
		t.Fatalf("bundle of 5: %d GETs, %d HEADs, %d others; want 5, 0, 0", g, h, o)
	}
	w.reset()
	if _, err := res.Read(ctx, "s3obj://n/3.txt"); err != nil {
		t.Fatal(err)
	}
	if g, h, o := w.gets.Load(), w.heads.Load(), w.others.Load(); g != 1 || h != 1 || o != 0 {
		t.Fatalf("template read: %d GETs, %d HEADs, %d others; want 1, 1, 0", g, h, o)
	}
}

// BenchmarkS3StoreRead compares, on one client against the same object, a
// raw GetObject that reads the body with a gateway read of one object
// planned from known identity (one conditional ranged GET), the reader
// called directly, and the template binding (a HEAD to plan, then the
// GET); raw-conditional is the raw GetObject with the same If-Match and
// Range headers, which separates the server's cost of a conditional ranged
// GET from the store's. Run with -count 5 and compare medians.
func BenchmarkS3StoreRead(b *testing.B) {
	env := harness.S3(b)
	client := s3Client(b, env, nil)
	store, err := s3store.OpenBucket(b.Context(), client, env.Bucket, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{1 << 10, 1 << 20} {
		name := fmt.Sprintf("%dKiB", size>>10)
		key := "bench/" + name
		obj := putObject(b, client, env.Bucket, key, "application/octet-stream", bytes.Repeat([]byte{7}, size))
		obj.VersionID = ""
		target, err := s3store.NewObjectTarget("s3item://bench/"+name, obj)
		if err != nil {
			b.Fatal(err)
		}
		pinned := core.ResourceBinding{
			Definition: core.ResourceDefinition{URI: "s3item://bench/" + name, Name: "pinned"},
			Resolver: core.ResolverFunc(func(context.Context, core.ResourceMatch) (core.ResourceReadPlan, error) {
				return core.NewResourceReadPlan(target, target)
			}),
			Reader: core.ItemReader(store.Read),
		}
		tmpl, err := store.Binding(core.ResourceDefinition{URITemplate: "s3obj://bench/{name}", Name: "tmpl"}, "bench/")
		if err != nil {
			b.Fatal(err)
		}
		res := gateway(b, allowAll(), core.ResourceLimits{}, pinned, tmpl)
		ctx := asHost(context.Background())

		b.Run("size="+name+"/raw", func(b *testing.B) {
			b.ReportAllocs()
			defer benchutil.CPU(b)()
			b.SetBytes(int64(size))
			for b.Loop() {
				out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(env.Bucket), Key: aws.String(key)})
				if err != nil {
					b.Fatal(err)
				}
				data, err := io.ReadAll(out.Body)
				out.Body.Close()
				if err != nil || len(data) != size {
					b.Fatalf("read %d bytes: %v", len(data), err)
				}
			}
		})
		b.Run("size="+name+"/raw-conditional", func(b *testing.B) {
			b.ReportAllocs()
			defer benchutil.CPU(b)()
			b.SetBytes(int64(size))
			for b.Loop() {
				out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(env.Bucket), Key: aws.String(key),
					IfMatch: aws.String(obj.ETag), Range: aws.String(fmt.Sprintf("bytes=0-%d", 4<<20))})
				if err != nil {
					b.Fatal(err)
				}
				data, err := io.ReadAll(out.Body)
				out.Body.Close()
				if err != nil || len(data) != size {
					b.Fatalf("read %d bytes: %v", len(data), err)
				}
			}
		})
		b.Run("size="+name+"/gateway", func(b *testing.B) {
			b.ReportAllocs()
			defer benchutil.CPU(b)()
			b.SetBytes(int64(size))
			for b.Loop() {
				got, err := res.Read(ctx, "s3item://bench/"+name)
				if err != nil || got.Partial() {
					b.Fatalf("gateway read: %v", err)
				}
			}
		})
		b.Run("size="+name+"/reader", func(b *testing.B) {
			b.ReportAllocs()
			defer benchutil.CPU(b)()
			b.SetBytes(int64(size))
			for b.Loop() {
				p, err := store.Read(ctx, whole(target))
				if err != nil || p.Len() != int64(size) {
					b.Fatalf("reader: %v", err)
				}
			}
		})
		b.Run("size="+name+"/gateway-head", func(b *testing.B) {
			b.ReportAllocs()
			defer benchutil.CPU(b)()
			b.SetBytes(int64(size))
			for b.Loop() {
				got, err := res.Read(ctx, "s3obj://bench/"+name)
				if err != nil || got.Partial() {
					b.Fatalf("template read: %v", err)
				}
			}
		})
	}
}

// BenchmarkS3StoreOverLimit reads, through the gateway, a bundle of one
// small object and two 64 MiB objects under a 1 MiB item limit, planned
// from known identity. The big ones are budget_exceeded issues: the store
// asks for one byte of each (for access, identity and size), so B/op
// (everything one read allocates, a bound on its peak heap) and held-B
// (what its result keeps) stay far below the 128 MiB stored.
func BenchmarkS3StoreOverLimit(b *testing.B) {
	const big = 64 << 20
	env := harness.S3(b)
	client := s3Client(b, env, nil)
	store, err := s3store.OpenBucket(b.Context(), client, env.Bucket, nil)
	if err != nil {
		b.Fatal(err)
	}
	var targets []core.ResourceTarget
	for i, size := range []int{5, big, big} {
		key := fmt.Sprintf("overlimit/%d", i)
		obj := putObject(b, client, env.Bucket, key, "application/octet-stream", bytes.Repeat([]byte{'x'}, size))
		obj.VersionID = ""
		t, err := s3store.NewObjectTarget(fmt.Sprintf("s3item://overlimit/%d", i), obj)
		if err != nil {
			b.Fatal(err)
		}
		targets = append(targets, t)
	}
	bundle := pinnedBundle("s3bundle://overlimit", "overlimit", core.ItemReader(store.Read), targets)
	res := gateway(b, allowAll(), core.ResourceLimits{MaxItemBytes: 1 << 20}, bundle)
	ctx := asHost(context.Background())
	read := func() any {
		got, err := res.Read(ctx, "s3bundle://overlimit")
		if err != nil || !got.Partial() || len(got.Items()) != 2 || len(got.Issues()) != 2 {
			b.Fatalf("read: %v", err)
		}
		return got
	}
	b.ReportAllocs()
	stop := benchutil.CPU(b)
	for b.Loop() {
		read()
	}
	stop()
	b.ReportMetric(float64(2*big), "stored-over-limit-B")
	benchutil.Held(b, read)
}
