package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/internal/wire"

	"go.phpboyscout.uk/mcp/resources/internal/mediatype"
)

// Tests of the contract's sections "Selection and identity" (plans, targets,
// payloads), "Authorization and completion" and "Partial bundles", one rule
// each, named after the rule.

// --- Selection and identity: plans, targets, payloads ---

func TestResolveReceivesMatchAndReturnsConstructedPlan(t *testing.T) {
	g := newRig(t, "test://a")
	var got ResourceMatch
	g.resolve = func(ctx context.Context, m ResourceMatch) (ResourceReadPlan, error) {
		got = m
		return ResourceReadPlan{}, nil // not constructed
	}
	_, err := g.read()
	wantKind(t, err, FailureInvalidPlan)
	if got.URI() != bundleURI || got.Definition().Name != "bundle" {
		t.Fatalf("match = %q %q", got.URI(), got.Definition().Name)
	}
}

func TestPlanNamesCanonicalRequestedTarget(t *testing.T) {
	g := newRig(t, "test://a")
	g.resolve = func(ctx context.Context, m ResourceMatch) (ResourceReadPlan, error) {
		req, _ := NewResourceTarget("test://other", "bundle", nil)
		item, _ := NewResourceTarget("test://a", "item", nil)
		return NewResourceReadPlan(req, item)
	}
	_, err := g.read()
	wantKind(t, err, FailureInvalidPlan)
}

func TestPlanItemsAreReadInPlanOrder(t *testing.T) {
	g := newRig(t, "test://c", "test://a", "test://b")
	res := mustRead(t, g)
	if got := itemURIs(res); !slices.Equal(got, []string{"test://c", "test://a", "test://b"}) {
		t.Fatalf("items = %v", got)
	}
}

func TestTargetOwnsURIRepresentationAndAuthorizationData(t *testing.T) {
	authz := json.RawMessage(`{"row":42}`)
	tg, err := NewResourceTarget("db://t/1", "row", authz)
	if err != nil {
		t.Fatal(err)
	}
	authz[2] = 'X' // the caller's buffer changes; the target must not
	if got := string(tg.AuthorizationData()); got != `{"row":42}` {
		t.Fatalf("authorization data = %s", got)
	}
	ad := tg.AuthorizationData()
	ad[2] = 'Y'
	if got := string(tg.AuthorizationData()); got != `{"row":42}` {
		t.Fatalf("authorization data mutated through accessor: %s", got)
	}
	if tg.URI() != "db://t/1" || tg.Representation() != "row" {
		t.Fatalf("target = %q %q", tg.URI(), tg.Representation())
	}
	noAuthz, err := NewResourceTarget("db://t/1", "row", nil)
	if err != nil || noAuthz.AuthorizationData() != nil {
		t.Fatalf("optional authorization data: %v %v", noAuthz.AuthorizationData(), err)
	}
}

func TestTargetConstructionRejectsBadInput(t *testing.T) {
	for _, c := range []struct {
		name, uri, repr string
		authz           json.RawMessage
	}{
		{"empty URI", "", "item", nil},
		{"relative URI", "a/b", "item", nil},
		{"reserved warning scheme", "mcp-warning://read/00000000000000000000000000000000", "item", nil},
		{"reserved warning scheme any case", "MCP-Warning://read/x", "item", nil},
		{"empty representation", "test://a", "", nil},
		{"invalid UTF-8 representation", "test://a", "\xff", nil},
		{"invalid authorization JSON", "test://a", "item", json.RawMessage(`{`)},
		{"oversized authorization JSON", "test://a", "item", json.RawMessage(`"` + strings.Repeat("a", maxAuthorizationBytes) + `"`)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := NewResourceTarget(c.uri, c.repr, c.authz); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestSameImmutableIdentityReachesPolicyAndStorage(t *testing.T) {
	g := newRig(t, "test://a")
	g.items[0].authz = json.RawMessage(`{"tenant":"t1","row":7}`)
	g.items[0].repr = "thumbnail"
	var seen []string
	record := func(where string, tg ResourceTarget) {
		seen = append(seen, fmt.Sprintf("%s %s %s %s", where, tg.URI(), tg.Representation(), tg.AuthorizationData()))
	}
	r, err := NewResources([]ResourceBinding{{
		Definition: ResourceDefinition{URI: bundleURI, Name: "bundle"},
		Resolver:   g.binding().Resolver,
		Reader: ItemReader(func(ctx context.Context, item ReadItem) (ResourcePayload, error) {
			tg := item.Target
			record("read", tg)
			return TextPayload("text/plain", "x"), nil
		}),
	}}, PerTarget(TargetPolicy{
		Discover: func(context.Context, ResourceDefinition) error { return nil },
		Visibility: func(ctx context.Context, tg ResourceTarget) (Visibility, error) {
			if tg.URI() != bundleURI {
				record("vis", tg)
			}
			return Visibility{Visible: true}, nil
		},
		Read: func(ctx context.Context, tg ResourceTarget) error {
			if tg.URI() != bundleURI {
				record("perm", tg)
			}
			return nil
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(context.Background(), bundleURI); err != nil {
		t.Fatal(err)
	}
	id := ` test://a thumbnail {"tenant":"t1","row":7}`
	want := []string{"vis" + id, "perm" + id, "read" + id, "vis" + id, "perm" + id}
	if !slices.Equal(seen, want) {
		t.Fatalf("identities seen:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

func TestPrivateJSONNeverBecomesResultMetadata(t *testing.T) {
	const canary = "CANARY-AUTHZ-7f3a"
	g := newRig(t, "test://a", "test://b")
	g.items[0].authz = json.RawMessage(`{"secret":"` + canary + `"}`)
	g.items[1].authz = json.RawMessage(`{"secret":"` + canary + `"}`)
	g.deny("test://b", 0, 1)
	g.disclose[1]["test://b"] = true
	res := mustRead(t, g)
	if out := encodeResult(t, res); strings.Contains(string(out), canary) {
		t.Fatalf("authorization data leaked: %s", out)
	}
}

func TestDifferentRepresentationsNeedDifferentURIs(t *testing.T) {
	req, _ := NewResourceTarget("test://bundle", "bundle", nil)
	a, _ := NewResourceTarget("test://a", "full", nil)
	b, _ := NewResourceTarget("test://a", "thumbnail", nil)
	if _, err := NewResourceReadPlan(req, a, b); err == nil {
		t.Fatal("plan with one URI in two representations was accepted")
	}
	c, _ := NewResourceTarget("test://a?size=thumb", "thumbnail", nil)
	if _, err := NewResourceReadPlan(req, a, c); err != nil {
		t.Fatalf("distinct URIs rejected: %v", err)
	}
}

func TestDuplicateItemURIsFailPlanConstruction(t *testing.T) {
	req, _ := NewResourceTarget("test://bundle", "bundle", nil)
	a, _ := NewResourceTarget("test://a", "item", nil)
	if _, err := NewResourceReadPlan(req, a, a); err == nil {
		t.Fatal("duplicate accepted")
	}
}

func TestZeroTargetsAndPlansAreInvalid(t *testing.T) {
	req, _ := NewResourceTarget("test://bundle", "bundle", nil)
	if _, err := NewResourceReadPlan(ResourceTarget{}); err == nil {
		t.Fatal("zero requested target accepted")
	}
	if _, err := NewResourceReadPlan(req, ResourceTarget{}); err == nil {
		t.Fatal("zero item target accepted")
	}
	if !(ResourceReadPlan{}).IsZero() {
		t.Fatal("zero plan is not zero")
	}
	p, err := NewResourceReadPlan(req)
	if err != nil || p.IsZero() || p.Len() != 0 {
		t.Fatalf("plan with zero items: %v %v", p, err)
	}
}

func TestReadReturnsPayloadThatGatewayBindsToTarget(t *testing.T) {
	g := newRig(t, "test://a")
	g.item("test://a").read = func(ctx context.Context, tg ResourceTarget) (ResourcePayload, error) {
		return TextPayload("text/markdown", "# a"), nil
	}
	res := mustRead(t, g)
	it := res.Items()[0]
	if it.URI() != "test://a" || it.MIMEType() != "text/markdown" || it.Text() != "# a" {
		t.Fatalf("item = %q %q %q", it.URI(), it.MIMEType(), it.Text())
	}
}

func TestEachItemDeclaresItsOwnMIMEType(t *testing.T) {
	g := newRig(t, "test://a", "test://b")
	g.item("test://a").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return BlobPayload("image/png", []byte{0x89, 'P'}), nil
	}
	g.item("test://b").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return TextPayload("application/json", `{}`), nil
	}
	res := mustRead(t, g) // the definition says text/plain
	got := []string{res.Items()[0].MIMEType(), res.Items()[1].MIMEType()}
	if !slices.Equal(got, []string{"image/png", "application/json"}) {
		t.Fatalf("MIME types = %v", got)
	}
}

func TestExplicitEmptyTextAndEmptyBlobAreValid(t *testing.T) {
	g := newRig(t, "test://text", "test://blob")
	g.item("test://text").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return TextPayload("text/plain", ""), nil
	}
	g.item("test://blob").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return BlobPayload("application/octet-stream", nil), nil
	}
	res := mustRead(t, g)
	if res.Partial() || len(res.Items()) != 2 {
		t.Fatalf("partial=%v items=%d", res.Partial(), len(res.Items()))
	}
	if it := res.Items()[0]; it.IsBlob() || it.Text() != "" {
		t.Fatal("empty text item wrong")
	}
	if it := res.Items()[1]; !it.IsBlob() || it.Blob() == nil || len(it.Blob()) != 0 {
		t.Fatal("empty blob item wrong")
	}
	out := string(encodeResult(t, res))
	if !strings.Contains(out, `"text":""`) || !strings.Contains(out, `"blob":""`) {
		t.Fatalf("explicit empty variants lost on the wire: %s", out)
	}
}

func TestZeroPayloadIsInvalidContent(t *testing.T) {
	for name, p := range map[string]ResourcePayload{
		"zero payload":      {},
		"text not UTF-8":    TextPayload("text/plain", "\xff\xfe"),
		"missing MIME type": TextPayload("", "x"),
		"bad MIME type":     BlobPayload("not a type", []byte("x")),
	} {
		t.Run(name, func(t *testing.T) {
			g := newRig(t, "test://bad", "test://ok")
			g.item("test://bad").read = func(context.Context, ResourceTarget) (ResourcePayload, error) { return p, nil }
			res := mustRead(t, g)
			if got := issueCodes(res); len(got) != 1 || got[0] != IssueInvalidContent {
				t.Fatalf("issues = %v", got)
			}
		})
	}
}

func TestBlobPayloadCopiesData(t *testing.T) {
	data := []byte("abc")
	p := BlobPayload("application/octet-stream", data)
	data[0] = 'X'
	if string(p.Blob()) != "abc" {
		t.Fatal("payload shares the caller's buffer")
	}
}

// --- Authorization and completion ---

func TestDiscoveryIsCheckedBeforeResolve(t *testing.T) {
	g := newRig(t, "test://a")
	g.noFind[0] = true
	_, err := g.read()
	wantKind(t, err, FailureUnavailable)
	for _, e := range g.eventLog() {
		if e == "resolve" {
			t.Fatal("resolved after discovery was denied")
		}
	}
}

func TestPlanIsValidatedBeforeAnyPolicyTargetCheck(t *testing.T) {
	g := newRig(t, "test://a")
	g.opts = []Option{WithResourceLimits(ResourceLimits{MaxPlanItems: 1})}
	g.items = append(g.items, rigItem{uri: "test://b"})
	_, err := g.read()
	wantKind(t, err, FailureInvalidPlan)
	for _, e := range g.eventLog() {
		if strings.HasPrefix(e, "vis") || strings.HasPrefix(e, "read") {
			t.Fatalf("policy or storage reached with an invalid plan: %v", g.eventLog())
		}
	}
}

func TestVisibilityAndReadPermissionDecidedForWholePlanBeforeAnyBody(t *testing.T) {
	g := newRig(t, "test://a", "test://b", "test://c")
	g.deny("test://b", 0)
	mustRead(t, g)
	ev := g.eventLog()
	firstRead := -1
	for i, e := range ev {
		if strings.HasPrefix(e, "read ") {
			firstRead = i
			break
		}
	}
	want := []string{"discover", "resolve", "vis test://bundle", "perm test://bundle",
		"vis test://a", "perm test://a", "vis test://b", "perm test://b", "vis test://c", "perm test://c"}
	if firstRead < 0 || !slices.Equal(ev[:firstRead], want) {
		t.Fatalf("events before first body read:\n%v\nwant\n%v", ev, want)
	}
}

func TestHiddenItemIsOutsideTheVisibleSelection(t *testing.T) {
	const hidden = "test://hidden-CANARY-91c2"
	g := newRig(t, "test://a", hidden)
	g.hide(hidden, 0, 1)
	g.disclose[1][hidden] = true
	res := mustRead(t, g)
	if res.Partial() || res.IssuesOmitted() != 0 || len(res.Issues()) != 0 {
		t.Fatalf("hidden item left a trace: partial=%v omitted=%d issues=%v", res.Partial(), res.IssuesOmitted(), res.Issues())
	}
	if out := encodeResult(t, res); strings.Contains(string(out), "CANARY-91c2") {
		t.Fatalf("hidden URI on the wire: %s", out)
	}
	for _, e := range g.eventLog() {
		if e == "read "+hidden || e == "perm "+hidden {
			t.Fatalf("hidden item was permission-checked or read: %v", g.eventLog())
		}
	}
}

func TestVisibleItemDeniedReadAccessRemainsAnOmission(t *testing.T) {
	g := newRig(t, "test://a", "test://b")
	g.deny("test://b", 0, 1)
	res := mustRead(t, g)
	if !res.Partial() || !slices.Equal(itemURIs(res), []string{"test://a"}) {
		t.Fatalf("partial=%v items=%v", res.Partial(), itemURIs(res))
	}
	if got := issueCodes(res); len(got) != 1 || got[0] != IssueUnavailable {
		t.Fatalf("issues = %v", got)
	}
	for _, e := range g.eventLog() {
		if e == "read test://b" {
			t.Fatal("denied item was read")
		}
	}
}

func TestFailureUnavailableDeniesDiscoverAndReadPolicy(t *testing.T) {
	t.Run("discover", func(t *testing.T) {
		g := newRig(t, "test://a")
		g.noFind[0] = true
		_, err := g.read()
		wantKind(t, err, FailureUnavailable)
	})
	t.Run("read policy on requested target", func(t *testing.T) {
		g := newRig(t, "test://a")
		g.deny(bundleURI, 0)
		_, err := g.read()
		wantKind(t, err, FailureUnavailable)
	})
	t.Run("requested target hidden", func(t *testing.T) {
		g := newRig(t, "test://a")
		g.hide(bundleURI, 0)
		_, err := g.read()
		wantKind(t, err, FailureUnavailable)
	})
	t.Run("wrapped typed failure still denies", func(t *testing.T) {
		g := newRig(t, "test://a")
		g.discoverErr = func(int) error { return fmt.Errorf("wrapped: %w", NewFailure(FailureUnavailable, nil)) }
		_, err := g.read()
		wantKind(t, err, FailureUnavailable)
	})
}

func TestNotFoundLooksLikeDenied(t *testing.T) {
	g := newRig(t, "test://a")
	r := g.resources()
	_, notFound := r.Read(context.Background(), "test://nothing-here")
	g.noFind[0] = true
	_, denied := g.read()
	wantKind(t, notFound, FailureUnavailable)
	wantKind(t, denied, FailureUnavailable)
	if notFound.Error() != denied.Error() {
		t.Fatalf("messages differ: %q vs %q", notFound, denied)
	}
}

func TestOtherPolicyErrorsFailTheWholeRead(t *testing.T) {
	boom := errors.New("policy backend down")
	cases := map[string]func(g *rig){
		"discover error":       func(g *rig) { g.discoverErr = func(int) error { return boom } },
		"final discover error": func(g *rig) { g.discoverErr = func(p int) error { return map[int]error{1: boom}[p] } },
		"visibility error on item": func(g *rig) {
			g.visibilityErr = func(_ int, u string) error { return map[bool]error{true: boom}[u == "test://b"] }
		},
		"visibility error in recheck": func(g *rig) { g.visibilityErr = func(p int, _ string) error { return map[int]error{1: boom}[p] } },
		"read policy error on item": func(g *rig) {
			g.readPermErr = func(_ int, u string) error { return map[bool]error{true: boom}[u == "test://b"] }
		},
		"visibility returning Unavailable is still an error": func(g *rig) {
			g.visibilityErr = func(_ int, u string) error {
				return map[bool]error{true: NewFailure(FailureUnavailable, nil)}[u == "test://b"]
			}
		},
	}
	for name, set := range cases {
		t.Run(name, func(t *testing.T) {
			g := newRig(t, "test://a", "test://b")
			set(g)
			res, err := g.read()
			f := wantKind(t, err, FailurePolicy)
			if res != nil {
				t.Fatal("bundle returned with a policy failure")
			}
			if name != "visibility returning Unavailable is still an error" && !errors.Is(f, boom) {
				t.Fatalf("private cause lost: %v", f.Unwrap())
			}
		})
	}
}

func TestBodyReadsAreSequentialInPlanOrder(t *testing.T) {
	uris := []string{"test://1", "test://2", "test://3", "test://4", "test://5"}
	g := newRig(t, uris...)
	var running, maxRunning atomic.Int32
	var order []string
	for _, u := range uris {
		g.item(u).read = func(ctx context.Context, tg ResourceTarget) (ResourcePayload, error) {
			n := running.Add(1)
			if n > maxRunning.Load() {
				maxRunning.Store(n)
			}
			order = append(order, tg.URI())
			time.Sleep(2 * time.Millisecond)
			running.Add(-1)
			return TextPayload("text/plain", "x"), nil
		}
	}
	mustRead(t, g)
	if maxRunning.Load() != 1 || !slices.Equal(order, uris) {
		t.Fatalf("max concurrent reads %d, order %v", maxRunning.Load(), order)
	}
}

func TestFinalRecheckCoversDiscoveryRequestedTargetAndEveryItem(t *testing.T) {
	g := newRig(t, "test://a", "test://b")
	g.hide("test://b", 0) // hidden at first: never read, but rechecked
	mustRead(t, g)
	ev := g.eventLog()
	var last []string
	for i, e := range ev {
		if e == "discover" && i > 0 {
			last = ev[i:]
		}
	}
	want := []string{"discover", "vis test://bundle", "perm test://bundle", "vis test://a", "perm test://a", "vis test://b", "perm test://b"}
	if !slices.Equal(last, want) {
		t.Fatalf("final recheck = %v, want %v", last, want)
	}
}

func TestDiscoveryRevokedBeforeReturnFailsWithNoBundle(t *testing.T) {
	g := newRig(t, "test://a")
	g.noFind[1] = true
	res, err := g.read()
	wantKind(t, err, FailureUnavailable)
	if res != nil {
		t.Fatal("bundle returned")
	}
}

func TestRequestedTargetRevokedBeforeReturnFailsWithNoBundle(t *testing.T) {
	for name, set := range map[string]func(g *rig){
		"hidden": func(g *rig) { g.hide(bundleURI, 1) },
		"denied": func(g *rig) { g.deny(bundleURI, 1) },
	} {
		t.Run(name, func(t *testing.T) {
			g := newRig(t, "test://a")
			set(g)
			res, err := g.read()
			wantKind(t, err, FailureUnavailable)
			if res != nil {
				t.Fatal("bundle returned")
			}
		})
	}
}

func TestNowHiddenItemIsRemovedWithoutWarningOrCount(t *testing.T) {
	g := newRig(t, "test://a", "test://b")
	g.hide("test://b", 1)
	g.disclose[1]["test://b"] = true
	res := mustRead(t, g)
	if res.Partial() || res.IssuesOmitted() != 0 || len(res.Issues()) != 0 || !slices.Equal(itemURIs(res), []string{"test://a"}) {
		t.Fatalf("partial=%v omitted=%d issues=%v items=%v", res.Partial(), res.IssuesOmitted(), res.Issues(), itemURIs(res))
	}
	if strings.Contains(string(encodeResult(t, res)), "test://b") {
		t.Fatal("now-hidden item left a trace")
	}
}

func TestNowHiddenFailedItemLeavesNoTrace(t *testing.T) {
	g := newRig(t, "test://a", "test://b")
	g.item("test://b").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return ResourcePayload{}, errors.New("disk on fire")
	}
	g.hide("test://b", 1)
	res := mustRead(t, g)
	if res.Partial() || len(res.Issues()) != 0 || res.IssuesOmitted() != 0 {
		t.Fatalf("now-hidden failure reported: %v", res.Issues())
	}
}

func TestStillVisibleRevokedItemIsRemovedWithSafeIssue(t *testing.T) {
	g := newRig(t, "test://a", "test://b")
	g.deny("test://b", 1)
	g.disclose[1]["test://b"] = true
	res := mustRead(t, g)
	if !res.Partial() || !slices.Equal(itemURIs(res), []string{"test://a"}) {
		t.Fatalf("partial=%v items=%v", res.Partial(), itemURIs(res))
	}
	is := res.Issues()
	if len(is) != 1 || is[0].Code() != IssueUnavailable || is[0].ResourceURI() != "test://b" {
		t.Fatalf("issues = %+v", is)
	}
	if strings.Contains(string(encodeResult(t, res)), textOf("test://b")) {
		t.Fatal("revoked body on the wire")
	}
}

func TestNewlyVisibleItemIsUnavailableWithoutLateIO(t *testing.T) {
	g := newRig(t, "test://a", "test://b")
	g.hide("test://b", 0)
	res := mustRead(t, g)
	if got := issueCodes(res); len(got) != 1 || got[0] != IssueUnavailable {
		t.Fatalf("issues = %v", got)
	}
	for _, e := range g.eventLog() {
		if e == "read test://b" {
			t.Fatal("late I/O for a newly visible item")
		}
	}
}

func TestNewlyVisibleSoleItemIsNotCalledEmpty(t *testing.T) {
	g := newRig(t, "test://b")
	g.hide("test://b", 0)
	res, err := g.read()
	wantKind(t, err, FailureUnavailable) // not empty: unavailable, as a missing resource
	if res != nil {
		t.Fatal("returned an empty selection")
	}
}

func TestNoSurvivingApplicationItemFailsTheWholeRead(t *testing.T) {
	g := newRig(t, "test://a", "test://b")
	for _, u := range []string{"test://a", "test://b"} {
		g.item(u).read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
			return ResourcePayload{}, errors.New("broken")
		}
	}
	res, err := g.read()
	wantKind(t, err, FailureNoItems)
	if res != nil {
		t.Fatal("bundle returned")
	}
	t.Run("all admitted items revoked at the end", func(t *testing.T) {
		g := newRig(t, "test://a")
		g.deny("test://a", 1)
		_, err := g.read()
		wantKind(t, err, FailureUnavailable)
	})
}

func TestLegitimatelyEmptyAuthorizedSelectionSucceeds(t *testing.T) {
	t.Run("zero items", func(t *testing.T) {
		res := mustRead(t, newRig(t))
		if res.Partial() || len(res.Items()) != 0 {
			t.Fatalf("partial=%v items=%d", res.Partial(), len(res.Items()))
		}
	})
	t.Run("every item hidden", func(t *testing.T) {
		g := newRig(t, "test://a", "test://b")
		g.hide("test://a", 0, 1)
		g.hide("test://b", 0, 1)
		res := mustRead(t, g)
		if res.Partial() || len(res.Items()) != 0 {
			t.Fatalf("partial=%v items=%d", res.Partial(), len(res.Items()))
		}
	})
	t.Run("every item hidden by the final check", func(t *testing.T) {
		g := newRig(t, "test://a")
		g.hide("test://a", 1)
		res := mustRead(t, g)
		if res.Partial() || len(res.Items()) != 0 {
			t.Fatalf("partial=%v items=%d", res.Partial(), len(res.Items()))
		}
	})
}

func TestWholeReadFailuresReturnNoBundle(t *testing.T) {
	cases := map[string]struct {
		set  func(g *rig) context.Context
		kind FailureKind
	}{
		"root denial": {func(g *rig) context.Context { g.noFind[0] = true; return context.Background() }, FailureUnavailable},
		"invalid planning": {func(g *rig) context.Context {
			g.resolve = func(context.Context, ResourceMatch) (ResourceReadPlan, error) {
				return ResourceReadPlan{}, errors.New("index offline")
			}
			return context.Background()
		}, FailureInvalidPlan},
		"operational policy failure": {func(g *rig) context.Context {
			g.discoverErr = func(int) error { return errors.New("x") }
			return context.Background()
		}, FailurePolicy},
		"explicit cancellation": {func(g *rig) context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			g.item("test://b").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
				cancel()
				return TextPayload("text/plain", "b"), nil
			}
			return ctx
		}, FailureCanceled},
		"whole-read timeout": {func(g *rig) context.Context {
			g.opts = []Option{WithResourceLimits(ResourceLimits{ReadTimeout: 30 * time.Millisecond})}
			g.item("test://b").read = func(ctx context.Context, _ ResourceTarget) (ResourcePayload, error) {
				<-ctx.Done()
				return ResourcePayload{}, ctx.Err()
			}
			return context.Background()
		}, FailureTimeout},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := newRig(t, "test://a", "test://b")
			ctx := c.set(g)
			res, err := g.readCtx(ctx)
			wantKind(t, err, c.kind)
			if res != nil {
				t.Fatal("bundle returned")
			}
		})
	}
}

func TestItemFailuresProducePartialResultsWhenSiblingsSurvive(t *testing.T) {
	t.Parallel() // waits out an item deadline
	g := newRig(t, "test://ok", "test://err", "test://bad", "test://slow")
	g.opts = []Option{WithResourceLimits(ResourceLimits{ItemTimeout: 200 * time.Millisecond})}
	g.item("test://err").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return ResourcePayload{}, errors.New("connection reset")
	}
	g.item("test://bad").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return TextPayload("text/plain", "\xc0\xae"), nil
	}
	g.item("test://slow").read = func(ctx context.Context, _ ResourceTarget) (ResourcePayload, error) {
		<-ctx.Done()
		return ResourcePayload{}, ctx.Err()
	}
	res := mustRead(t, g)
	if !res.Partial() || !slices.Equal(itemURIs(res), []string{"test://ok"}) {
		t.Fatalf("partial=%v items=%v", res.Partial(), itemURIs(res))
	}
	got := issueCodes(res)
	want := []IssueCode{IssueReadFailed, IssueInvalidContent, IssueTimeout}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("issues = %v, want %v", got, want)
	}
}

func TestItemsFailingInEveryWayAtOnce(t *testing.T) {
	t.Parallel() // waits out an item deadline
	uris := []string{"test://ok", "test://hidden", "test://denied", "test://err", "test://unavail", "test://bad",
		"test://slow", "test://huge", "test://panic", "test://revoked", "test://gone", "test://new", "test://ok2"}
	g := newRig(t, uris...)
	g.opts = []Option{WithResourceLimits(ResourceLimits{ItemTimeout: 200 * time.Millisecond, MaxItemBytes: 64})}
	g.hide("test://hidden", 0, 1)
	g.deny("test://denied", 0, 1)
	g.deny("test://revoked", 1)
	g.hide("test://gone", 1)
	g.hide("test://new", 0)
	for _, u := range uris {
		g.disclose[1][u] = true
	}
	g.item("test://err").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return ResourcePayload{}, errors.New("CANARY-cause")
	}
	g.item("test://unavail").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return ResourcePayload{}, NewFailure(FailureUnavailable, errors.New("CANARY-cause"))
	}
	g.item("test://bad").read = func(context.Context, ResourceTarget) (ResourcePayload, error) { return ResourcePayload{}, nil }
	g.item("test://slow").read = func(ctx context.Context, _ ResourceTarget) (ResourcePayload, error) {
		<-ctx.Done()
		return ResourcePayload{}, ctx.Err()
	}
	g.item("test://huge").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return TextPayload("text/plain", strings.Repeat("x", 65)), nil
	}
	g.item("test://panic").read = func(context.Context, ResourceTarget) (ResourcePayload, error) { panic("CANARY-panic") }
	res := mustRead(t, g)
	if got := itemURIs(res); !slices.Equal(got, []string{"test://ok", "test://ok2"}) {
		t.Fatalf("items = %v", got)
	}
	var got []string
	for _, is := range res.Issues() {
		got = append(got, string(is.Code())+" "+is.ResourceURI())
	}
	want := []string{"unavailable test://denied", "read_failed test://err", "unavailable test://unavail",
		"invalid_content test://bad", "timeout test://slow", "budget_exceeded test://huge", "read_failed test://panic",
		"unavailable test://revoked", "unavailable test://new"}
	if !slices.Equal(got, want) {
		t.Fatalf("issues:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if out := string(encodeResult(t, res)); strings.Contains(out, "CANARY") || strings.Contains(out, "test://hidden") || strings.Contains(out, "test://gone") {
		t.Fatalf("leak: %s", out)
	}
}

func TestAbandonedReaderIsNotKilledAndItsLateResultIsDiscarded(t *testing.T) {
	g := newRig(t, "test://a")
	g.opts = []Option{WithResourceLimits(ResourceLimits{ReadTimeout: 20 * time.Millisecond})}
	release := make(chan struct{})
	finished := make(chan struct{})
	g.item("test://a").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
		<-release // ignores its context, like a job the read must not cancel
		close(finished)
		return TextPayload("text/plain", "late"), nil
	}
	start := time.Now()
	res, err := g.read()
	wantKind(t, err, FailureTimeout)
	if res != nil || time.Since(start) > 5*time.Second {
		t.Fatal("read waited for a context-ignoring reader")
	}
	close(release)
	select {
	case <-finished:
	case <-time.After(5 * time.Second):
		t.Fatal("abandoned reader did not run to completion")
	}
}

func TestPayloadReturnedAfterItemDeadlineIsTimeoutNotAdmitted(t *testing.T) {
	t.Parallel() // waits out an item deadline
	g := newRig(t, "test://a", "test://late")
	g.opts = []Option{WithResourceLimits(ResourceLimits{ItemTimeout: 100 * time.Millisecond})}
	g.item("test://late").read = func(ctx context.Context, _ ResourceTarget) (ResourcePayload, error) {
		<-ctx.Done() // past the item deadline, returns a fine payload anyway
		return TextPayload("text/plain", "late"), nil
	}
	res := mustRead(t, g)
	if got := issueCodes(res); len(got) != 1 || got[0] != IssueTimeout {
		t.Fatalf("issues = %v", got)
	}
	if slices.Equal(itemURIs(res), []string{"test://a", "test://late"}) {
		t.Fatal("late payload admitted")
	}
}

func TestNextBodyReadStartsOnlyAfterPreviousReturned(t *testing.T) {
	t.Parallel() // waits out an item deadline
	g := newRig(t, "test://slow", "test://next")
	g.opts = []Option{WithResourceLimits(ResourceLimits{ItemTimeout: 100 * time.Millisecond})}
	var slowDone atomic.Bool
	g.item("test://slow").read = func(ctx context.Context, _ ResourceTarget) (ResourcePayload, error) {
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // still running after its deadline
		slowDone.Store(true)
		return ResourcePayload{}, errors.New("too late anyway")
	}
	g.item("test://next").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
		if !slowDone.Load() {
			t.Error("next read started before the previous callback returned")
		}
		return TextPayload("text/plain", "n"), nil
	}
	mustRead(t, g)
}

func TestPanickingPolicyFailsTheWholeRead(t *testing.T) {
	g := newRig(t, "test://a")
	g.visibilityErr = func(int, string) error { panic("CANARY-policy-panic") }
	res, err := g.read()
	f := wantKind(t, err, FailurePolicy)
	if res != nil || strings.Contains(f.Error(), "CANARY") {
		t.Fatalf("res=%v err=%q", res, f.Error())
	}
}

func TestPanickingResolverIsInvalidPlan(t *testing.T) {
	g := newRig(t, "test://a")
	g.resolve = func(context.Context, ResourceMatch) (ResourceReadPlan, error) { panic("boom") }
	_, err := g.read()
	wantKind(t, err, FailureInvalidPlan)
}

func TestReaderLearnsItsByteLimitFromTheRequest(t *testing.T) {
	g := newRig(t, "test://a", "test://b")
	g.opts = []Option{WithResourceLimits(ResourceLimits{MaxItemBytes: 1000, MaxResponseBytes: 8<<10 + 1500})}
	for _, u := range []string{"test://a", "test://b"} {
		g.item(u).read = func(ctx context.Context, _ ResourceTarget) (ResourcePayload, error) {
			return TextPayload("text/plain", strings.Repeat("x", 900)), nil
		}
	}
	mustRead(t, g)
	// 1500 payload bytes for application items: the first read may take the
	// item maximum, the second only what the first left.
	if fmt.Sprint(g.readLimits) != "[1000 600]" {
		t.Fatalf("limits = %v", g.readLimits)
	}
}

// --- Partial bundles ---

var warningURIPattern = regexp.MustCompile(`^mcp-warning://read/[0-9a-f]{32}$`)

func TestPartialResultIsNilErrorWithWarningFirst(t *testing.T) {
	g := newRig(t, "test://a", "test://b", "test://c")
	g.deny("test://b", 0, 1)
	res := mustRead(t, g)
	items := res.Items()
	if !res.Partial() || len(items) != 3 || !warningURIPattern.MatchString(items[0].URI()) {
		t.Fatalf("partial=%v items=%d first=%q", res.Partial(), len(items), items[0].URI())
	}
	if items[1].URI() != "test://a" || items[2].URI() != "test://c" {
		t.Fatal("admitted items out of order")
	}
	if items[0].MIMEType() != "text/plain" || items[0].IsBlob() {
		t.Fatal("warning is not text/plain")
	}
}

func TestCompleteResultHasNoWarningAndAlwaysCarriesReport(t *testing.T) {
	res := mustRead(t, newRig(t, "test://a"))
	for _, it := range res.Items() {
		if strings.HasPrefix(it.URI(), "mcp-warning:") {
			t.Fatal("complete result has a warning")
		}
	}
	want := `{"go.phpboyscout.uk/mcp.resourceRead":{"version":1,"partial":false,"issues":[],"issuesOmitted":0}}`
	if got := string(res.Meta()); got != want {
		t.Fatalf("meta = %s", got)
	}
}

func TestWarningTextIsIncompleteBundleThenIdenticalReport(t *testing.T) {
	g := newRig(t, "test://a", "test://b")
	g.deny("test://b", 0, 1)
	g.disclose[1]["test://b"] = true
	res := mustRead(t, g)
	w := res.Items()[0]
	report := `{"version":1,"partial":true,"issues":[{"code":"unavailable","message":"The resource is unavailable.","retryable":false,"uri":"test://b"}],"issuesOmitted":0}`
	if w.Text() != "Incomplete bundle.\n"+report {
		t.Fatalf("warning text = %q", w.Text())
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(res.Meta(), &meta); err != nil || string(meta[wire.ReportMetaKey]) != report {
		t.Fatalf("result meta = %s (%v)", res.Meta(), err)
	}
	if string(res.Report()) != report {
		t.Fatalf("Report() = %s", res.Report())
	}
}

func TestWarningURIIs128RandomBitsInLowercaseHex(t *testing.T) {
	g := newRig(t, "test://a", "test://b")
	g.deny("test://b", 0, 1)
	seen := map[string]bool{}
	for range 50 {
		u := mustRead(t, g).Items()[0].URI()
		if !warningURIPattern.MatchString(u) || len(u) != wire.WarningURIBytes || seen[u] {
			t.Fatalf("warning URI %q (len %d, seen %v)", u, len(u), seen[u])
		}
		seen[u] = true
	}
}

func TestWarningMetadataMarksDiagnosticAndInlineOnly(t *testing.T) {
	g := newRig(t, "test://a", "test://b")
	g.deny("test://b", 0, 1)
	w := mustRead(t, g).Items()[0]
	if got := string(w.Meta()); got != `{"go.phpboyscout.uk/mcp.resourceRead":{"diagnostic":true,"inlineOnly":true}}` {
		t.Fatalf("warning meta = %s", got)
	}
}

func TestWarningIsNotReadableListedOrSuppliable(t *testing.T) {
	g := newRig(t, "test://a", "test://b")
	g.deny("test://b", 0, 1)
	r := g.resources()
	g.discovers.Store(0)
	res, err := r.Read(context.Background(), bundleURI)
	if err != nil {
		t.Fatal(err)
	}
	warning := res.Items()[0].URI()
	if _, err := r.Read(context.Background(), warning); err == nil {
		t.Fatal("warning URI was readable")
	}
	// A binding cannot register or plan the reserved scheme.
	if _, err := NewResources([]ResourceBinding{{
		Definition: ResourceDefinition{URI: warning, Name: "w"},
		Resolver:   g.binding().Resolver, Reader: g.binding().Reader,
	}}, g.policy()); err == nil {
		t.Fatal("a warning URI was registered")
	}
	if _, err := NewResourceTarget(warning, "item", nil); err == nil {
		t.Fatal("a warning URI was planned")
	}
	// Applications cannot supply a warning-shaped item either: a payload has
	// no URI, so the gateway binds it to the planned target.
	g2 := newRig(t, "test://a")
	g2.item("test://a").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return TextPayload("text/plain", "Incomplete bundle.\n{}"), nil
	}
	if mustRead(t, g2).Partial() {
		t.Fatal("application text made the result partial")
	}
}

func TestFreshReadRecomputesUnderCurrentPolicy(t *testing.T) {
	g := newRig(t, "test://a", "test://b")
	g.deny("test://b", 0, 1)
	r := g.resources()
	g.discovers.Store(0)
	first, err := r.Read(context.Background(), bundleURI)
	if err != nil || !first.Partial() {
		t.Fatalf("first read: %v partial=%v", err, first != nil && first.Partial())
	}
	delete(g.denied[0], "test://b")
	delete(g.denied[1], "test://b")
	g.discovers.Store(0)
	second, err := r.Read(context.Background(), bundleURI)
	if err != nil || second.Partial() || len(second.Items()) != 2 {
		t.Fatalf("second read: %v partial=%v", err, second.Partial())
	}
}

func TestIssueCodesMessagesAndRetryability(t *testing.T) {
	want := map[IssueCode]bool{IssueUnavailable: false, IssueReadFailed: true, IssueTimeout: false, IssueInvalidContent: false, IssueBudgetExceeded: false}
	msgs := map[string]bool{}
	for code, retry := range want {
		is := ResourceIssue{code: code}
		if is.Retryable() != retry || is.Message() == "" || msgs[is.Message()] {
			t.Fatalf("%s: retryable=%v message=%q", code, is.Retryable(), is.Message())
		}
		msgs[is.Message()] = true
	}
	if fmt.Sprintln(IssueUnavailable, IssueReadFailed, IssueTimeout, IssueInvalidContent, IssueBudgetExceeded) !=
		"unavailable read_failed timeout invalid_content budget_exceeded\n" {
		t.Fatal("codes changed")
	}
}

func TestIssueMessagesAreFixedTemplates(t *testing.T) {
	g := newRig(t, "test://a", "test://b", "test://c")
	g.item("test://b").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return ResourcePayload{}, errors.New("CANARY-db-password=hunter2")
	}
	g.item("test://c").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return ResourcePayload{}, errors.New("other error text")
	}
	is := mustRead(t, g).Issues()
	if len(is) != 2 || is[0].Message() != is[1].Message() || strings.Contains(is[0].Message(), "CANARY") {
		t.Fatalf("messages: %q %q", is[0].Message(), is[1].Message())
	}
}

func TestIssueURIOnlyUnderFinalDiscloseAndAtMost256Bytes(t *testing.T) {
	long := "test://x/" + strings.Repeat("a", maxDisclosedURIBytes-9+1) // 257 bytes
	exact := "test://y/" + strings.Repeat("b", maxDisclosedURIBytes-9)  // 256 bytes
	g := newRig(t, "test://ok", "test://first-only", "test://final-only", long, exact)
	for _, u := range []string{"test://first-only", "test://final-only", long, exact} {
		g.deny(u, 0, 1)
	}
	g.disclose[0]["test://first-only"] = true
	g.disclose[1]["test://final-only"] = true
	g.disclose[1][long] = true
	g.disclose[1][exact] = true
	var got []string
	for _, is := range mustRead(t, g).Issues() {
		got = append(got, is.ResourceURI())
	}
	if !slices.Equal(got, []string{"", "test://final-only", "", exact}) {
		t.Fatalf("disclosed = %q", got)
	}
}

func TestIssuesOmittedCountsVisibleFailuresBeyondDetails(t *testing.T) {
	uris := []string{"test://ok"}
	for i := range 40 {
		uris = append(uris, fmt.Sprintf("test://bad/%d", i))
	}
	g := newRig(t, uris...)
	g.opts = []Option{WithResourceLimits(ResourceLimits{MaxIssues: 5})}
	for _, u := range uris[1:] {
		g.deny(u, 0, 1)
	}
	g.hide(uris[1], 0, 1) // hidden: not a visible failure
	res := mustRead(t, g)
	if len(res.Issues()) != 5 || res.IssuesOmitted() != 34 {
		t.Fatalf("issues=%d omitted=%d", len(res.Issues()), res.IssuesOmitted())
	}
	if !strings.Contains(string(res.Report()), `"issuesOmitted":34`) {
		t.Fatalf("report = %s", res.Report())
	}
}

func TestCanariesNeverReachOutput(t *testing.T) {
	const canary = "CANARY-5e1d"
	g := newRig(t, "test://ok", "test://err", "test://panic", "test://unavail", "test://denied")
	for i := range g.items {
		g.items[i].authz = json.RawMessage(`{"k":"` + canary + `"}`)
		g.disclose[1][g.items[i].uri] = true
	}
	g.deny("test://denied", 0, 1)
	g.item("test://err").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return ResourcePayload{}, errors.New(canary)
	}
	g.item("test://panic").read = func(context.Context, ResourceTarget) (ResourcePayload, error) { panic(canary) }
	g.item("test://unavail").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return ResourcePayload{}, NewFailure(FailureUnavailable, errors.New(canary))
	}
	res := mustRead(t, g)
	check := func(where, s string) {
		if strings.Contains(s, canary) {
			t.Fatalf("canary in %s: %s", where, s)
		}
	}
	check("encoded result", string(encodeResult(t, res)))
	for _, is := range res.Issues() {
		check("issue", is.Message()+is.ResourceURI()+string(is.Code()))
	}
	// Whole-read errors keep the cause private: Error() is fixed, Unwrap has it.
	for name, set := range map[string]func(g *rig){
		"discover": func(g *rig) { g.discoverErr = func(int) error { return errors.New(canary) } },
		"panic":    func(g *rig) { g.visibilityErr = func(int, string) error { panic(canary) } },
		"resolve": func(g *rig) {
			g.resolve = func(context.Context, ResourceMatch) (ResourceReadPlan, error) {
				return ResourceReadPlan{}, errors.New(canary)
			}
		},
		"denied": func(g *rig) { g.noFind[0] = true },
	} {
		g := newRig(t, "test://a")
		set(g)
		_, err := g.read()
		check(name+" error", err.Error())
		if name != "denied" && !strings.Contains(fmt.Sprint(errors.Unwrap(err)), canary) {
			t.Fatalf("%s: private cause not kept behind Unwrap: %v", name, errors.Unwrap(err))
		}
	}
}

func TestConcurrentReadsThroughOneResources(t *testing.T) {
	uris := []string{"test://a", "test://b", "test://c", "test://d"}
	var inflight, peak atomic.Int32
	reader := ItemReader(func(ctx context.Context, item ReadItem) (ResourcePayload, error) {
		tg := item.Target
		n := inflight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(100 * time.Microsecond)
		inflight.Add(-1)
		if tg.URI() == "test://c" {
			return ResourcePayload{}, errors.New("flaky")
		}
		return TextPayload("text/plain", textOf(tg.URI())), nil
	})
	resolver := ResolverFunc(func(ctx context.Context, m ResourceMatch) (ResourceReadPlan, error) {
		req, _ := NewResourceTarget(m.URI(), "bundle", nil)
		ts := make([]ResourceTarget, len(uris))
		for i, u := range uris {
			ts[i], _ = NewResourceTarget(u, "item", nil)
		}
		return NewResourceReadPlan(req, ts...)
	})
	type principal struct{}
	r, err := NewResources([]ResourceBinding{{Definition: ResourceDefinition{URI: bundleURI, Name: "b"}, Resolver: resolver, Reader: reader}},
		PerTarget(TargetPolicy{
			Discover: func(context.Context, ResourceDefinition) error { return nil },
			Visibility: func(ctx context.Context, tg ResourceTarget) (Visibility, error) {
				// Principal "odd" cannot see d.
				return Visibility{Visible: !(ctx.Value(principal{}) == "odd" && tg.URI() == "test://d")}, nil
			},
			Read: func(context.Context, ResourceTarget) error { return nil },
		}))
	if err != nil {
		t.Fatal(err)
	}
	const workers, reads = 32, 20
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			who := map[bool]string{true: "odd", false: "even"}[w%2 == 1]
			ctx := context.WithValue(context.Background(), principal{}, who)
			for range reads {
				res, err := r.Read(ctx, bundleURI)
				if err != nil {
					errs <- err
					return
				}
				want := []string{"test://a", "test://b", "test://d"}
				if who == "odd" {
					want = want[:2]
				}
				if !slices.Equal(itemURIs(res), want) || len(res.Issues()) != 1 || res.Issues()[0].Code() != IssueReadFailed {
					errs <- fmt.Errorf("%s: items %v issues %v", who, itemURIs(res), res.Issues())
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if peak.Load() < 2 {
		t.Logf("callbacks never overlapped (peak %d); the machine may be single-threaded", peak.Load())
	}
}

func TestResultAccessorsReturnCopies(t *testing.T) {
	g := newRig(t, "test://a", "test://b")
	g.deny("test://b", 0, 1)
	g.item("test://a").read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return BlobPayload("application/octet-stream", []byte("abc")), nil
	}
	res := mustRead(t, g)
	items := res.Items()
	items[0] = ResourceItem{}
	b := res.Items()[1].Blob()
	b[0] = 'X'
	m := res.Meta()
	m[0] = 'X'
	is := res.Issues()
	is[0] = ResourceIssue{}
	if res.Items()[0].URI() == "" || string(res.Items()[1].Blob()) != "abc" || res.Meta()[0] != '{' || res.Issues()[0].Code() == "" {
		t.Fatal("result mutated through an accessor")
	}
}

func TestPayloadMIMETypeValidation(t *testing.T) {
	for s, want := range map[string]bool{
		"text/plain": true, "application/vnd.api+json": true, "text/plain; charset=utf-8": true,
		"image/svg+xml": true, "": false, "text": false, "text/": false, "/plain": false,
		"text/pl ain": false, "text/plain;": true, "text/plain; charset": false, "tëxt/plain": false,
		"text/plain\n": false, "a/b/c": false,
	} {
		if got := mediatype.Valid(s); got != want {
			t.Errorf("mediatype.Valid(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestAuthorizationProperties drives random plans through random policy
// changes between the two checks and random reader outcomes, and compares
// every result with an independent statement of the contract's rules.
// TestAuthorizationProperties restates the contract item by item over random
// policies, once with per-target callbacks and once with Decide; with
// Decide it also checks that each read asks exactly two passes and no
// per-target callback.
func TestAuthorizationProperties(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(map[bool]string{false: "per-target", true: "decide"}[batch], func(t *testing.T) {
			testAuthorizationProperties(t, batch)
		})
	}
}

func testAuthorizationProperties(t *testing.T, batch bool) {
	rng := rand.New(rand.NewPCG(7, 8))
	const outcomes = 4 // ok, read error, Unavailable, invalid content
	for iter := range 500 {
		n := rng.IntN(8)
		uris := make([]string, n)
		for i := range uris {
			uris[i] = fmt.Sprintf("test://prop/%d", i)
		}
		g := newRig(t, uris...)
		g.batch = batch
		outcome := map[string]int{}
		for _, u := range uris {
			for p := range 2 {
				g.hidden[p][u] = rng.IntN(4) == 0
				g.denied[p][u] = rng.IntN(4) == 0
				g.disclose[p][u] = rng.IntN(2) == 0
			}
			o := rng.IntN(outcomes)
			outcome[u] = o
			g.item(u).read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
				switch o {
				case 1:
					return ResourcePayload{}, errors.New("CANARY")
				case 2:
					return ResourcePayload{}, NewFailure(FailureUnavailable, errors.New("CANARY"))
				case 3:
					return TextPayload("text/plain", "\xff"), nil
				}
				return TextPayload("text/plain", textOf(u)), nil
			}
		}
		// The contract, restated item by item.
		var wantItems, wantIssues, wantReads []string
		for _, u := range uris {
			h0, h1, d0, d1 := g.hidden[0][u], g.hidden[1][u], g.denied[0][u], g.denied[1][u]
			if !h0 && !d0 {
				wantReads = append(wantReads, u)
			}
			code := ""
			switch {
			case h1:
				continue // hidden now: no trace
			case h0, d1, d0:
				code = "unavailable" // newly visible, revoked, or denied from the start
			default:
				code = [...]string{"", "read_failed", "unavailable", "invalid_content"}[outcome[u]]
			}
			if code == "" {
				wantItems = append(wantItems, u)
				continue
			}
			uri := ""
			if g.disclose[1][u] {
				uri = u
			}
			wantIssues = append(wantIssues, code+" "+uri)
		}
		res, err := g.read()
		if got := policyCalls(g); got != map[bool]string{false: fmt.Sprintf("discover 2, per-target %d, decide 0", perTargetCalls(g, uris)), true: "discover 1, per-target 0, decide 2"}[batch] {
			t.Fatalf("iteration %d: policy calls %s", iter, got)
		}
		if !slices.Equal(readsOf(g), wantReads) {
			t.Fatalf("iteration %d: bodies read %v, want %v", iter, readsOf(g), wantReads)
		}
		if len(wantIssues) > 0 && len(wantItems) == 0 {
			// Every visible item unavailable looks like a missing resource;
			// any other failure is "no item survived" with its issues.
			onlyUnavailable := !slices.ContainsFunc(wantIssues, func(s string) bool { return !strings.HasPrefix(s, "unavailable ") })
			if onlyUnavailable {
				wantKind(t, err, FailureUnavailable)
				if f := err.(*Failure); f.Issues() != nil || f.Report() != nil || f.Retryable() {
					t.Fatalf("iteration %d: an unavailable read carries detail %s", iter, f.Report())
				}
				continue
			}
			wantKind(t, err, FailureNoItems)
			f := err.(*Failure)
			var gotIssues []string
			for _, is := range f.Issues() {
				gotIssues = append(gotIssues, string(is.Code())+" "+is.ResourceURI())
			}
			if !slices.Equal(gotIssues, wantIssues) || f.IssuesOmitted() != 0 {
				t.Fatalf("iteration %d: failure issues %q (+%d), want %q", iter, gotIssues, f.IssuesOmitted(), wantIssues)
			}
			if want := slices.ContainsFunc(wantIssues, func(s string) bool { return strings.HasPrefix(s, "read_failed ") }); f.Retryable() != want {
				t.Fatalf("iteration %d: retryable %v, want %v for %q", iter, f.Retryable(), want, wantIssues)
			}
			if strings.Contains(string(f.Report()), "CANARY") {
				t.Fatalf("iteration %d: report leaks a cause: %s", iter, f.Report())
			}
			continue
		}
		if err != nil {
			t.Fatalf("iteration %d: %v", iter, err)
		}
		var gotIssues []string
		for _, is := range res.Issues() {
			gotIssues = append(gotIssues, string(is.Code())+" "+is.ResourceURI())
		}
		if !slices.Equal(itemURIs(res), wantItems) || !slices.Equal(gotIssues, wantIssues) || res.Partial() != (len(wantIssues) > 0) {
			t.Fatalf("iteration %d:\nitems %v\nwant  %v\nissues %q\nwant   %q", iter, itemURIs(res), wantItems, gotIssues, wantIssues)
		}
		out := string(encodeResult(t, res))
		for _, u := range uris {
			if g.hidden[1][u] && strings.Contains(out, u+`"`) {
				t.Fatalf("iteration %d: hidden %s on the wire: %s", iter, u, out)
			}
		}
		if strings.Contains(out, "CANARY") {
			t.Fatalf("iteration %d: private cause on the wire", iter)
		}
	}
}
