package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/core"
)

// The principals cases use; Principals lists them.
const (
	alice = "alice"
	bob   = "bob"
	carol = "carol"
)

// Principals returns every principal a case may name, for harnesses that
// must provision them (as users, roles or credentials) before Create.
func Principals() []string { return []string{alice, bob, carol} }

// promptly bounds how long a reader may take to notice a context that has
// already ended. It is a hang detector, not a timing assertion.
const promptly = 10 * time.Second

// Run runs every conformance case against the store that newHarness builds,
// each as a subtest of t named for the rule it proves. Each case gets a
// fresh harness. Cases that need a capability the harness reports as
// unsupported are skipped.
func Run(t *testing.T, newHarness MakeHarness) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			c.run(ctx, t, newRig(ctx, t, newHarness))
		})
	}
}

type testCase struct {
	name string
	run  func(ctx context.Context, t *testing.T, r *rig)
}

var cases = []testCase{
	{"ReadReturnsExactBytesAndMIMEType", readsExactBytes},
	{"ChangedItemIsNeverServedInItsNewVersion", changedNeverNew},
	{"RevokedAccessIsUnavailable", revokedUnavailable},
	{"DeletedItemIsUnavailable", deletedUnavailable},
	{"ItemOverReadLimitIsTooLarge", overReadLimit},
	{"RequestStaysWithinItsBudget", withinBudget},
	{"NeverGrantedLooksLikeMissing", neverGrantedLooksLikeMissing},
	{"EndedContextReturnsNoBody", endedContext},
	{"ConcurrentReadersSeeOnlyTheirOwn", concurrentReaders},
	{"PlanningFetchesNoBody", planningFetchesNoBody},
	{"GatewayBundleIsPartialWithRevokedAndChanged", gatewayBundle},
}

// readsExactBytes: a planned item reads back with exactly its bytes and
// MIME type, including explicit empty text and empty blobs.
func readsExactBytes(ctx context.Context, t *testing.T, r *rig) {
	binary := make([]byte, 4099)
	for i := range binary {
		binary[i] = byte(i*7 + i/256) // every byte value, NULs and invalid UTF-8 included
	}
	items := []struct {
		name string
		it   Item
	}{
		{"text", Item{Text: true, MIMEType: "text/plain", Body: []byte("héllo, wörld\n\x00\t\"quoted\" 🙂")}},
		{"json text", Item{Text: true, MIMEType: "application/json", Body: []byte(`{"a":[1,2,"three"]}`)}},
		{"binary", Item{MIMEType: "application/octet-stream", Body: binary}},
		{"empty text", Item{Text: true, MIMEType: "text/plain", Body: []byte{}}},
		{"empty blob", Item{MIMEType: "application/octet-stream", Body: []byte{}}},
	}
	for _, c := range items {
		t.Run(c.name, func(t *testing.T) {
			c.it.Readers = []string{alice}
			uri := r.create(ctx, c.it)
			target := r.plan(ctx, alice, uri)
			p, err := r.read(ctx, alice, target, core.DefaultResourceLimits().MaxItemBytes)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			checkPayload(t, p, c.it)
		})
	}
}

func checkPayload(t *testing.T, p core.ResourcePayload, want Item) {
	t.Helper()
	switch {
	case p.IsZero():
		t.Fatalf("the reader returned a zero payload")
	case p.IsBlob() == want.Text:
		t.Errorf("payload is blob=%v, want text=%v", p.IsBlob(), want.Text)
	case p.MIMEType() != want.MIMEType:
		t.Errorf("MIME type %q, want %q", p.MIMEType(), want.MIMEType)
	}
	if got := body(p); !bytes.Equal(got, want.Body) {
		t.Errorf("body differs: got %d bytes %.40q, want %d bytes %.40q", len(got), got, len(want.Body), want.Body)
	}
}

// changedNeverNew: an item changed between plan and read is never served in
// its new version; the read fails as changed (not Unavailable: the gateway
// reports read_failed, which is retryable), or returns exactly the planned
// version where the store pins versions. A fresh plan reads the new version.
func changedNeverNew(ctx context.Context, t *testing.T, r *rig) {
	for _, text := range []bool{true, false} {
		t.Run(fmt.Sprintf("text=%v", text), func(t *testing.T) {
			old := Item{Text: text, MIMEType: "text/plain", Body: []byte("version one"), Readers: []string{alice}}
			if !text {
				old.MIMEType = "application/octet-stream"
			}
			uri := r.create(ctx, old)
			target := r.plan(ctx, alice, uri)
			newBody := []byte("version two, longer")
			mustSupport(t, "Change", r.h.Change(ctx, uri, newBody))

			p, err := r.read(ctx, alice, target, 1<<20)
			switch {
			case err == nil && bytes.Equal(body(p), newBody):
				t.Fatalf("the reader served the new version under a plan of the old one")
			case err == nil && !bytes.Equal(body(p), old.Body):
				t.Fatalf("the reader served %q, neither the planned version nor the new one", body(p))
			case err == nil:
				checkPayload(t, p, old) // a store that pins versions
			case core.KindOf(err) == core.FailureUnavailable:
				t.Fatalf("a changed item failed as Unavailable (%v); it must fail as changed, so the gateway reports read_failed", err)
			case isTooLarge(err):
				t.Fatalf("a changed item failed as TooLarge (%v); it must fail as changed", err)
			}

			fresh := r.plan(ctx, alice, uri)
			p, err = r.read(ctx, alice, fresh, 1<<20)
			if err != nil {
				t.Fatalf("reading a fresh plan after the change: %v", err)
			}
			if !bytes.Equal(body(p), newBody) {
				t.Fatalf("a fresh plan read %q, want the new version %q", body(p), newBody)
			}
		})
	}
}

// revokedUnavailable: access revoked between plan and read gives
// core.FailureUnavailable on that very read, and restored access is honored on the
// next one.
func revokedUnavailable(ctx context.Context, t *testing.T, r *rig) {
	it := Item{Text: true, MIMEType: "text/plain", Body: []byte("secret plans"), Readers: []string{alice, bob}}
	uri := r.create(ctx, it)
	target := r.plan(ctx, alice, uri)
	mustSupport(t, "Revoke", r.h.Revoke(ctx, uri, alice))

	p, err := r.read(ctx, alice, target, 1<<20)
	if core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("after Revoke the read returned %v (payload zero=%v), want core.FailureUnavailable", err, p.IsZero())
	}
	if !p.IsZero() {
		t.Fatalf("a denied read returned a payload")
	}
	if p, err := r.read(ctx, bob, target, 1<<20); err != nil {
		t.Fatalf("revoking alice also denied bob: %v", err)
	} else {
		checkPayload(t, p, it)
	}

	mustSupport(t, "Restore", r.h.Restore(ctx, uri, alice))
	p, err = r.read(ctx, alice, target, 1<<20)
	if err != nil {
		t.Fatalf("after Restore the read failed: %v", err)
	}
	checkPayload(t, p, it)
}

// deletedUnavailable: an item deleted between plan and read gives
// core.FailureUnavailable, and planning it afterwards does too.
func deletedUnavailable(ctx context.Context, t *testing.T, r *rig) {
	uri := r.create(ctx, Item{Text: true, MIMEType: "text/plain", Body: []byte("short-lived"), Readers: []string{alice}})
	target := r.plan(ctx, alice, uri)
	mustSupport(t, "Delete", r.h.Delete(ctx, uri))

	p, err := r.read(ctx, alice, target, 1<<20)
	if core.KindOf(err) != core.FailureUnavailable || !p.IsZero() {
		t.Fatalf("reading a deleted item returned %v (payload zero=%v), want core.FailureUnavailable and no payload", err, p.IsZero())
	}
	if _, err := r.tryPlan(ctx, alice, uri); core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("planning a deleted item returned %v, want core.FailureUnavailable", err)
	}
}

// overReadLimit: an item larger than its core.ReadItem Limit is a *core.TooLargeError, with
// the stored size when the store reports one; at exactly its size and above
// it reads whole.
func overReadLimit(ctx context.Context, t *testing.T, r *rig) {
	const size = 1000
	for _, text := range []bool{true, false} {
		t.Run(fmt.Sprintf("text=%v", text), func(t *testing.T) {
			it := Item{Text: text, MIMEType: "text/plain", Body: bytes.Repeat([]byte("abcdefghij"), size/10), Readers: []string{alice}}
			if !text {
				it.MIMEType = "application/octet-stream"
			}
			uri := r.create(ctx, it)
			target := r.plan(ctx, alice, uri)
			for _, limit := range []int64{0, 1, size - 1} {
				p, err := r.read(ctx, alice, target, limit)
				var tl *core.TooLargeError
				if !errors.As(err, &tl) {
					t.Fatalf("limit %d: got %v (payload zero=%v), want a *core.TooLargeError", limit, err, p.IsZero())
				}
				if tl.Size != size && tl.Size != -1 {
					t.Errorf("limit %d: TooLarge size %d, want %d (or -1 when unknown)", limit, tl.Size, size)
				}
				if !p.IsZero() {
					t.Errorf("limit %d: TooLarge came with a payload", limit)
				}
			}
			for _, limit := range []int64{size, size + 1} {
				p, err := r.read(ctx, alice, target, limit)
				if err != nil {
					t.Fatalf("limit %d: %v", limit, err)
				}
				checkPayload(t, p, it)
			}
		})
	}
	t.Run("empty item at limit 0", func(t *testing.T) {
		it := Item{MIMEType: "application/octet-stream", Body: []byte{}, Readers: []string{alice}}
		uri := r.create(ctx, it)
		p, err := r.read(ctx, alice, r.plan(ctx, alice, uri), 0)
		if err != nil {
			t.Fatalf("an empty item under a zero limit: %v", err)
		}
		checkPayload(t, p, it)
	})
}

// withinBudget: a request for several items answers each in order and
// returns bodies only while their sum stays within the request's Budget;
// an item past it is core.TooLarge (its size, or -1), never a body.
func withinBudget(ctx context.Context, t *testing.T, r *rig) {
	var items []core.ReadItem
	var want []Item
	for i := range 3 {
		it := Item{Text: true, MIMEType: "text/plain", Body: bytes.Repeat([]byte{byte('a' + i)}, 100), Readers: []string{alice}}
		items = append(items, core.ReadItem{Target: r.plan(ctx, alice, r.create(ctx, it)), Limit: 1 << 20})
		want = append(want, it)
	}
	out, err := r.reader.Read(r.h.Context(ctx, alice), core.ReadRequest{Items: items, Budget: 250})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if len(out) != len(items) {
		t.Fatalf("%d results for %d items", len(out), len(items))
	}
	for i := range 2 {
		if out[i].Err != nil {
			t.Fatalf("item %d, within the budget: %v", i, out[i].Err)
		}
		checkPayload(t, out[i].Payload, want[i])
	}
	var tl *core.TooLargeError
	switch {
	case !errors.As(out[2].Err, &tl):
		t.Fatalf("the item past the budget: %v (payload zero=%v), want a *core.TooLargeError", out[2].Err, out[2].Payload.IsZero())
	case tl.Size != 100 && tl.Size != -1:
		t.Errorf("the item past the budget: TooLarge size %d, want 100 (or -1 when unknown)", tl.Size)
	case !out[2].Payload.IsZero():
		t.Error("TooLarge came with a payload")
	}
}

// neverGrantedLooksLikeMissing: an item the principal never had access to
// fails exactly like a missing one, when planned and when read, so that a
// different error cannot reveal that it exists.
func neverGrantedLooksLikeMissing(ctx context.Context, t *testing.T, r *rig) {
	private := r.create(ctx, Item{Text: true, MIMEType: "text/plain", Body: []byte("alice only"), Readers: []string{alice}})
	gone := r.create(ctx, Item{Text: true, MIMEType: "text/plain", Body: []byte("deleted"), Readers: []string{bob}})
	privateTarget := r.plan(ctx, alice, private)
	goneTarget := r.plan(ctx, bob, gone)
	mustSupport(t, "Delete", r.h.Delete(ctx, gone))

	_, errNever := r.tryPlan(ctx, bob, private)
	_, errMissing := r.tryPlan(ctx, bob, gone)
	sameUnavailable(t, "planning", errNever, errMissing)

	pNever, errNever := r.read(ctx, bob, privateTarget, 1<<20)
	pMissing, errMissing := r.read(ctx, bob, goneTarget, 1<<20)
	if !pNever.IsZero() || !pMissing.IsZero() {
		t.Fatalf("a denied read returned a payload")
	}
	sameUnavailable(t, "reading", errNever, errMissing)
}

func sameUnavailable(t *testing.T, what string, never, missing error) {
	t.Helper()
	if core.KindOf(never) != core.FailureUnavailable {
		t.Errorf("%s an item never granted: %v, want core.FailureUnavailable", what, never)
	}
	if core.KindOf(missing) != core.FailureUnavailable {
		t.Errorf("%s a missing item: %v, want core.FailureUnavailable", what, missing)
	}
	if never != nil && missing != nil && never.Error() != missing.Error() {
		t.Errorf("%s: never granted says %q but missing says %q; the public errors must be the same", what, never, missing)
	}
}

// endedContext: a reader given a canceled context or an expired deadline
// returns promptly with an error and never a body.
func endedContext(ctx context.Context, t *testing.T, r *rig) {
	it := Item{MIMEType: "application/octet-stream", Body: bytes.Repeat([]byte{1, 2, 3}, 100), Readers: []string{alice}}
	uri := r.create(ctx, it)
	target := r.plan(ctx, alice, uri)

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	expired, cancel2 := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel2()
	for name, c := range map[string]context.Context{"canceled": canceled, "deadline passed": expired} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			p, err := r.read(c, alice, target, 1<<20)
			if took := time.Since(start); took > promptly {
				t.Errorf("the reader took %v to notice an ended context", took)
			}
			if err == nil || !p.IsZero() {
				t.Fatalf("an ended context gave err=%v and a payload (zero=%v); want an error and no body", err, p.IsZero())
			}
		})
	}
}

// concurrentReaders: many items read concurrently by several principals:
// each read returns exactly what that principal may see.
func concurrentReaders(ctx context.Context, t *testing.T, r *rig) {
	type planned struct {
		it     Item
		target core.ResourceTarget
	}
	grants := [][]string{{alice}, {bob}, {carol}, {alice, bob}, {bob, carol}, {alice, carol}, {alice, bob, carol}}
	var items []planned
	for i := range 14 {
		g := grants[i%len(grants)]
		it := Item{Text: i%2 == 0, MIMEType: "text/plain", Body: fmt.Appendf(nil, "item %d for %v", i, g), Readers: g}
		if !it.Text {
			it.MIMEType = "application/octet-stream"
		}
		uri := r.create(ctx, it)
		items = append(items, planned{it: it, target: r.plan(ctx, g[0], uri)})
	}
	const readsEach = 40
	var wg sync.WaitGroup
	errs := make(chan error, 3*2*readsEach)
	for w, principal := range []string{alice, bob, carol, alice, bob, carol} {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range readsEach {
				pl := items[rng.IntN(len(items))]
				p, err := r.read(ctx, principal, pl.target, 1<<20)
				allowed := slices.Contains(pl.it.Readers, principal)
				switch {
				case allowed && err != nil:
					errs <- fmt.Errorf("%s reading %q: %v", principal, pl.it.Body, err)
				case allowed && !bytes.Equal(body(p), pl.it.Body):
					errs <- fmt.Errorf("%s read %q, want %q", principal, body(p), pl.it.Body)
				case !allowed && core.KindOf(err) != core.FailureUnavailable:
					errs <- fmt.Errorf("%s reading %q it may not see: err=%v payload=%q", principal, pl.it.Body, err, body(p))
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 10 {
			t.Error(err)
		}
	}
	if n > 10 {
		t.Errorf("... and %d more wrong reads", n-10)
	}
}

// planningFetchesNoBody: resolver helpers read identity metadata only; a
// plan fetches no body, while a read does (so the counter is live).
func planningFetchesNoBody(ctx context.Context, t *testing.T, r *rig) {
	counter, ok := r.h.(BodyCounter)
	if !ok {
		t.Skip("the harness does not implement BodyCounter")
	}
	var uris []string
	for i := range 3 {
		uris = append(uris, r.create(ctx, Item{Text: true, MIMEType: "text/plain", Body: fmt.Appendf(nil, "body %d", i), Readers: []string{alice}}))
	}
	before := counter.BodyReads()
	var targets []core.ResourceTarget
	for _, u := range uris {
		targets = append(targets, r.plan(ctx, alice, u))
	}
	if n := counter.BodyReads() - before; n != 0 {
		t.Fatalf("planning %d items fetched %d bodies; resolver helpers must read identity metadata only", len(uris), n)
	}
	if _, err := r.read(ctx, alice, targets[0], 1<<20); err != nil {
		t.Fatalf("read: %v", err)
	}
	if n := counter.BodyReads() - before; n != 1 {
		t.Fatalf("one read counted %d body fetches, want 1: the counter does not count", n)
	}
}

// gatewayBundle: through a core.Resources over the store, a bundle in which
// one item is revoked and another changed between plan and read comes back
// partial, with one unavailable and one read_failed issue, the other items
// intact and in order. A store that pins versions may serve the changed
// item in its planned version instead.
func gatewayBundle(ctx context.Context, t *testing.T, r *rig) {
	var its []Item
	var targets []core.ResourceTarget
	var uris []string
	for i := range 4 {
		it := Item{Text: i != 2, MIMEType: "text/plain", Body: fmt.Appendf(nil, "bundle item %d", i), Readers: []string{alice}}
		if !it.Text {
			it.MIMEType = "application/octet-stream"
		}
		uri := r.create(ctx, it)
		its, uris = append(its, it), append(uris, uri)
		targets = append(targets, r.plan(ctx, alice, uri))
	}
	const bundleURI = "storetest://bundle"
	requested, err := core.NewResourceTarget(bundleURI, "bundle", nil)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := core.NewResources([]core.ResourceBinding{{
		Definition: core.ResourceDefinition{URI: bundleURI, Name: "bundle"},
		Resolver: core.ResolverFunc(func(context.Context, core.ResourceMatch) (core.ResourceReadPlan, error) {
			return core.NewResourceReadPlan(requested, targets...)
		}),
		Reader: r.reader,
	}}, AllowAll())
	if err != nil {
		t.Fatal(err)
	}
	mustSupport(t, "Revoke", r.h.Revoke(ctx, uris[1], alice))
	mustSupport(t, "Change", r.h.Change(ctx, uris[2], []byte("bundle item 2, changed")))

	res, err := gw.Read(r.h.Context(ctx, alice), bundleURI)
	if err != nil {
		t.Fatalf("gateway read: %v", err)
	}
	if !res.Partial() {
		t.Fatalf("the bundle is complete; want partial with the revoked item missing")
	}
	items := res.Items()[1:] // after the warning
	var gotURIs, wantURIs []string
	for _, it := range items {
		gotURIs = append(gotURIs, it.URI())
	}
	wantCodes := []core.IssueCode{core.IssueUnavailable, core.IssueReadFailed}
	wantURIs = []string{targets[0].URI(), targets[3].URI()}
	if len(items) == 3 { // the store pinned the changed item's version
		wantCodes = wantCodes[:1]
		wantURIs = []string{targets[0].URI(), targets[2].URI(), targets[3].URI()}
	}
	if !slices.Equal(gotURIs, wantURIs) {
		t.Fatalf("items %q, want %q in plan order", gotURIs, wantURIs)
	}
	for _, it := range items {
		i := slices.IndexFunc(targets, func(x core.ResourceTarget) bool { return x.URI() == it.URI() })
		got := []byte(it.Text())
		if it.IsBlob() {
			got = it.Blob()
		}
		if !bytes.Equal(got, its[i].Body) {
			t.Errorf("item %d is %q, want %q", i, got, its[i].Body)
		}
	}
	var codes []core.IssueCode
	for _, is := range res.Issues() {
		codes = append(codes, is.Code())
	}
	if !slices.Equal(codes, wantCodes) || res.IssuesOmitted() != 0 {
		t.Fatalf("issues %v (+%d omitted), want %v", codes, res.IssuesOmitted(), wantCodes)
	}
}

func isTooLarge(err error) bool {
	var tl *core.TooLargeError
	return errors.As(err, &tl)
}
