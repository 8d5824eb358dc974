package core

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

// ListRequest asks for one page of List or ListTemplates.
type ListRequest struct {
	// ScopeKey is required and opaque: it identifies who is asking (for
	// example principal and session). Its exact bytes are bound into the
	// cursor, so a cursor only continues a listing for the same ScopeKey.
	ScopeKey []byte
	// Cursor is "" for the first page, else the NextCursor of the previous
	// page of the same method.
	Cursor string
	// PageSize is the most descriptions the page may hold. Zero selects
	// [ResourceLimits.ListPageSize]; above MaxListPageSize it is clamped;
	// negative is an invalid request.
	PageSize int
}

// ListPage is one page of descriptions.
type ListPage struct {
	// Descriptions are the visible descriptions of the page, in listing
	// order. Each owns its Meta. The slice is empty, never nil, when nothing
	// on the page was visible.
	Descriptions []ResourceDefinition
	// NextCursor continues the listing; "" on the last page.
	NextCursor string
}

// errMissingScopeKey is the private cause of the [FailureInvalidRequest]
// returned for a [ListRequest] without a ScopeKey.
var errMissingScopeKey = errors.New("core: ListRequest.ScopeKey is required")

// errNegativePageSize is the private cause for a negative PageSize.
var errNegativePageSize = errors.New("core: ListRequest.PageSize must not be negative")

// listMethod names a list operation; it is bound into cursors.
type listMethod uint8

const (
	listMethodResources listMethod = 1 // resources/list
	listMethodTemplates listMethod = 2 // resources/templates/list
)

// listEntry is a definition in listing order with its cost in a page: its
// encoded size plus one separating comma.
type listEntry struct {
	def  *definition
	cost int64
}

// listing holds what List and ListTemplates need: both sorted views, the
// registry revision and the cursor key and clock. It is immutable after init.
type listing struct {
	resources []listEntry
	templates []listEntry
	revision  [sha256.Size]byte
	key       []byte
	keyID     [cursorKeyIDBytes]byte
	now       func() time.Time
}

// init sorts the definitions for listing, computes the registry revision and
// sets the cursor key (a fresh random 32-byte key when key is nil, else key
// as [WithCursorKey] checked and copied it) and clock.
func (l *listing) init(defs []*definition, key []byte, now func() time.Time) error {
	if key == nil {
		key = make([]byte, minCursorKeyBytes)
		if _, err := rand.Read(key); err != nil {
			return configErr("WithCursorKey", "no key given and crypto/rand failed: "+err.Error())
		}
	}
	var resources, templates []*definition
	for _, d := range defs {
		if d.desc.URITemplate != "" {
			templates = append(templates, d)
		} else {
			resources = append(resources, d)
		}
	}
	slices.SortFunc(resources, listCompare)
	slices.SortFunc(templates, listCompare)
	*l = listing{
		resources: listEntries(resources),
		templates: listEntries(templates),
		revision:  registryRevision(resources, templates),
		key:       key,
		keyID:     cursorKeyID(key),
		now:       now,
	}
	return nil
}

func listEntries(defs []*definition) []listEntry {
	out := make([]listEntry, len(defs))
	for i, d := range defs {
		out[i] = listEntry{def: d, cost: int64(definitionSize(d.desc)) + 1}
	}
	return out
}

// Revision returns the registry revision in hex: a deterministic hash of
// every listed field of every definition. Two [Resources] values with the same
// definitions have the same revision; it is meant for logs and operations.
func (r *Resources) Revision() string { return hex.EncodeToString(r.list.revision[:]) }

// List returns one page of the registered concrete resources, ordered by URI
// then name in byte order. It neither resolves plans nor reads bodies nor
// enumerates dynamic assets; templates are listed by ListTemplates.
//
// Every page rechecks [ResourcePolicy.Discover] for each description it
// examines: a [FailureUnavailable] error hides the description; any other error or a
// panic fails the page with [FailurePolicy] ([FailureOutage] when the error
// is a FailureOutage one). A page holds at most PageSize
// visible descriptions and fits [ResourceLimits.ListPageBytes] with the wire
// reserve and the envelope set aside; a visible description too large for an
// empty page fails it with [FailureSize] rather than disappearing.
//
// A cursor is valid for ten minutes and only for the same method,
// registry revision and ScopeKey; any other cursor, and any cursor over
// 4 KiB, fails with [FailureInvalidCursor] and never restarts the
// listing. A cursor does not make the listing a snapshot: descriptions are
// rechecked under the policy in force when each page is produced.
//
// Unless ctx already carries a request scope, List runs under its own
// ReadTimeout; cancellation and the deadline fail with [FailureCanceled] and
// [FailureTimeout]. Errors are *[Failure]; the private cause is behind Unwrap.
// As with [Resources.Read], once List has returned it starts no further
// Discover call, even when one that ignored its context is still running.
func (r *Resources) List(ctx context.Context, req ListRequest) (ListPage, error) {
	return r.listPage(ctx, listMethodResources, req)
}

// ListTemplates returns one page of the registered resource templates,
// ordered by template then name in byte order. Everything List documents
// applies; its cursors are not accepted by List, nor List's by it.
func (r *Resources) ListTemplates(ctx context.Context, req ListRequest) (ListPage, error) {
	return r.listPage(ctx, listMethodTemplates, req)
}

func (r *Resources) listPage(ctx context.Context, m listMethod, req ListRequest) (ListPage, error) {
	if len(req.ScopeKey) == 0 {
		return ListPage{}, NewFailure(FailureInvalidRequest, errMissingScopeKey)
	}
	size := req.PageSize
	switch {
	case size < 0:
		return ListPage{}, NewFailure(FailureInvalidRequest, errNegativePageSize)
	case size == 0:
		size = r.limits.ListPageSize
	case size > r.limits.MaxListPageSize:
		size = r.limits.MaxListPageSize
	}
	entries := r.list.resources
	if m == listMethodTemplates {
		entries = r.list.templates
	}
	scope := sha256.Sum256(req.ScopeKey)
	start := 0
	if req.Cursor != "" {
		pos, err := r.list.decodeCursor(req.Cursor, m, &scope, len(entries))
		if err != nil {
			return ListPage{}, NewFailure(FailureInvalidCursor, err)
		}
		start = pos
	}
	return scoped(ctx, r.limits.ReadTimeout, func(ctx context.Context) (ListPage, error) {
		return r.fillPage(ctx, m, entries, start, size, &scope)
	})
}

// fillPage checks discovery from start on and fills one page.
func (r *Resources) fillPage(ctx context.Context, m listMethod, entries []listEntry, start, size int, scope *[sha256.Size]byte) (ListPage, error) {
	budget := r.limits.ListPageBytes - wire.ReserveBytes - minListEnvelopeBytes
	out := make([]ResourceDefinition, 0, min(size, len(entries)-start))
	used := int64(0)
	next := len(entries)
	for i := start; i < len(entries); i++ {
		if err := ctx.Err(); err != nil {
			return ListPage{}, err
		}
		e := entries[i]
		err := guard(ctx, func() error { return r.policy.Discover(ctx, e.def.description()) })
		switch {
		case err == nil:
		case ctx.Err() != nil, errors.Is(err, errScopeEnded):
			return ListPage{}, err
		case isUnavailable(err):
			continue
		case err != nil:
			return ListPage{}, callbackFailure(FailurePolicy, err)
		}
		if used+e.cost > budget {
			if len(out) == 0 {
				return ListPage{}, NewFailure(FailureSize, fmt.Errorf(
					"listed definition %q (%q) needs %d bytes, the page has %d", listKey(e.def), e.def.desc.Name, e.cost, budget))
			}
			next = i // first on the next page
			break
		}
		used += e.cost
		out = append(out, e.def.description())
		if len(out) == size {
			next = i + 1
			break
		}
	}
	if err := ctx.Err(); err != nil {
		return ListPage{}, err
	}
	page := ListPage{Descriptions: out}
	if next < len(entries) {
		page.NextCursor = r.list.encodeCursor(m, next, scope)
	}
	return page, nil
}
