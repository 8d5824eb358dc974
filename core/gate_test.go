package core

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
	"weak"
)

// A host callback that ignores its context can outlive the operation that
// called it; Go cannot stop it. The rule these tests prove is the one that
// can be kept: once Read, List or ListTemplates has returned, no further
// host callback of any kind starts (the one already running may finish).

// startLog records, in order, the start of every host callback and the
// moment the operation returned. The callback started blockAt-th (from 0)
// blocks, ignoring its context, until release is closed.
type startLog struct {
	mu      sync.Mutex
	events  []string
	starts  int
	blockAt int
	blocked chan struct{} // closed when the blocking callback starts
	release chan struct{}
}

func newStartLog(blockAt int) *startLog {
	return &startLog{blockAt: blockAt, blocked: make(chan struct{}), release: make(chan struct{})}
}

func (l *startLog) start(format string, args ...any) {
	l.mu.Lock()
	n := l.starts
	l.starts++
	l.events = append(l.events, fmt.Sprintf(format, args...))
	l.mu.Unlock()
	if n == l.blockAt {
		close(l.blocked)
		<-l.release // ignores ctx: blocks past the deadline
	}
}

func (l *startLog) mark(event string) {
	l.mu.Lock()
	l.events = append(l.events, event)
	l.mu.Unlock()
}

func (l *startLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

const (
	// returned marks the moment the operation returned to its caller.
	returned = "<returned>"
	// settleTime is how long a test waits, after releasing the blocked
	// callback, for an abandoned operation to start another one. Without the
	// gate that takes microseconds; a loaded machine can only make the test
	// miss a late start, never fail one that was refused.
	settleTime = 250 * time.Millisecond
)

// attempt is one run of an operation with one callback blocking: its
// error and, settleTime after the blocked callback was released, the
// callbacks' log.
type attempt struct {
	err    error
	events []string
}

// runAttempts runs op once for every k below n, all at once, each with
// callback k blocking and the whole-read deadline timeout; op builds its
// Resources on the test's goroutine and returns the operation to run. Each
// blocked callback is released as soon as its operation returned, and the
// logs are taken settleTime after the last release, so every attempt gets
// at least settleTime to start a callback it must not: one settle for all
// attempts instead of one each.
func runAttempts(n int, timeout time.Duration, op func(l *startLog, timeout time.Duration) func() error) []attempt {
	logs := make([]*startLog, n)
	runs := make([]func() error, n)
	for k := range n {
		logs[k] = newStartLog(k)
		runs[k] = op(logs[k], timeout)
	}
	out := make([]attempt, n)
	var wg sync.WaitGroup
	for k := range n {
		wg.Go(func() {
			out[k].err = runs[k]()
			logs[k].mark(returned)
			close(logs[k].release)
		})
	}
	wg.Wait()
	time.Sleep(settleTime)
	for k := range n {
		out[k].events = logs[k].snapshot()
	}
	return out
}

// firstTimeout is the whole-read deadline of the first attempts: every
// attempt of a test runs at once, so the deadline leaves room for all of
// them to reach their blocking callback on a loaded machine.
const firstTimeout = 200 * time.Millisecond

// proveNoStartAfterReturn checks every callback k of want: op, run with
// callback k blocking and a whole-read deadline, failed with
// FailureTimeout, exactly the callbacks want[:k+1] started, all of them
// before op returned, and none started afterwards. The first attempts run
// at once (runAttempts); each is then checked in a subtest named by name.
// An attempt in which the deadline passed before callback k started (a
// machine too slow for the deadline) proves nothing; it is repeated alone,
// with a longer deadline each time.
func proveNoStartAfterReturn(t *testing.T, want []string, name func(k int) string, op func(l *startLog, timeout time.Duration) func() error) {
	t.Helper()
	first := runAttempts(len(want), firstTimeout, op)
	for k := range want {
		t.Run(name(k), func(t *testing.T) {
			a := first[k]
			for timeout := firstTimeout; ; {
				if KindOf(a.err) != FailureTimeout {
					t.Fatalf("operation returned %v; want FailureTimeout", a.err)
				}
				ret := slices.Index(a.events, returned)
				before, after := a.events[:ret], a.events[ret+1:]
				if len(before) == k+1 {
					if !slices.Equal(before, want[:k+1]) {
						t.Fatalf("callbacks started before the return: %q; want %q", before, want[:k+1])
					}
					if len(after) > 0 {
						t.Fatalf("callbacks started after the operation returned: %q (log %q)", after, a.events)
					}
					return
				}
				if timeout > 10*time.Second {
					t.Fatalf("the deadline passed before callback %d (%s) started, even with %v", k, want[k], timeout)
				}
				timeout *= 4
				l := newStartLog(k)
				run := op(l, timeout)
				a.err = run()
				l.mark(returned)
				close(l.release)
				time.Sleep(settleTime)
				a.events = l.snapshot()
			}
		})
	}
}

// gateReadItems are the items of the plan that gateResources resolves.
var gateReadItems = []string{"test://a", "test://b"}

// gateResources builds a Resources value whose every callback records its
// start in l and answers at once (unless l blocks it).
func gateResources(t *testing.T, l *startLog, timeout time.Duration) *Resources {
	b := ResourceBinding{
		Definition: ResourceDefinition{URI: bundleURI, Name: "bundle"},
		Resolver: ResolverFunc(func(ctx context.Context, m ResourceMatch) (ResourceReadPlan, error) {
			l.start("resolve")
			req, _ := NewResourceTarget(m.URI(), "bundle", nil)
			ts := make([]ResourceTarget, len(gateReadItems))
			for i, u := range gateReadItems {
				ts[i], _ = NewResourceTarget(u, "item", nil)
			}
			return NewResourceReadPlan(req, ts...)
		}),
		Reader: ItemReader(func(ctx context.Context, item ReadItem) (ResourcePayload, error) {
			tg := item.Target
			l.start("body %s", tg.URI())
			return TextPayload("text/plain", textOf(tg.URI())), nil
		}),
	}
	pol := PerTarget(TargetPolicy{
		Discover: func(ctx context.Context, d ResourceDefinition) error {
			l.start("discover %s", d.Name)
			return nil
		},
		Visibility: func(ctx context.Context, tg ResourceTarget) (Visibility, error) {
			l.start("visibility %s", tg.URI())
			return Visibility{Visible: true}, nil
		},
		Read: func(ctx context.Context, tg ResourceTarget) error {
			l.start("permission %s", tg.URI())
			return nil
		},
	})
	r, err := NewResources([]ResourceBinding{b}, pol, WithResourceLimits(ResourceLimits{ReadTimeout: timeout}))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// gateReadCallbacks lists every callback of a complete read of
// gateResources, in order, after checking that a read starts exactly these:
// discovery, resolve, first decisions (requested target, then every item),
// each body read, and the final recheck (discovery, requested target, every
// item).
func gateReadCallbacks(t *testing.T) []string {
	decisions := func(uris ...string) []string {
		var out []string
		for _, u := range uris {
			out = append(out, "visibility "+u, "permission "+u)
		}
		return out
	}
	want := slices.Concat(
		[]string{"discover bundle", "resolve"},
		decisions(bundleURI, "test://a", "test://b"),
		[]string{"body test://a", "body test://b"},
		[]string{"discover bundle"},
		decisions(bundleURI, "test://a", "test://b"),
	)
	l := newStartLog(-1)
	if _, err := gateResources(t, l, time.Minute).Read(context.Background(), bundleURI); err != nil {
		t.Fatal(err)
	}
	if got := l.snapshot(); !slices.Equal(got, want) {
		t.Fatalf("a complete read started %q; want %q", got, want)
	}
	return want
}

func TestNoCallbackStartsAfterReadReturned(t *testing.T) {
	t.Parallel() // mostly waits: settleTime
	want := gateReadCallbacks(t)
	proveNoStartAfterReturn(t, want, func(k int) string { return fmt.Sprintf("%02d %s", k, want[k]) },
		func(l *startLog, timeout time.Duration) func() error {
			r := gateResources(t, l, timeout)
			return func() error {
				_, err := r.Read(context.Background(), bundleURI)
				return err
			}
		})
}

// The caller canceling the read ends it just as the deadline does: the
// callback running when the caller canceled is the last one to start.
// Every case runs at once (runAttempts), then each is checked in its
// subtest.
func TestNoCallbackStartsAfterCanceledReadReturned(t *testing.T) {
	t.Parallel() // mostly waits: settleTime
	want := gateReadCallbacks(t)
	got := runAttempts(len(want), time.Minute, func(l *startLog, timeout time.Duration) func() error {
		r := gateResources(t, l, timeout)
		return func() error {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				<-l.blocked
				cancel()
			}()
			_, err := r.Read(ctx, bundleURI)
			return err
		}
	})
	for k := range want {
		t.Run(fmt.Sprintf("%02d %s", k, want[k]), func(t *testing.T) {
			err, events := got[k].err, got[k].events
			if KindOf(err) != FailureCanceled {
				t.Fatalf("Read returned %v; want FailureCanceled", err)
			}
			ret := slices.Index(events, returned)
			if before := events[:ret]; !slices.Equal(before, want[:k+1]) {
				t.Fatalf("callbacks started before the return: %q; want %q", before, want[:k+1])
			}
			if after := events[ret+1:]; len(after) > 0 {
				t.Fatalf("callbacks started after Read returned: %q", after)
			}
		})
	}
}

func TestNoCallbackStartsAfterListReturned(t *testing.T) {
	t.Parallel() // mostly waits: settleTime
	defs := []ResourceDefinition{
		{URI: "a://1", Name: "r1"}, {URI: "a://2", Name: "r2"}, {URI: "a://3", Name: "r3"},
		{URITemplate: "a://t/{x}", Name: "t1"}, {URITemplate: "a://u/{x}", Name: "t2"}, {URITemplate: "a://v/{x}", Name: "t3"},
	}
	newResources := func(t *testing.T, l *startLog, timeout time.Duration) *Resources {
		var calls listCalls
		return listNew(t, &calls, defs, func(ctx context.Context, d ResourceDefinition) error {
			l.start("discover %s", d.Name)
			return nil
		}, WithResourceLimits(ResourceLimits{ReadTimeout: timeout}))
	}
	type method = func(*Resources) func(context.Context, ListRequest) (ListPage, error)
	for _, m := range []struct {
		name string
		list method
		want []string
	}{
		{"List", func(r *Resources) func(context.Context, ListRequest) (ListPage, error) { return r.List },
			[]string{"discover r1", "discover r2", "discover r3"}},
		{"ListTemplates", func(r *Resources) func(context.Context, ListRequest) (ListPage, error) { return r.ListTemplates },
			[]string{"discover t1", "discover t2", "discover t3"}},
	} {
		l := newStartLog(-1)
		if p, err := m.list(newResources(t, l, time.Minute))(context.Background(), ListRequest{ScopeKey: listScope}); err != nil || len(p.Descriptions) != 3 {
			t.Fatalf("%s: %+v, %v", m.name, p, err)
		}
		if got := l.snapshot(); !slices.Equal(got, m.want) {
			t.Fatalf("%s started %q; want %q", m.name, got, m.want)
		}
		proveNoStartAfterReturn(t, m.want, func(k int) string { return fmt.Sprintf("%s %d %s", m.name, k, m.want[k]) },
			func(l *startLog, timeout time.Duration) func() error {
				list := m.list(newResources(t, l, timeout))
				return func() error {
					_, err := list(context.Background(), ListRequest{ScopeKey: listScope})
					return err
				}
			})
	}
}

// TestIdleWorkerKeepsNoResult proves that a worker waiting for its next
// operation holds nothing of the last one: a result the caller dropped is
// collectable at once, not when the worker retires.
func TestIdleWorkerKeepsNoResult(t *testing.T) {
	r := newRig(t, "test://a").resources()
	res, err := r.Read(context.Background(), bundleURI)
	if err != nil {
		t.Fatal(err)
	}
	w := weak.Make(res)
	res = nil
	// The worker may still be finishing the job when Read returns (on a
	// loaded machine it is not yet waiting): collect until the result is
	// gone, for less than workerIdle, so that the worker that ran the read
	// is still alive, idle, when the result is found collectable.
	start := time.Now()
	for runtime.GC(); w.Value() != nil; runtime.GC() {
		if time.Since(start) > workerIdle/2 {
			t.Fatalf("the result of a finished read is still reachable %v after it (an idle worker holds it)", workerIdle/2)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWorkerOutlivesAPauseBetweenReads proves that a client reading one
// resource at a time, with a pause of a few milliseconds between reads,
// finds the worker of its last read still waiting (its stack grown)
// rather than a goroutine started per read, and that the worker exits
// once no operation has come for workerIdle.
func TestWorkerOutlivesAPauseBetweenReads(t *testing.T) {
	waitNoWorker := func() {
		deadline := time.Now().Add(10 * workerIdle)
		for liveWorkers.Load() > 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if n := liveWorkers.Load(); n > 0 {
			t.Fatalf("%d workers still live %v after the last operation", n, 10*workerIdle)
		}
	}
	waitNoWorker()
	r := newRig(t, "test://a").resources()
	if _, err := r.Read(context.Background(), bundleURI); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the client's pause: what is measured, not an ordering signal
	if n := liveWorkers.Load(); n != 1 {
		t.Fatalf("%d workers live 20ms after one read, want the read's worker still waiting", n)
	}
	if _, err := r.Read(context.Background(), bundleURI); err != nil {
		t.Fatal(err)
	}
	if n := liveWorkers.Load(); n != 1 {
		t.Fatalf("%d workers live after the second read, want the first one reused", n)
	}
	waitNoWorker()
}
