package core

import (
	"bytes"
	"fmt"
)

// WithCursorKey sets the key that signs list cursors; it must be at least 32
// bytes and is copied. [Resources] values built from the same bindings with
// the same key accept each other's cursors (replicas behind a load
// balancer). Without this option each Resources value draws a random 32-byte
// key, so its cursors are valid only for that value.
func WithCursorKey(key []byte) Option {
	k := bytes.Clone(key)
	return func(o *options) {
		if len(k) < minCursorKeyBytes {
			if o.err == nil {
				o.err = configErr("WithCursorKey", fmt.Sprintf("key must be at least %d bytes, got %d", minCursorKeyBytes, len(k)))
			}
			return
		}
		o.cursorKey = k
	}
}
