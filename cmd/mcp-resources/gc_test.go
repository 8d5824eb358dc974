package main

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestGCDefaultsYieldToTheEnvironment(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, tc := range []struct {
		name        string
		env         map[string]string
		cgroup      int64
		percent     int
		limit       int64
		wantApplied bool
	}{
		{"neither set, no cgroup limit", nil, 0, defaultGCPercent, defaultMemoryLimit, true},
		{"neither set, cgroup limit", nil, 256 << 20, defaultGCPercent, 192 << 20, true},
		{"GOGC set", map[string]string{"GOGC": "100"}, 256 << 20, 0, 0, false},
		{"GOGC off", map[string]string{"GOGC": "off"}, 0, 0, 0, false},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, 0, 0, 0, false},
	} {
		p, l, ok := gcDefaults(env(tc.env), tc.cgroup)
		if p != tc.percent || l != tc.limit || ok != tc.wantApplied {
			t.Errorf("%s: got %d, %d, %v; want %d, %d, %v", tc.name, p, l, ok, tc.percent, tc.limit, tc.wantApplied)
		}
	}
}

func TestParseCgroupLimit(t *testing.T) {
	for in, want := range map[string]int64{
		"max\n":                 0,
		"268435456\n":           256 << 20,
		"9223372036854771712\n": 0, // cgroup v1 without a limit
		"":                      0,
		"-1":                    0,
	} {
		if got := parseCgroupLimit(in); got != want {
			t.Errorf("parseCgroupLimit(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestApplyGCDefaultsRestores(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetGCPercent(-1)
	debug.SetGCPercent(before)
	beforeLimit := debug.SetMemoryLimit(-1)
	p, l, restore := applyGCDefaults()
	_, _, restore2 := applyGCDefaults() // a second serve of the process
	restore2()
	if got := debug.SetGCPercent(-1); got != p || p != defaultGCPercent {
		t.Errorf("GC percent %d while applied (a second serve came and went), want %d", got, defaultGCPercent)
	}
	debug.SetGCPercent(p)
	if got := debug.SetMemoryLimit(-1); got != l || l <= 0 {
		t.Errorf("memory limit %d while applied, want %d", got, l)
	}
	restore()
	if got := debug.SetGCPercent(-1); got != before {
		t.Errorf("GC percent %d after restore, want %d", got, before)
	}
	debug.SetGCPercent(before)
	if got := debug.SetMemoryLimit(-1); got != beforeLimit {
		t.Errorf("memory limit %d after restore, want %d", got, beforeLimit)
	}
}

func TestGCPercentBoundsTheHeadroomInBytes(t *testing.T) {
	for live, want := range map[uint64]int{
		0:          defaultGCPercent,
		4 << 20:    defaultGCPercent, // 400% would be 16 MiB: capped
		8 << 20:    200,
		10 << 20:   160,
		12 << 20:   130,
		16 << 20:   100,
		1000 << 20: 100, // Go's own: never below it
	} {
		if got := gcPercentFor(live); got != want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", live>>20, got, want)
		}
	}
}

// The tuner sets GOGC after a collection from the live heap it left: 100
// while a large heap is live, defaultGCPercent again once it is gone, and
// nothing once serve has restored the settings.
func TestGCTunerFollowsTheLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetGCPercent(-1)
	debug.SetGCPercent(before)
	_, _, restore := applyGCDefaults()
	percentAfterGC := func(want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			runtime.GC() // the hook runs on the finalizer goroutine after it
			gcState.Lock()
			got := gcState.tuner.percent
			gcState.Unlock()
			if got == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("GOGC %d after collections, want %d", got, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if got := debug.SetGCPercent(-1); got != want {
			t.Errorf("the runtime's GC percent is %d, want %d", got, want)
		}
		debug.SetGCPercent(want)
	}
	live := make([][]byte, 48) // 48 MiB, live across the collections
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	percentAfterGC(100)
	runtime.KeepAlive(live)
	live = nil
	percentAfterGC(defaultGCPercent)
	restore()
	if got := debug.SetGCPercent(-1); got != before {
		t.Errorf("GC percent %d after restore, want %d", got, before)
	}
	debug.SetGCPercent(before)
}
