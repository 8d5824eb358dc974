// Package itemsize holds the one formula for the encoded size of a content
// item, {"uri":U,"mimeType":M,"text":T} or {"uri":U,"mimeType":M,"blob":B}
// with an optional "_meta", which core admits items with and the go-sdk
// adapter writes, and the hook through which an adapter whose wire shape
// differs (the tool surface's embedded resource) supplies its own sizer
// (through [Read]).
package itemsize

import (
	"context"

	"go.phpboyscout.uk/mcp/resources/internal/jsonsize"
)

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

// Exact returns the exact length of it's content entry as encoding/json
// writes it with HTML escaping off (the go-sdk's encoding), separators
// not included: {"uri":U,"mimeType":M,"text":T} or, for a blob,
// "blob":B with B padded standard base64, with ,"_meta":META before the
// closing brace when Meta is set (META is counted as given: it must be
// compact JSON, as encoding/json writes a json.RawMessage).
func Exact(it Item) int64 {
	n := int64(len(`{"uri":,"mimeType":,"text":}`) + jsonsize.StringLen(it.URI) + jsonsize.StringLen(it.MIMEType))
	if it.IsBlob {
		n += 2 + int64((len(it.Blob)+2)/3*4) // "base64", padded
	} else {
		n += int64(jsonsize.StringLen(it.Text))
	}
	if it.Meta != nil {
		n += int64(len(`,"_meta":`) + len(it.Meta))
	}
	return n
}

// Func returns an upper bound of the bytes item adds to a response,
// separators included. It must be pure and cheap.
type Func func(item Item) int64

// read is the function [Install] set.
var read any

// Install sets the gateway's read of uri through res with an adapter's
// sizer f, which [Read] calls. core installs it when it is initialized,
// with R *core.Resources and T *core.ResourceResult (this package cannot
// name them: core imports it), so that an adapter of this module hands its
// sizer over as an argument, never through a context or a public option.
func Install[R, T any](f func(ctx context.Context, res R, uri string, f Func) (T, error)) { read = f }

// Read is the gateway's read of uri through res with the adapter's sizer
// f, as core installed it: R and T are *core.Resources and
// *core.ResourceResult, and any other pair panics (a programming error of
// this module, which the adapter's first read shows).
func Read[R, T any](ctx context.Context, res R, uri string, f Func) (T, error) {
	return read.(func(context.Context, R, string, Func) (T, error))(ctx, res, uri, f)
}
