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

// proveNoStartAfterReturn runs op with callback k blocking and a whole-read
// deadline, and checks that op failed with FailureTimeout, that exactly the
// callbacks want[:k+1] started, all of them before op returned, and that
// none started afterwards. An attempt in which the deadline passed before
// callback k started (a machine too slow for the deadline) proves nothing;
// it is repeated with a longer deadline.
func proveNoStartAfterReturn(t *testing.T, want []string, k int, op func(l *startLog, timeout time.Duration) error) {
	t.Helper()
	for timeout := 50 * time.Millisecond; ; timeout *= 4 {
		l := newStartLog(k)
		err := op(l, timeout)
		l.mark(returned)
		close(l.release)
		time.Sleep(settleTime)
		events := l.snapshot()
		if KindOf(err) != FailureTimeout {
			t.Fatalf("operation returned %v; want FailureTimeout", err)
		}
		ret := slices.Index(events, returned)
		before, after := events[:ret], events[ret+1:]
		if len(before) == k+1 {
			if !slices.Equal(before, want[:k+1]) {
				t.Fatalf("callbacks started before the return: %q; want %q", before, want[:k+1])
			}
			if len(after) > 0 {
				t.Fatalf("callbacks started after the operation returned: %q (log %q)", after, events)
			}
			return
		}
		if timeout > 10*time.Second {
			t.Fatalf("the deadline passed before callback %d (%s) started, even with %v", k, want[k], timeout)
		}
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
		Reader: ReaderFunc(func(ctx context.Context, tg ResourceTarget) (ResourcePayload, error) {
			l.start("body %s", tg.URI())
			return TextPayload("text/plain", textOf(tg.URI())), nil
		}),
	}
	pol := ResourcePolicy{
		Discover: func(ctx context.Context, d ResourceDescription) error {
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
	}
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
	want := gateReadCallbacks(t)
	for k := range want {
		t.Run(fmt.Sprintf("%02d %s", k, want[k]), func(t *testing.T) {
			t.Parallel()
			proveNoStartAfterReturn(t, want, k, func(l *startLog, timeout time.Duration) error {
				_, err := gateResources(t, l, timeout).Read(context.Background(), bundleURI)
				return err
			})
		})
	}
}

// The caller canceling the read ends it just as the deadline does: the
// callback running when the caller canceled is the last one to start.
func TestNoCallbackStartsAfterCanceledReadReturned(t *testing.T) {
	want := gateReadCallbacks(t)
	for k := range want {
		t.Run(fmt.Sprintf("%02d %s", k, want[k]), func(t *testing.T) {
			t.Parallel()
			l := newStartLog(k)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				<-l.blocked
				cancel()
			}()
			_, err := gateResources(t, l, time.Minute).Read(ctx, bundleURI)
			l.mark(returned)
			close(l.release)
			time.Sleep(settleTime)
			if KindOf(err) != FailureCanceled {
				t.Fatalf("Read returned %v; want FailureCanceled", err)
			}
			events := l.snapshot()
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
	defs := []ResourceDefinition{
		{URI: "a://1", Name: "r1"}, {URI: "a://2", Name: "r2"}, {URI: "a://3", Name: "r3"},
		{URITemplate: "a://t/{x}", Name: "t1"}, {URITemplate: "a://u/{x}", Name: "t2"}, {URITemplate: "a://v/{x}", Name: "t3"},
	}
	newResources := func(t *testing.T, l *startLog, timeout time.Duration) *Resources {
		var calls listCalls
		return listNew(t, &calls, defs, func(ctx context.Context, d ResourceDescription) error {
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
		for k := range m.want {
			t.Run(fmt.Sprintf("%s %d %s", m.name, k, m.want[k]), func(t *testing.T) {
				t.Parallel()
				proveNoStartAfterReturn(t, m.want, k, func(l *startLog, timeout time.Duration) error {
					_, err := m.list(newResources(t, l, timeout))(context.Background(), ListRequest{ScopeKey: listScope})
					return err
				})
			})
		}
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
	runtime.GC()
	runtime.GC()
	if w.Value() != nil {
		t.Fatal("the result of a finished read is still reachable (an idle worker holds it)")
	}
}
