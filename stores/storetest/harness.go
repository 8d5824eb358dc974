package storetest

import (
	"context"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
)

// Item is an item a case asks the harness to store.
type Item struct {
	// Text says whether the body is UTF-8 text (read back as a text payload)
	// or binary (read back as a blob).
	Text bool
	// MIMEType is the item's media type, such as "text/plain" or
	// "application/octet-stream". A reader returns it unchanged.
	MIMEType string
	// Body is the content. An empty Body is an explicit empty item.
	Body []byte
	// Readers are the principals that may read the item from the start.
	// Principals are short lowercase ASCII names.
	Readers []string
}

// Harness is what a store implements so that [Run] can prove it. Every
// method that changes storage must take effect on the very next read.
// A method the store cannot support returns an error wrapping
// [errors.ErrUnsupported]; the cases that need it are then skipped.
type Harness interface {
	// Binding returns the store's binding under test. The suite registers
	// it with core.NewResources under a policy that allows everything and
	// reads a URI that Create returned: the binding's Resolver (built from
	// the store's own resolver helpers) must plan exactly one item target,
	// the item's body. The suite then calls the binding's Reader directly
	// with that target, so what a case proves is the storage request, not
	// the gateway's policy.
	Binding() core.ResourceBinding
	// Create stores a new item and returns the request URI that selects it
	// through Binding.
	Create(ctx context.Context, it Item) (uri string, err error)
	// Change gives the item at uri a new version whose body is body.
	Change(ctx context.Context, uri string, body []byte) error
	// Revoke withdraws principal's access to the item at uri.
	Revoke(ctx context.Context, uri, principal string) error
	// Restore gives principal back its access to the item at uri.
	Restore(ctx context.Context, uri, principal string) error
	// Delete removes the item at uri.
	Delete(ctx context.Context, uri string) error
	// Context returns ctx as the store sees a request of principal: what the
	// host's authentication would have put there.
	Context(ctx context.Context, principal string) context.Context
}

// BodyCounter is an optional interface of a Harness that counts body
// fetches at the storage layer (statements that select a body, GET
// requests). With it, the suite proves that planning fetches no body.
type BodyCounter interface {
	// BodyReads returns how many bodies the store has fetched so far.
	BodyReads() int64
}

// MakeHarness returns a fresh Harness for one case: its items are its own,
// though it may share a server with other cases. Release what it holds with
// t.Cleanup. Cases may run in parallel.
type MakeHarness func(ctx context.Context, t *testing.T) (Harness, error)
