package main

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
)

// The garbage collector's defaults for serve. A server that waits between
// requests pays for every collection cycle with thread wake-ups as well as
// the marking itself; its live heap is small and bounded by its limits
// (items, bytes, concurrent requests), so a higher GOGC trades a few
// megabytes of heap for markedly less CPU per request (cmd/mcp-peers, the
// same build run at GOGC=100 as its --baseline). 200, not more: over 2,000
// same-row reads on stdio, 400 saved a further 6% of CPU per read for 22%
// more resident memory (docs/operations.md). The soft memory limit keeps that trade from
// growing the heap towards the container's limit: near it the collector
// runs as often as it must.
const (
	// defaultGCPercent is serve's GOGC when neither GOGC nor GOMEMLIMIT
	// is set.
	defaultGCPercent = 200
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

// gcState counts the serve runs of the process that hold the defaults
// (tests run several at once): the first sets them, the last restores.
var gcState struct {
	sync.Mutex
	holders    int
	oldPercent int
	oldLimit   int64
	percent    int
	limit      int64
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
	}
	st.holders++
	return st.percent, st.limit, sync.OnceFunc(func() {
		st.Lock()
		defer st.Unlock()
		if st.holders--; st.holders == 0 {
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
