package core

import "context"

type readLimitKey struct{}

// ReadLimit returns how many payload bytes the reader of the current item may
// fetch: the smaller of MaxItemBytes and what is left of the aggregate
// payload budget. Stores bound the storage read itself with it (SQL
// octet_length checks, S3 Range) and return [TooLarge] when the stored item is
// bigger. Outside a gateway read it returns the default MaxItemBytes unless
// [WithReadLimit] set one.
func ReadLimit(ctx context.Context) int64 {
	if c, ok := ctx.(*limitContext); ok {
		return c.limit
	}
	if n, ok := ctx.Value(readLimitKey{}).(int64); ok {
		return n
	}
	return DefaultResourceLimits().MaxItemBytes
}

// WithReadLimit returns ctx carrying a read limit of n bytes, for hosts that
// call a [Reader] directly; the gateway sets it for every item it reads.
func WithReadLimit(ctx context.Context, n int64) context.Context {
	return context.WithValue(ctx, readLimitKey{}, n)
}

// limitContext carries an item's read limit without another allocation.
type limitContext struct {
	context.Context
	limit int64
}

// Value answers the read-limit key and defers everything else.
func (c *limitContext) Value(key any) any {
	if key == (readLimitKey{}) {
		return c.limit
	}
	return c.Context.Value(key)
}
