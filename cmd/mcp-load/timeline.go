package main

import (
	"sync"
	"time"
)

// timeline records when each value of one piece of state (an asset's
// generation, a principal's grant on an asset) may have been current, as
// seen by the writer that changes it.
//
// A write of a new value starts at some instant b and is known committed at
// some later instant c; somewhere in between it became current. So the new
// value may be current from b on, and the value it replaced may be current
// until c. A response received in the window [sent, received] may carry a
// value only if that value may have been current at some instant of the
// window: the server planned and read it inside the window. Anything else
// is a replaced (or revoked) value, which the server must never serve.
//
// The bounds are conservative: they never call a correct response wrong,
// and they call wrong every response that serves a value replaced before
// the request was sent, or one that was never written.
type timeline[T comparable] struct {
	mu      sync.Mutex
	entries []span[T]
}

// span is one value and the instants between which it may have been
// current; a zero until means it may still be current.
type span[T comparable] struct {
	v     T
	from  time.Time
	until time.Time
}

// newTimeline returns a timeline whose first value v is current from at.
func newTimeline[T comparable](v T, at time.Time) *timeline[T] {
	return &timeline[T]{entries: []span[T]{{v: v, from: at}}}
}

// begin announces that a write of v starts now: from now on v may be
// current. It returns the function to call once the write is known
// committed, which ends every earlier value at that instant.
func (t *timeline[T]) begin(v T, now time.Time) (commit func(time.Time)) {
	t.mu.Lock()
	t.entries = append(t.entries, span[T]{v: v, from: now})
	n := len(t.entries) - 1
	t.mu.Unlock()
	return func(done time.Time) {
		t.mu.Lock()
		defer t.mu.Unlock()
		for i := range n {
			if t.entries[i].until.IsZero() {
				t.entries[i].until = done
			}
		}
	}
}

// current returns the value last written.
func (t *timeline[T]) current() T {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.entries[len(t.entries)-1].v
}

// possible reports whether v may have been current at some instant of
// [from, to].
func (t *timeline[T]) possible(v T, from, to time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.entries {
		if e.v == v && !e.from.After(to) && (e.until.IsZero() || !e.until.Before(from)) {
			return true
		}
	}
	return false
}

// grant is a principal's grant on one asset, as the driver sets it.
type grant uint8

const (
	// granted: may discover and read.
	granted grant = iota
	// denied: may discover but not read (the asset shows up as an
	// unavailable issue).
	denied
	// hidden: may neither discover nor read (the asset is absent).
	hidden
)

// flags are the grants-table columns for g.
func (g grant) flags() (discover, read bool) {
	return g != hidden, g == granted
}

// oracle is everything the driver knows about the state it wrote: each
// asset's generation and each principal's grant on each asset, over time.
type oracle struct {
	d      *dataset
	gens   map[assetKey]*timeline[int]
	grants map[string]map[assetKey]*timeline[grant] // principal, asset
}

// newOracle returns the oracle of a freshly written dataset: generation 0
// and every grant given, since at.
func newOracle(d *dataset, at time.Time) *oracle {
	o := &oracle{d: d, gens: map[assetKey]*timeline[int]{}, grants: map[string]map[assetKey]*timeline[grant]{}}
	for _, k := range d.all() {
		o.gens[k] = newTimeline(0, at)
	}
	for _, p := range d.principals {
		o.grants[p] = map[assetKey]*timeline[grant]{}
		for _, k := range d.all() {
			o.grants[p][k] = newTimeline(granted, at)
		}
	}
	return o
}
