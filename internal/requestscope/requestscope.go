// Package requestscope carries the module-internal request scope: the
// whole-read deadline that starts at adapter entry, is shortened by any
// caller deadline, and lasts until the adapter has converted the result.
package requestscope

import (
	"context"
	"time"
)

type key struct{}

// Begin starts a scope whose deadline is timeout from now, or the caller's
// earlier deadline. The returned cancel ends the scope; call it once the
// response has been produced.
func Begin(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	return context.WithValue(ctx, key{}, struct{}{}), cancel
}

// Active reports whether ctx is inside a scope started by Begin.
func Active(ctx context.Context) bool {
	return ctx.Value(key{}) != nil
}

// IsKey reports whether k is the key under which a scope is marked. A
// context type of the module that starts a scope with a bare
// [context.WithTimeout] answers this key itself (with a non-nil value)
// instead of paying for a [context.WithValue] layer.
func IsKey(k any) bool {
	_, ok := k.(key)
	return ok
}
