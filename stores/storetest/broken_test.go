package storetest_test

import (
	"context"
	"math"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/storetest"
)

// Broken stores: stores/memory with one guarantee taken away each, the way
// real stores get it wrong. Each must be caught by the case named for its
// fault.
var broken = map[string]struct {
	wrap func(h *memHarness) storetest.Harness
	// caughtBy is the case that names the fault.
	caughtBy string
}{
	// Re-plans at read time, so the newest version is served.
	"serves-newest": {func(h *memHarness) storetest.Harness { return &servesNewest{h} }, "ChangedItemIsNeverServedInItsNewVersion"},
	// Reads with the server's own all-powerful principal instead of the caller's.
	"ignores-revocation": {func(h *memHarness) storetest.Harness { return &ignoresRevocation{h} }, "RevokedAccessIsUnavailable"},
	// Fetches whatever is stored, whatever the item's Limit says.
	"ignores-read-limit": {func(h *memHarness) storetest.Harness { return &ignoresReadLimit{h} }, "ItemOverReadLimitIsTooLarge"},
	// Reads each planned body while planning (to "validate" it).
	"reads-bodies-while-planning": {func(h *memHarness) storetest.Harness { return &readsWhilePlanning{h} }, "PlanningFetchesNoBody"},
}

const brokenEnv = "STORETEST_BROKEN"

// TestBrokenStoreSuite runs the suite on one broken store when re-executed
// by TestSuiteCatchesBrokenStores; otherwise it does nothing.
func TestBrokenStoreSuite(t *testing.T) {
	kind := os.Getenv(brokenEnv)
	if kind == "" {
		t.Skip("run by TestSuiteCatchesBrokenStores")
	}
	b, ok := broken[kind]
	if !ok {
		t.Fatalf("unknown broken store %q", kind)
	}
	storetest.Run(t, func(ctx context.Context, t *testing.T) (storetest.Harness, error) {
		h, err := newMemHarness(ctx, t)
		if err != nil {
			return nil, err
		}
		return b.wrap(h.(*memHarness)), nil
	})
}

var failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: TestBrokenStoreSuite/([A-Za-z]+)`)

// TestSuiteCatchesBrokenStores proves the suite can fail: each broken store
// fails the case that names its fault.
func TestSuiteCatchesBrokenStores(t *testing.T) {
	if os.Getenv(brokenEnv) != "" {
		t.Skip("inside a broken-store run")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for kind, b := range broken {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), exe, "-test.run=^TestBrokenStoreSuite$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), brokenEnv+"="+kind)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a store that %s:\n%s", kind, out)
			}
			var failed []string
			for _, m := range failLine.FindAllStringSubmatch(string(out), -1) {
				if !slices.Contains(failed, m[1]) {
					failed = append(failed, m[1])
				}
			}
			if !slices.Contains(failed, b.caughtBy) {
				t.Fatalf("a store that %s was not caught by %s; failed cases: %v\n%s", kind, b.caughtBy, failed, out)
			}
			t.Logf("a store that %s fails %v", kind, failed)
		})
	}
}

type servesNewest struct{ *memHarness }

func (h *servesNewest) Binding() core.ResourceBinding {
	b := h.memHarness.Binding()
	b.Reader = core.ItemReader(func(ctx context.Context, item core.ReadItem) (core.ResourcePayload, error) {
		t := item.Target
		fresh, err := h.st.Target(ctx, t.URI(), h.key(t.URI()))
		if err != nil {
			return core.ResourcePayload{}, err
		}
		return h.st.Read(ctx, core.ReadItem{Target: fresh, Limit: item.Limit})
	})
	return b
}

type ignoresRevocation struct{ *memHarness }

const root = "root"

func (h *ignoresRevocation) Create(ctx context.Context, it storetest.Item) (string, error) {
	it.Readers = append(slices.Clone(it.Readers), root)
	return h.memHarness.Create(ctx, it)
}

func (h *ignoresRevocation) Binding() core.ResourceBinding {
	b := h.memHarness.Binding()
	b.Reader = core.ItemReader(func(ctx context.Context, item core.ReadItem) (core.ResourcePayload, error) {
		return h.st.Read(core.WithCaller(ctx, core.Caller{Principal: root}), item)
	})
	return b
}

type ignoresReadLimit struct{ *memHarness }

func (h *ignoresReadLimit) Binding() core.ResourceBinding {
	b := h.memHarness.Binding()
	b.Reader = core.ItemReader(func(ctx context.Context, item core.ReadItem) (core.ResourcePayload, error) {
		item.Limit = math.MaxInt64
		return h.st.Read(ctx, item)
	})
	return b
}

type readsWhilePlanning struct{ *memHarness }

func (h *readsWhilePlanning) Binding() core.ResourceBinding {
	b := h.memHarness.Binding()
	inner := b.Resolver
	b.Resolver = core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
		p, err := inner.Resolve(ctx, m)
		if err == nil {
			for i := range p.Len() {
				if _, err := h.st.Read(ctx, core.ReadItem{Target: p.Item(i), Limit: math.MaxInt64}); err != nil {
					return core.ResourceReadPlan{}, err
				}
			}
		}
		return p, err
	})
	return b
}
