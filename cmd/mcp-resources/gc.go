package main

import (
	"os"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"sync"
)

// The garbage collector's defaults for serve. A server that waits between
// requests pays for every collection cycle with thread wake-ups as well as
// the marking itself, so while its live heap is small a higher GOGC trades
// a few megabytes for markedly less CPU per request (cmd/mcp-peers, the
// same build run at GOGC=100 as its --baseline; docs/operations.md). The
// trade is bounded in bytes, not in proportion: after each collection
// serve sets GOGC so that the heap may grow by gcHeadroom past what is
// live, between Go's own 100 and defaultGCPercent. A small heap (one
// client on stdio) gets 200; a heap of gcHeadroom or more (a thousand
// sessions, a big resources file, many clients) gets Go's 100, where a
// proportional headroom would hold tens of megabytes for little CPU. The
// soft memory limit keeps the heap from growing towards the container's
// limit: near it the collector runs as often as it must.
const (
	// defaultGCPercent is serve's GOGC for a small live heap when neither
	// GOGC nor GOMEMLIMIT is set.
	defaultGCPercent = 200
	// gcHeadroom is how far the heap may grow past its live bytes
	// before the next collection, while that is at most defaultGCPercent
	// and at least 100 percent of them.
	gcHeadroom = 16 << 20
	// defaultMemoryLimit is serve's soft memory limit when neither GOGC
	// nor GOMEMLIMIT is set and the process has no cgroup memory limit.
	defaultMemoryLimit = 512 << 20
)

// gcDefaults returns the GC percent and soft memory limit serve sets, or
// ok false when the operator set GOGC or GOMEMLIMIT (the Go runtime's own
// handling of both then applies unchanged). cgroupLimit is the process's
// cgroup memory limit in bytes, 0 when it has none: the soft limit is
// three quarters of it, leaving room for memory the Go heap does not
// count (stacks, the runtime's own, the kernel's page cache of the
// process).
func gcDefaults(getenv func(string) string, cgroupLimit int64) (percent int, limit int64, ok bool) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return 0, 0, false
	}
	limit = defaultMemoryLimit
	if cgroupLimit > 0 {
		limit = cgroupLimit / 4 * 3
	}
	return defaultGCPercent, limit, true
}

// gcPercentFor is serve's GOGC for a live heap of live bytes: the percent
// that lets it grow by gcHeadroom, in steps of 10, between 100 and
// defaultGCPercent.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return defaultGCPercent
	}
	return min(max(int(gcHeadroom*100/live)/10*10, 100), defaultGCPercent)
}

// gcTuner sets GOGC after each collection from the live heap it left
// (gcPercentFor). A finalizer on an object that nothing references is its
// hook: it runs once the collector has found the object unreachable,
// that is after each cycle, and arms the next; nothing runs while the
// process allocates nothing.
// Its fields are gcState's, under its lock.
type gcTuner struct {
	stopped bool
	percent int // the GOGC set last
	sample  []rtmetrics.Sample
}

func newGCTuner(percent int) *gcTuner {
	t := &gcTuner{percent: percent, sample: []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.arm()
	return t
}

// gcHook is the object whose finalizer is the tuner's hook.
type gcHook struct{ t *gcTuner }

func (t *gcTuner) arm() { runtime.SetFinalizer(&gcHook{t}, (*gcHook).collected) }

func (h *gcHook) collected() {
	t := h.t
	gcState.Lock() // not after the last serve has restored the settings
	defer gcState.Unlock()
	if t.stopped {
		return
	}
	rtmetrics.Read(t.sample)
	if t.sample[0].Value.Kind() == rtmetrics.KindUint64 {
		if p := gcPercentFor(t.sample[0].Value.Uint64()); p != t.percent {
			t.percent = p
			debug.SetGCPercent(p)
		}
	}
	t.arm()
}

// gcState counts the serve runs of the process that hold the defaults
// (tests run several at once): the first sets them, the last restores.
var gcState struct {
	sync.Mutex
	holders    int
	oldPercent int
	oldLimit   int64
	percent    int
	limit      int64
	tuner      *gcTuner
}

// applyGCDefaults sets serve's GC defaults unless the environment sets
// its own, and returns what restores the previous settings once no other
// serve of the process holds them (serve runs in-process in tests).
func applyGCDefaults() (percent int, limit int64, restore func()) {
	percent, limit, ok := gcDefaults(os.Getenv, cgroupMemoryLimit())
	if !ok {
		return 0, 0, func() {}
	}
	st := &gcState
	st.Lock()
	defer st.Unlock()
	if st.holders == 0 {
		st.oldPercent = debug.SetGCPercent(percent)
		st.oldLimit = debug.SetMemoryLimit(limit)
		st.percent, st.limit = percent, limit
		st.tuner = newGCTuner(percent)
	}
	st.holders++
	return st.percent, st.limit, sync.OnceFunc(func() {
		st.Lock()
		defer st.Unlock()
		if st.holders--; st.holders == 0 {
			st.tuner.stopped = true
			debug.SetGCPercent(st.oldPercent)
			debug.SetMemoryLimit(st.oldLimit)
		}
	})
}

// cgroupMemoryLimit reads the memory limit of the process's cgroup as a
// container sees it (cgroup v2, then v1), 0 when there is none or it
// cannot be read.
func cgroupMemoryLimit() int64 {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		return parseCgroupLimit(string(b))
	}
	return 0
}

// parseCgroupLimit reads one memory.max or memory.limit_in_bytes value:
// "max", or a v1 value near the largest int64 (v1's "no limit"), is 0.
func parseCgroupLimit(s string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 || n >= 1<<60 {
		return 0
	}
	return n
}
