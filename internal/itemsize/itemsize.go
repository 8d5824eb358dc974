// Package itemsize is the hook through which an adapter supplies a
// conservative sizer for its own wire representation of a content item.
package itemsize

import "context"

// Item is one content entry as the gateway will hand it to the adapter.
type Item struct {
	URI      string
	MIMEType string
	Text     string
	Blob     []byte
	IsBlob   bool
	// Meta is the item's encoded _meta object, or nil.
	Meta []byte
}

// Func returns an upper bound of the bytes item adds to a response,
// separators included. It must be pure and cheap.
type Func func(item Item) int64

type key struct{}

// With returns ctx carrying f.
func With(ctx context.Context, f Func) context.Context {
	return context.WithValue(ctx, key{}, f)
}

// From returns the sizer in ctx, or nil.
func From(ctx context.Context) Func {
	f, _ := ctx.Value(key{}).(Func)
	return f
}
