package integration

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// heapProbe measures what a piece of code allocates and the peak of live
// heap objects while it runs. It is only meaningful in a test that does not
// run in parallel with others.
type heapProbe struct {
	allocs, peak uint64
}

func readMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// measureHeap runs f and returns the bytes it allocated (exact:
// runtime.ReadMemStats flushes every per-P cache) and the peak rise of live
// heap objects sampled every 200µs while it ran.
func measureHeap(f func()) heapProbe {
	const liveName = "/memory/classes/heap/objects:bytes"
	var ms runtime.MemStats
	runtime.GC()
	base := readMetric(liveName)
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			if live := readMetric(liveName); live > peak {
				peak = live
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	f()
	close(stop)
	wg.Wait()
	runtime.ReadMemStats(&ms)
	p := heapProbe{allocs: ms.TotalAlloc - before}
	if peak > base {
		p.peak = peak - base
	}
	return p
}

// TestS3StoreObjectOverTheItemLimitIsNeverFetchedNorHeld proves that a 64
// MiB object under a 1 MiB item limit is budget_exceeded while its sibling
// survives, that the bytes received for it at the transport stay under 2
// MiB, and that the heap never holds it: whether the plan knows the size
// (the GET asks for one byte) or not (the GET asks for limit+1 bytes and
// the body is closed unread once Content-Range shows the total).
//
// Not parallel: the heap measurement must see this test alone.
func TestS3StoreObjectOverTheItemLimitIsNeverFetchedNorHeld(t *testing.T) {
	env := harness.S3(t)
	w := &wire{}
	store, _ := rootStore(t, env, w)
	root := s3Client(t, env, nil)
	const size, limit = 64 << 20, 1 << 20
	big := putObject(t, root, env.Bucket, "big/object.bin", "application/octet-stream", bytes.Repeat([]byte("0123456789abcdef"), size/16))
	small := putObject(t, root, env.Bucket, "big/small.txt", "text/plain", []byte("small"))
	runtime.GC()

	for _, tc := range []struct {
		name      string
		knownSize bool
	}{{"size known from the plan", true}, {"size unknown to the plan", false}} {
		t.Run(tc.name, func(t *testing.T) {
			obj := big
			obj.VersionID = ""
			if !tc.knownSize {
				obj.Size = -1
			}
			bigT, err := s3store.NewObjectTarget("s3item://big/0", obj)
			if err != nil {
				t.Fatal(err)
			}
			smallT, _ := s3store.NewObjectTarget("s3item://big/1", small)
			req, _ := core.NewResourceTarget("s3bundle://big", "bundle", nil)
			binding := core.ResourceBinding{
				Definition: core.ResourceDefinition{URI: "s3bundle://big", Name: "big"},
				Resolver: core.ResolverFunc(func(context.Context, core.ResourceMatch) (core.ResourceReadPlan, error) {
					return core.NewResourceReadPlan(req, bigT, smallT)
				}),
				Reader: core.ItemReader(store.Read),
			}
			res := gateway(t, allowAll(), core.ResourceLimits{MaxItemBytes: limit}, binding)

			// The gateway read: a budget issue for the big item only.
			var got *core.ResourceResult
			w.reset()
			probe := measureHeap(func() { got, err = res.Read(asHost(context.Background()), "s3bundle://big") })
			received, gets := w.received.Load(), w.gets.Load()
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if c := codes(got); len(c) != 1 || c["s3item://big/0"] != core.IssueBudgetExceeded {
				t.Fatalf("issues %v, want s3item://big/0 budget_exceeded only", c)
			}
			if b := bodies(got); b["s3item://big/1"] != "small" {
				t.Fatalf("items %v, want the small sibling", b)
			}
			if gets != 2 {
				t.Fatalf("%d GETs for two items, want 2", gets)
			}
			t.Logf("received %d bytes at the transport, allocated %d bytes, live heap peak +%d bytes", received, probe.allocs, probe.peak)
			if received >= 2<<20 {
				t.Fatalf("received %d bytes for a bundle with a 64 MiB item under a 1 MiB limit, want under 2 MiB", received)
			}
			if probe.allocs >= 8<<20 || probe.peak >= 8<<20 {
				t.Fatalf("the read allocated %d bytes (live peak +%d); want well under the 64 MiB object (< 8 MiB)", probe.allocs, probe.peak)
			}

			// The reader alone reports the stored size.
			_, err = store.Read(asHost(t.Context()), core.ReadItem{Target: bigT, Limit: limit})
			var tl *core.TooLargeError
			if !errors.As(err, &tl) || tl.Size != size {
				t.Fatalf("reader: %v, want TooLarge(%d)", err, size)
			}
		})
	}
}
