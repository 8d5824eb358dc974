package core

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime/pprof"
	"sync/atomic"
	"time"

	"go.phpboyscout.uk/mcp/resources/internal/requestscope"
)

// panicError is the private cause recorded when a host callback panics.
type panicError struct{ value any }

func (e *panicError) Error() string { return fmt.Sprintf("callback panicked: %v", e.value) }

// errScopeEnded is what guard returns instead of starting a callback once
// the operation that would call it has ended.
var errScopeEnded = errors.New("core: the operation ended before the callback could start")

// gate admits host callbacks while one operation (a read, a list page) is
// live. scoped makes one per operation and closes it before returning; every
// host callback starts through guard, which asks the gate first. The gate
// refuses once it is closed or the scope's context is done, so that after
// Read, List or ListTemplates has returned no further callback of any kind
// starts: a policy that queries a database is never asked on behalf of an
// operation whose caller has gone. A callback already running is not
// interrupted (Go cannot stop it); it may finish, and what it returns is
// discarded.
//
// closed is set before scoped returns and read by every enter: a callback
// whose enter ran after close never starts. (A mutex would order nothing
// more: an enter that saw the gate open may start its callback after close
// either way, which is the callback "already running" above.)
type gate struct {
	done   <-chan struct{} // the scope's Done channel
	closed atomic.Bool
}

type gateKey struct{}

// enter reports whether a callback may start now.
func (g *gate) enter() bool {
	if g.closed.Load() {
		return false
	}
	select {
	case <-g.done:
		return false
	default:
		return true
	}
}

// close refuses every later callback.
func (g *gate) close() { g.closed.Store(true) }

// gateOf returns the gate of the operation that ctx belongs to, or nil. The
// operation's own context answers without a walk up the context chain.
func gateOf(ctx context.Context) *gate {
	if s, ok := ctx.(gated); ok {
		return s.operationGate()
	}
	g, _ := ctx.Value(gateKey{}).(*gate)
	return g
}

// gated is implemented by the context scoped gives its op.
type gated interface{ operationGate() *gate }

// guard is the one way a host callback is started: fn calls exactly one
// callback. guard asks the gate of the operation that ctx belongs to and
// returns errScopeEnded without calling fn once that operation has ended
// (or when ctx belongs to no operation); otherwise it calls fn and turns a
// panic into a *panicError.
func guard(ctx context.Context, fn func() error) (err error) {
	if g := gateOf(ctx); g == nil || !g.enter() {
		return errScopeEnded
	}
	defer func() {
		if p := recover(); p != nil {
			err = &panicError{value: p}
		}
	}()
	return fn()
}

// operation is one run of scoped: the context its op sees (the scope's
// context, answering the gate key and, when scoped began the scope, the
// request-scope key), its gate, and its outcome. One allocation holds them
// all. It is never reused: a host callback may keep its context.
type operation[T any] struct {
	context.Context
	gate     gate
	ownScope bool // scoped began the request scope: answer its key
	op       func(context.Context) (T, error)
	v        T
	err      error
	done     chan struct{} // closed once v and err are set
}

func (o *operation[T]) operationGate() *gate { return &o.gate }

// Value answers the gate key and, for a scope scoped began, the request
// scope's key; everything else comes from the parent.
func (o *operation[T]) Value(key any) any {
	switch {
	case key == (gateKey{}):
		return &o.gate
	case o.ownScope && requestscope.IsKey(key):
		return true
	}
	return o.Context.Value(key)
}

// run executes the op on a worker goroutine. The worker takes the profiler
// labels of the operation's context for the op's duration, as a goroutine
// started for it would have inherited its caller's (for labels set with
// pprof.Do, which puts them in the context too).
func (o *operation[T]) run() {
	pprof.SetGoroutineLabels(o)
	o.v, o.err = o.op(o)
	pprof.SetGoroutineLabels(context.Background())
	close(o.done)
}

// scoped runs one whole operation (a read, a list page). Unless ctx already
// carries a request scope it begins one with timeout and ends it on return.
// op runs on a goroutine of its own (a worker, see dispatch) so that the end
// of the scope stops the wait even for a host callback that ignores its
// context. The operation's gate (see guard) refuses every callback once the
// scope's context is done and is closed before scoped returns, so an
// abandoned op starts no further callback: its next step fails with
// errScopeEnded, and what it returns is discarded. Every error comes back as
// a *Failure: once the scope has ended, FailureTimeout or FailureCanceled
// wins over what op reported.
func scoped[T any](ctx context.Context, timeout time.Duration, op func(context.Context) (T, error)) (T, error) {
	o := &operation[T]{op: op, done: make(chan struct{})}
	if !requestscope.Active(ctx) {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
		o.ownScope = true
	}
	o.Context = ctx
	o.gate.done = ctx.Done()
	defer o.gate.close()
	dispatch(o)
	var zero T
	select {
	case <-o.done:
		if o.err != nil {
			return zero, scopeFailure(ctx, o.err)
		}
		return o.v, nil
	case <-ctx.Done():
		return zero, scopeFailure(ctx, context.Cause(ctx))
	}
}

// A job is an operation for a worker.
type job interface{ run() }

// handoff passes a job to an idle worker. It is unbuffered: a send succeeds
// only when a worker is waiting for one.
var handoff = make(chan job)

// workerIdle is how long an idle worker waits for another job before it
// exits. Workers only exist while operations arrive; a process that stops
// reading is back to its own goroutines workerIdle after its last
// operation. It is long enough that a client reading one resource at a
// time, with pauses of a few milliseconds between reads, finds a warm
// worker (its stack already grown) instead of starting a goroutine per
// read; an idle worker costs no wake-up while it waits.
const workerIdle = time.Second

// dispatch runs j on an idle worker, or on a new one when none is waiting.
// Reusing a worker saves the goroutine start and, above all, growing a
// fresh goroutine's stack to what a read needs (a store's client library
// is deep) on every operation.
func dispatch(j job) {
	select {
	case handoff <- j:
	default:
		liveWorkers.Add(1)
		go worker(j)
	}
}

// liveWorkers counts the workers that have started and not yet exited.
var liveWorkers atomic.Int64

// worker runs j, then the jobs handed to it until none has come for
// workerIdle. Its one timer is re-armed after each job rather than ticking:
// a ticker would wake the process every period while the worker lives. A
// worker whose job is abandoned (a callback that ignores its context)
// stays with that job until the callback returns.
func worker(j job) {
	defer liveWorkers.Add(-1)
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		j.run()
		t.Reset(workerIdle)
		select {
		case j = <-handoff:
		case <-t.C:
			return
		}
	}
}

func scopeFailure(ctx context.Context, err error) error {
	switch ctx.Err() {
	case nil:
	case context.DeadlineExceeded:
		return NewFailure(FailureTimeout, err)
	default:
		return NewFailure(FailureCanceled, err)
	}
	var f *Failure
	if errors.As(err, &f) {
		return err
	}
	return NewFailure(FailurePolicy, err)
}

// isNilCallback reports whether v, a Resolver or Reader a host passed, is
// unusable: a nil interface, or an interface holding a nil func or a nil
// pointer. Calling a nil func always panics; a nil pointer is rejected too,
// even though a method could in principle tolerate a nil receiver, because
// a binding that holds no state has no reason to be a pointer and a nil one
// is far more likely a host bug found only at the first read. The module's
// own func types are checked without reflection; reflection covers the
// func and pointer types of hosts.
func isNilCallback(v any) bool {
	switch f := v.(type) {
	case nil:
		return true
	case ResolverFunc:
		return f == nil
	case ItemReader:
		return f == nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Func, reflect.Pointer:
		return rv.IsNil()
	}
	return false
}

// nilCallbackReason is the ConfigError reason for a callback that
// isNilCallback rejects.
func nilCallbackReason(v any) string {
	if v == nil {
		return "callback is required"
	}
	return fmt.Sprintf("callback is required; got a nil %T", v)
}
