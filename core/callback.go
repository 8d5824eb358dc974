package core

import (
	"context"
	"fmt"
)

// panicError is the private cause recorded when a host callback panics.
type panicError struct{ value any }

func (e *panicError) Error() string { return fmt.Sprintf("callback panicked: %v", e.value) }

// guard calls fn and turns a panic into a *panicError.
func guard(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &panicError{value: p}
		}
	}()
	return fn()
}

type outcome[T any] struct {
	v   T
	err error
}

// invoke runs fn(cbCtx) in its own goroutine so that the end of the whole
// operation (whole done) stops the wait for a callback that ignores its
// context; whatever it returns later is discarded. A panic becomes a
// *panicError. abandoned is true when whole ended first; err is then
// whole.Err().
func invoke[T any](whole, cbCtx context.Context, fn func(context.Context) (T, error)) (v T, err error, abandoned bool) {
	ch := make(chan outcome[T], 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- outcome[T]{err: &panicError{value: p}}
			}
		}()
		v, err := fn(cbCtx)
		ch <- outcome[T]{v: v, err: err}
	}()
	select {
	case o := <-ch:
		return o.v, o.err, false
	case <-whole.Done():
		var zero T
		return zero, whole.Err(), true
	}
}
