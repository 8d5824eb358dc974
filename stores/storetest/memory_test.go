package storetest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/memory"
	"go.phpboyscout.uk/mcp/resources/stores/storetest"
)

// TestMemoryStore runs the conformance suite on stores/memory: the whole of
// what a store author writes to prove a store is one call like this one,
// plus a harness such as memHarness below.
func TestMemoryStore(t *testing.T) {
	storetest.Run(t, newMemHarness)
}

func newMemHarness(ctx context.Context, t *testing.T) (storetest.Harness, error) {
	return &memHarness{st: memory.New(nil), items: map[string]storetest.Item{}}, nil
}

// memHarness serves items at mem://items/{key}.
type memHarness struct {
	st    *memory.Store
	next  atomic.Int64
	mu    sync.Mutex
	items map[string]storetest.Item // by key: what Change keeps
}

const memPrefix = "mem://items/"

var _ storetest.BodyCounter = (*memHarness)(nil)

func (h *memHarness) Binding() core.ResourceBinding {
	return h.st.Binding(core.ResourceDefinition{URITemplate: memPrefix + "{key}", Name: "item"}, memory.KeyFromVar("key"))
}

func (h *memHarness) Create(ctx context.Context, it storetest.Item) (string, error) {
	key := fmt.Sprintf("k%d", h.next.Add(1))
	if _, err := h.st.Put(key, memory.Item{MIMEType: it.MIMEType, Text: it.Text, Body: it.Body}); err != nil {
		return "", err
	}
	for _, p := range it.Readers {
		h.st.Grant(key, p, memory.Access{Read: true})
	}
	h.mu.Lock()
	h.items[key] = it
	h.mu.Unlock()
	return memPrefix + key, nil
}

func (h *memHarness) key(uri string) string { return strings.TrimPrefix(uri, memPrefix) }

func (h *memHarness) Change(ctx context.Context, uri string, body []byte) error {
	key := h.key(uri)
	h.mu.Lock()
	it := h.items[key]
	h.mu.Unlock()
	_, err := h.st.Put(key, memory.Item{MIMEType: it.MIMEType, Text: it.Text, Body: body})
	return err
}

func (h *memHarness) Revoke(ctx context.Context, uri, principal string) error {
	if !h.st.Revoke(h.key(uri), principal) {
		return fmt.Errorf("no grant of %q on %q", principal, uri)
	}
	return nil
}

func (h *memHarness) Restore(ctx context.Context, uri, principal string) error {
	if !h.st.Grant(h.key(uri), principal, memory.Access{Read: true}) {
		return fmt.Errorf("no item %q", uri)
	}
	return nil
}

func (h *memHarness) Delete(ctx context.Context, uri string) error {
	if !h.st.Delete(h.key(uri)) {
		return fmt.Errorf("no item %q", uri)
	}
	return nil
}

func (h *memHarness) Context(ctx context.Context, principal string) context.Context {
	return core.WithCaller(ctx, core.Caller{Principal: principal})
}

func (h *memHarness) BodyReads() int64 { return h.st.BodyReads() }
