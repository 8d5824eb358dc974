// Package benchutil holds the measurements the module's benchmarks report
// besides time and allocations: process CPU time per operation, which a
// machine shared with other work disturbs far less than wall time, and the
// heap a result holds.
package benchutil

import (
	"runtime"
	"runtime/metrics"
	"slices"
	"syscall"
	"testing"
	"time"
)

// CPU starts measuring the CPU time (user and system, of every thread of the
// process) that the benchmark's loop uses; call the function it returns
// right after the loop to report it as cpu-ns/op. It counts the runtime's
// own threads (GC, scheduler) too, which is what a read costs a server.
func CPU(b *testing.B) (stop func()) {
	start := cpuTime()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// liveHeap is the heap memory of live objects as of the last GC.
const liveHeap = "/gc/heap/live:bytes"

// Held reports, as held-B, how many heap bytes one value that op returns
// keeps alive: the live heap after a GC while holding heldSamples of them,
// less the live heap after a GC before op ran, divided by heldSamples. With
// a read as op this is what one result holds once the read is done; what
// the read allocated on the way (its peak over what it holds) is bounded
// by the B/op of ReportAllocs, since a read cannot hold at once more than
// it allocates. Call it outside the timed loop.
func Held(b *testing.B, op func() any) {
	const heldSamples = 64
	vs := make([]any, heldSamples)
	settle() // sync.Pool victims survive one GC: collect twice
	base := heapLive()
	for i := range vs {
		vs[i] = op()
	}
	settle()
	held := heapLive()
	runtime.KeepAlive(vs)
	runtime.KeepAlive(op) // and what op reads from
	if held < base {
		held = base
	}
	b.ReportMetric(float64(held-base)/heldSamples, "held-B")
}

func settle() {
	runtime.GC()
	runtime.GC()
}

func heapLive() uint64 {
	s := []metrics.Sample{{Name: liveHeap}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// Ratio times op and base in turns, one of each per iteration of the
// benchmark's loop (call it in place of the loop), and reports the median
// time of each (name-us and base-us) and the ratio of the medians as
// name/base. On a machine shared with other work the speed of both moves
// alike within one iteration, so the ratio holds where two sub-benchmarks
// run one after the other can differ by their neighbours' load.
func Ratio(b *testing.B, name string, base, op func()) {
	var bs, ops []time.Duration
	for b.Loop() {
		t0 := time.Now()
		base()
		t1 := time.Now()
		op()
		bs, ops = append(bs, t1.Sub(t0)), append(ops, time.Since(t1))
	}
	if len(bs) == 0 {
		return
	}
	mb, mo := median(bs), median(ops)
	b.ReportMetric(float64(mb)/1e3, "base-us")
	b.ReportMetric(float64(mo)/1e3, name+"-us")
	b.ReportMetric(float64(mo)/float64(mb), name+"/base")
}

// median returns the median of ds, which it sorts.
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}
