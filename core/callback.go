package core

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
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
type gate struct {
	done   <-chan struct{} // the scope's Done channel
	mu     sync.Mutex
	closed bool
}

type gateKey struct{}

// enter reports whether a callback may start now.
func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
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
func (g *gate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// guard is the one way a host callback is started: fn calls exactly one
// callback. guard asks the gate of the operation that ctx belongs to and
// returns errScopeEnded without calling fn once that operation has ended
// (or when ctx belongs to no operation); otherwise it calls fn and turns a
// panic into a *panicError.
func guard(ctx context.Context, fn func() error) (err error) {
	if g, _ := ctx.Value(gateKey{}).(*gate); g == nil || !g.enter() {
		return errScopeEnded
	}
	defer func() {
		if p := recover(); p != nil {
			err = &panicError{value: p}
		}
	}()
	return fn()
}

// scoped runs one whole operation (a read, a list page). Unless ctx already
// carries a request scope it begins one with timeout and ends it on return.
// op runs in a goroutine of its own so that the end of the scope stops the
// wait even for a host callback that ignores its context. The operation's
// gate (see guard) refuses every callback once the scope's context is done
// and is closed before scoped returns, so an abandoned op starts no further
// callback: its next step fails with errScopeEnded, and what it returns is
// discarded. Every error comes back as a *Failure: once the scope has ended,
// FailureTimeout or FailureCanceled wins over what op reported.
func scoped[T any](ctx context.Context, timeout time.Duration, op func(context.Context) (T, error)) (T, error) {
	if !requestscope.Active(ctx) {
		var cancel context.CancelFunc
		ctx, cancel = requestscope.Begin(ctx, timeout)
		defer cancel()
	}
	g := &gate{done: ctx.Done()}
	defer g.close()
	ctx = context.WithValue(ctx, gateKey{}, g)
	type outcome struct {
		v   T
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		v, err := op(ctx)
		done <- outcome{v, err}
	}()
	var zero T
	select {
	case o := <-done:
		if o.err != nil {
			return zero, scopeFailure(ctx, o.err)
		}
		return o.v, nil
	case <-ctx.Done():
		return zero, scopeFailure(ctx, context.Cause(ctx))
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
	case ReaderFunc:
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
