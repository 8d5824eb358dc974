package core

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/internal/itemsize"
	"go.phpboyscout.uk/mcp/resources/internal/requestscope"

	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

// Tests of "Admission, deadlines and reporting space".

// sized makes the rig's items return text of the given lengths.
func sized(g *rig, lengths map[string]int) {
	for u, n := range lengths {
		g.item(u).read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
			return TextPayload("text/plain", strings.Repeat("x", n)), nil
		}
	}
}

// appBudget is the aggregate payload left for application items.
func appBudget(extra int64) ResourceLimits {
	return ResourceLimits{ReportPayloadBytes: 4096, MaxResponseBytes: 4096 + extra}
}

func readsOf(g *rig) []string {
	var out []string
	for _, e := range g.eventLog() {
		if u, ok := strings.CutPrefix(e, "read "); ok {
			out = append(out, u)
		}
	}
	return out
}

func TestIndividuallyOversizedItemIsAnIssueAndLaterItemsMayFit(t *testing.T) {
	g := newRig(t, "test://a", "test://big", "test://c")
	g.opts = []Option{WithResourceLimits(ResourceLimits{MaxItemBytes: 100})}
	sized(g, map[string]int{"test://a": 100, "test://big": 101, "test://c": 50})
	res := mustRead(t, g)
	if !slices.Equal(itemURIs(res), []string{"test://a", "test://c"}) || fmt.Sprint(issueCodes(res)) != "[budget_exceeded]" {
		t.Fatalf("items=%v issues=%v", itemURIs(res), issueCodes(res))
	}
}

func TestItemLargerThanWholeAggregateIsOversizedNotAStop(t *testing.T) {
	g := newRig(t, "test://big", "test://c")
	g.opts = []Option{WithResourceLimits(appBudget(1000))}
	sized(g, map[string]int{"test://big": 1001, "test://c": 10})
	res := mustRead(t, g)
	if !slices.Equal(itemURIs(res), []string{"test://c"}) {
		t.Fatalf("items=%v issues=%v", itemURIs(res), issueCodes(res))
	}
}

func TestAggregateExhaustionStopsAdmissionAndKeepsCompletePrefix(t *testing.T) {
	g := newRig(t, "test://1", "test://2", "test://3", "test://4", "test://5")
	g.opts = []Option{WithResourceLimits(appBudget(1000))}
	sized(g, map[string]int{"test://1": 400, "test://2": 400, "test://3": 300, "test://4": 10, "test://5": 10})
	res := mustRead(t, g)
	if !slices.Equal(itemURIs(res), []string{"test://1", "test://2"}) {
		t.Fatalf("items = %v", itemURIs(res))
	}
	if fmt.Sprint(issueCodes(res)) != "[budget_exceeded budget_exceeded budget_exceeded]" {
		t.Fatalf("issues = %v", issueCodes(res))
	}
	if !slices.Equal(readsOf(g), []string{"test://1", "test://2", "test://3"}) {
		t.Fatalf("bodies read after admission stopped: %v", readsOf(g))
	}
}

func TestExactlyExhaustedAggregateStillAdmits(t *testing.T) {
	g := newRig(t, "test://1", "test://2")
	g.opts = []Option{WithResourceLimits(appBudget(1000))}
	sized(g, map[string]int{"test://1": 600, "test://2": 400})
	res := mustRead(t, g)
	if res.Partial() || len(res.Items()) != 2 {
		t.Fatalf("exact fit refused: %v", issueCodes(res))
	}
}

func TestEncodedBudgetStopsAdmissionForEscapingText(t *testing.T) {
	// Control characters take six encoded bytes each: the payload fits but
	// the encoded aggregate does not.
	l := ResourceLimits{ReportEncodedBytes: 1024, MaxResponseEncodedBytes: 1024 + 8192 + 256 + 2000}
	g := newRig(t, "test://1", "test://2", "test://3")
	g.opts = []Option{WithResourceLimits(l)}
	for _, u := range []string{"test://1", "test://2", "test://3"} {
		g.item(u).read = func(context.Context, ResourceTarget) (ResourcePayload, error) {
			return TextPayload("text/plain", strings.Repeat("\x01", 200)), nil // 1200 encoded bytes
		}
	}
	res := mustRead(t, g)
	if !slices.Equal(itemURIs(res), []string{"test://1"}) || !slices.Equal(readsOf(g), []string{"test://1", "test://2"}) {
		t.Fatalf("items=%v reads=%v", itemURIs(res), readsOf(g))
	}
}

func TestItemCountLimitStopsBeforeAnotherBodyRead(t *testing.T) {
	g := newRig(t, "test://1", "test://2", "test://3", "test://4")
	g.opts = []Option{WithResourceLimits(ResourceLimits{MaxItems: 2})}
	res := mustRead(t, g)
	if !slices.Equal(readsOf(g), []string{"test://1", "test://2"}) {
		t.Fatalf("reads = %v", readsOf(g))
	}
	if fmt.Sprint(issueCodes(res)) != "[budget_exceeded budget_exceeded]" {
		t.Fatalf("issues = %v", issueCodes(res))
	}
}

func TestVisibleUnattemptedItemsGetBudgetIssuesHiddenOnesNothing(t *testing.T) {
	g := newRig(t, "test://1", "test://2", "test://hidden", "test://denied", "test://4")
	g.opts = []Option{WithResourceLimits(ResourceLimits{MaxItems: 1})}
	g.hide("test://hidden", 0, 1)
	g.deny("test://denied", 0, 1)
	res := mustRead(t, g)
	if fmt.Sprint(issueCodes(res)) != "[budget_exceeded unavailable budget_exceeded]" || res.IssuesOmitted() != 0 {
		t.Fatalf("issues = %v omitted=%d", issueCodes(res), res.IssuesOmitted())
	}
}

func TestFinalRemovalDoesNotFreeSpaceForRefill(t *testing.T) {
	g := newRig(t, "test://a", "test://b", "test://c", "test://d")
	g.opts = []Option{WithResourceLimits(appBudget(1000))}
	sized(g, map[string]int{"test://a": 100, "test://b": 800, "test://c": 200, "test://d": 10})
	g.deny("test://b", 1)
	res := mustRead(t, g)
	if !slices.Equal(itemURIs(res), []string{"test://a"}) {
		t.Fatalf("items = %v", itemURIs(res))
	}
	if fmt.Sprint(issueCodes(res)) != "[unavailable budget_exceeded budget_exceeded]" {
		t.Fatalf("issues = %v", issueCodes(res))
	}
	if !slices.Equal(readsOf(g), []string{"test://a", "test://b", "test://c"}) {
		t.Fatalf("refill read: %v", readsOf(g))
	}
}

func TestReaderTooLargeIsOversizedOrStopsBySize(t *testing.T) {
	tooLarge := func(size int64) func(context.Context, ResourceTarget) (ResourcePayload, error) {
		return func(context.Context, ResourceTarget) (ResourcePayload, error) {
			return ResourcePayload{}, &TooLargeError{Size: size}
		}
	}
	t.Run("over the item maximum: later items still read", func(t *testing.T) {
		g := newRig(t, "test://a", "test://big", "test://c")
		g.opts = []Option{WithResourceLimits(ResourceLimits{MaxItemBytes: 100})}
		g.item("test://big").read = tooLarge(5000)
		res := mustRead(t, g)
		if !slices.Equal(itemURIs(res), []string{"test://a", "test://c"}) {
			t.Fatalf("items = %v", itemURIs(res))
		}
	})
	t.Run("within the item maximum but over what is left: admission stops", func(t *testing.T) {
		g := newRig(t, "test://a", "test://b", "test://c")
		g.opts = []Option{WithResourceLimits(appBudget(1000))}
		sized(g, map[string]int{"test://a": 900})
		g.item("test://b").read = tooLarge(500)
		res := mustRead(t, g)
		if !slices.Equal(itemURIs(res), []string{"test://a"}) || !slices.Equal(readsOf(g), []string{"test://a", "test://b"}) {
			t.Fatalf("items=%v reads=%v", itemURIs(res), readsOf(g))
		}
	})
	t.Run("unknown size under a limit cut by the aggregate stops", func(t *testing.T) {
		g := newRig(t, "test://a", "test://b", "test://c")
		g.opts = []Option{WithResourceLimits(appBudget(1000))}
		sized(g, map[string]int{"test://a": 900})
		g.item("test://b").read = tooLarge(-1)
		res := mustRead(t, g)
		if !slices.Equal(readsOf(g), []string{"test://a", "test://b"}) || len(res.Issues()) != 2 {
			t.Fatalf("reads=%v issues=%v", readsOf(g), issueCodes(res))
		}
	})
}

func TestAdmittedItemsAreNeverSplitReorderedOrDroppedForReporting(t *testing.T) {
	// Many issues with long disclosed URIs overflow the detailed report;
	// the report shrinks, the admitted items stay whole.
	uris := []string{"test://keep/1", "test://keep/2"}
	for i := range 60 {
		uris = append(uris, fmt.Sprintf("test://gone/%03d/%s", i, strings.Repeat("u", 200)))
	}
	g := newRig(t, uris...)
	g.opts = []Option{WithResourceLimits(ResourceLimits{ReportPayloadBytes: 1024, ReportEncodedBytes: 1500, MaxIssues: 60})}
	sized(g, map[string]int{"test://keep/1": 3000, "test://keep/2": 10})
	for _, u := range uris[2:] {
		g.deny(u, 0, 1)
		g.disclose[1][u] = true
	}
	res := mustRead(t, g)
	items := res.Items()
	if len(items) != 3 || items[1].URI() != "test://keep/1" || len(items[1].Text()) != 3000 || items[2].URI() != "test://keep/2" {
		t.Fatal("admitted items changed to fit the report")
	}
	if !res.Partial() || len(res.Issues())+res.IssuesOmitted() != 60 || len(res.Issues()) >= 60 || res.IssuesOmitted() == 0 {
		t.Fatalf("issues=%d omitted=%d", len(res.Issues()), res.IssuesOmitted())
	}
	w := items[0]
	if int64(len(w.Text())) > 1024 {
		t.Fatalf("warning payload %d exceeds its reserve", len(w.Text()))
	}
	if enc := itemEncodedSize(w.URI(), w.payload, w.meta) + 1 + metaSize(res.report); enc > 1500 {
		t.Fatalf("report encoded %d exceeds its reserve", enc)
	}
}

func TestMinimalReportThatCannotFitIsABoundedSizeError(t *testing.T) {
	g := newRig(t, "test://a", "test://b")
	g.deny("test://b", 0, 1)
	r := g.resources()
	// An adapter sizer that breaks the invariant: it claims every diagnostic
	// item is larger than any reserve.
	sizer := func(it itemsize.Item) int64 {
		if it.Meta != nil {
			return 1 << 40
		}
		return int64(len(it.URI) + len(it.Text) + 64)
	}
	g.discovers.Store(0)
	res, err := sizedRead(r, sizer, bundleURI)
	f := wantKind(t, err, FailureSize)
	if res != nil || len(f.Error()) > 100 {
		t.Fatalf("res=%v err=%q", res, f.Error())
	}
}

func TestAdapterSizerBoundsEachItemsContribution(t *testing.T) {
	g := newRig(t, "test://1", "test://2", "test://3")
	l := ResourceLimits{ReportEncodedBytes: 1024, MaxResponseEncodedBytes: 1024 + 8192 + 256 + 1000}
	g.opts = []Option{WithResourceLimits(l)}
	r := g.resources()
	sizer := func(it itemsize.Item) int64 { return 400 } // a generous estimate
	g.discovers.Store(0)
	res, err := sizedRead(r, sizer, bundleURI)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(itemURIs(res), []string{"test://1", "test://2"}) {
		t.Fatalf("items = %v", itemURIs(res))
	}
}

func TestCompleteReadsKeepTheDiagnosticReserveUnused(t *testing.T) {
	// 1000 application bytes; an item that would fit only by spending the
	// diagnostic reserve is not admitted.
	g := newRig(t, "test://a", "test://b")
	g.opts = []Option{WithResourceLimits(appBudget(1000))}
	sized(g, map[string]int{"test://a": 900, "test://b": 200})
	res := mustRead(t, g)
	if !slices.Equal(itemURIs(res), []string{"test://a"}) {
		t.Fatalf("items = %v", itemURIs(res))
	}
}

func TestAdapterScopeLastsBeyondRead(t *testing.T) {
	g := newRig(t, "test://a")
	r := g.resources()
	ctx, end := requestscope.Begin(context.Background(), 5*time.Second)
	want, _ := ctx.Deadline()
	var got time.Time
	g.item("test://a").read = func(c context.Context, _ ResourceTarget) (ResourcePayload, error) {
		got, _ = c.Deadline()
		return TextPayload("text/plain", "a"), nil
	}
	g.discovers.Store(0)
	if _, err := r.Read(ctx, bundleURI); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("Read closed the adapter's scope")
	}
	if got.After(want) {
		t.Fatalf("item deadline %v after the scope's %v", got, want)
	}
	end()
	if ctx.Err() == nil {
		t.Fatal("end did not close the scope")
	}
}

// --- Exact sizing ---

var tricky = []string{"", "plain", `"quoted" \back\slash/`, "<html>&amp;", "\x00\x01\x07\b\f\n\r\t\x1f\x7f",
	"\u2028\u2029", "é日本語🙂", "\xff\xfe invalid", "\xc0\xae overlong", "\xed\xa0\x80 surrogate", "a\x00b"}

func TestJSONStringMatchesEncodingJSON(t *testing.T) {
	check := func(s string) {
		want := jsonOf(t, s)
		if got := string(appendJSONString(nil, s)); got != want {
			t.Fatalf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
		if got := jsonStringLen(s); got != len(want) {
			t.Fatalf("jsonStringLen(%q) = %d, want %d", s, got, len(want))
		}
	}
	for _, s := range tricky {
		check(s)
	}
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	check(string(all))
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		check(string(b))
	}
}

func FuzzJSONStringLen(f *testing.F) {
	for _, s := range tricky {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := jsonOf(t, s)
		if got := string(appendJSONString(nil, s)); got != want {
			t.Fatalf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
		if jsonStringLen(s) != len(want) {
			t.Fatalf("jsonStringLen(%q) = %d, want %d", s, jsonStringLen(s), len(want))
		}
	})
}

func TestItemSizeMatchesEncodingJSONByteForByte(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		uri := fmt.Sprintf("test://x/%d?q=%%22a%%22", rng.IntN(1e6))
		var p ResourcePayload
		c := content{URI: uri, MIMEType: "text/plain; charset=\"utf-8\""}
		if i%2 == 0 {
			s := tricky[rng.IntN(len(tricky))] + strings.Repeat(tricky[rng.IntN(len(tricky))], rng.IntN(5))
			p = TextPayload(c.MIMEType, s)
			c.Text = &s
		} else {
			b := make([]byte, rng.IntN(300))
			for j := range b {
				b[j] = byte(rng.IntN(256))
			}
			p = BlobPayload(c.MIMEType, b)
			c.Blob = &b
		}
		var meta []byte
		if i%3 == 0 {
			meta = []byte(wire.WarningMeta)
			c.Meta = meta
		}
		want := len(jsonOf(t, c))
		if got := itemEncodedSize(uri, p, meta); got != int64(want) {
			t.Fatalf("item %d: sizer %d, encoding/json %d: %s", i, got, want, jsonOf(t, c))
		}
	}
}

// TestAdmissionProperties reads random plans under random valid limits and
// checks the promises of admission against an independent model that sizes
// with encoding/json.
func TestAdmissionProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	iterations := 400
	if testing.Short() {
		iterations = 50
	}
	for iter := range iterations {
		l := ResourceLimits{
			MaxItems:                1 + rng.IntN(12),
			MaxItemBytes:            int64(1 + rng.IntN(3000)),
			ReportPayloadBytes:      int64(256 + rng.IntN(2000)),
			ReportEncodedBytes:      int64(1024 + rng.IntN(3000)),
			MaxIssues:               1 + rng.IntN(10),
			MaxResponseBytes:        0,
			MaxResponseEncodedBytes: 0,
		}
		l.MaxResponseBytes = l.ReportPayloadBytes + 1 + int64(rng.IntN(8000))
		l.MaxResponseEncodedBytes = l.ReportEncodedBytes + wire.ReserveBytes + wire.ConfigOverheadBytes + int64(rng.IntN(12000))
		n := rng.IntN(16)
		uris := make([]string, n)
		payloads := map[string]ResourcePayload{}
		for i := range uris {
			uris[i] = fmt.Sprintf("test://p/%d/%s", i, strings.Repeat("u", rng.IntN(300)))
			switch rng.IntN(4) {
			case 0:
				payloads[uris[i]] = BlobPayload("application/octet-stream", make([]byte, rng.IntN(2500)))
			case 1:
				payloads[uris[i]] = TextPayload("text/plain", strings.Repeat("\"\n\x01<", rng.IntN(600)))
			case 2:
				payloads[uris[i]] = TextPayload("text/plain", "")
			default:
				payloads[uris[i]] = TextPayload("text/plain", strings.Repeat("é", rng.IntN(1500)))
			}
		}
		g := newRig(t, uris...)
		g.opts = []Option{WithResourceLimits(l)}
		for _, u := range uris {
			p := payloads[u]
			g.item(u).read = func(context.Context, ResourceTarget) (ResourcePayload, error) { return p, nil }
			if rng.IntN(5) == 0 {
				g.deny(u, 0, 1)
			}
			g.disclose[1][u] = rng.IntN(2) == 0
		}
		lim, _ := l.resolve()
		want, visibleFailures := modelAdmission(t, lim, uris, payloads, g.denied[0])
		res, err := g.read()
		if visibleFailures > 0 && len(want) == 0 {
			denied := 0
			for _, u := range uris {
				if g.denied[0][u] {
					denied++
				}
			}
			if denied == visibleFailures {
				wantKind(t, err, FailureUnavailable) // every visible item denied
			} else {
				wantKind(t, err, FailureNoItems)
			}
			continue
		}
		if err != nil {
			t.Fatalf("iteration %d: %v (limits %+v)", iter, err, l)
		}
		if got := itemURIs(res); !slices.Equal(got, want) {
			t.Fatalf("iteration %d: admitted %v, model %v (limits %+v)", iter, got, want, l)
		}
		if len(res.Issues())+res.IssuesOmitted() != visibleFailures || res.Partial() != (visibleFailures > 0) {
			t.Fatalf("iteration %d: issues %d + omitted %d, want %d", iter, len(res.Issues()), res.IssuesOmitted(), visibleFailures)
		}
		out := encodeResult(t, res)
		if int64(len(out)) > lim.MaxResponseEncodedBytes-wire.ReserveBytes {
			t.Fatalf("iteration %d: encoded result %d > %d", iter, len(out), lim.MaxResponseEncodedBytes-wire.ReserveBytes)
		}
		var payload int64
		for _, it := range res.Items() {
			payload += int64(len(it.Text()) + len(it.Blob()))
		}
		if payload > lim.MaxResponseBytes {
			t.Fatalf("iteration %d: payload %d > %d", iter, payload, lim.MaxResponseBytes)
		}
		if res.Partial() {
			w := res.Items()[0]
			if int64(len(w.Text())) > lim.ReportPayloadBytes {
				t.Fatalf("iteration %d: warning %d > reserve %d", iter, len(w.Text()), lim.ReportPayloadBytes)
			}
			if w.Text() != wire.WarningPrefix+string(res.Report()) {
				t.Fatalf("iteration %d: warning text is not the report", iter)
			}
		}
	}
}

// modelAdmission is the contract's admission rule, written independently:
// the longest admissible prefix, oversized items skipped, the first item that
// overflows the remaining aggregate stopping admission.
func modelAdmission(t testing.TB, l ResourceLimits, uris []string, payloads map[string]ResourcePayload, denied map[string]bool) ([]string, int) {
	payCap := l.MaxResponseBytes - l.ReportPayloadBytes
	encCap := l.MaxResponseEncodedBytes - wire.ReserveBytes - wire.ConfigOverheadBytes - l.ReportEncodedBytes
	payLeft, encLeft := payCap, encCap
	var admitted []string
	failures := 0
	stopped := false
	for _, u := range uris {
		p := payloads[u]
		if denied[u] {
			failures++
			continue
		}
		if stopped || len(admitted) == l.MaxItems {
			stopped = true
			failures++
			continue
		}
		c := map[string]any{"uri": u, "mimeType": p.MIMEType()}
		if p.IsBlob() {
			c["blob"] = p.Blob()
		} else {
			c["text"] = p.Text()
		}
		n, enc := p.Len(), int64(len(jsonOf(t, c)))+1
		switch {
		case n > l.MaxItemBytes || n > payCap || enc > encCap:
			failures++
		case n > payLeft || enc > encLeft:
			failures++
			stopped = true
		default:
			admitted = append(admitted, u)
			payLeft -= n
			encLeft -= enc
		}
	}
	return admitted, failures
}

// sizedRead reads uri through r with an adapter's sizer, as the module's
// adapter does (through itemsize.Read).
func sizedRead(r *Resources, f itemsize.Func, uri string) (*ResourceResult, error) {
	return itemsize.Read[*Resources, *ResourceResult](context.Background(), r, uri, f)
}

// truncating makes the rig's resolver plan its items and mark the plan
// truncated, as a store that cut its plan at a limit does.
func truncating(g *rig) {
	g.resolve = func(ctx context.Context, m ResourceMatch) (ResourceReadPlan, error) {
		req, _ := NewResourceTarget(m.URI(), "bundle", nil)
		ts := make([]ResourceTarget, len(g.items))
		for i, it := range g.items {
			ts[i], _ = NewResourceTarget(it.uri, "item", nil)
		}
		p, err := NewResourceReadPlan(req, ts...)
		return p.Truncated(), err
	}
}

// TestTruncatedPlanIsPartialWithABudgetIssue: a plan its resolver cut at a
// limit (ResourceReadPlan.Truncated) is never reported complete: every
// planned item is admitted, and the result is partial with one
// budget_exceeded issue, naming no URI, after the items' own issues;
// past MaxIssues it is counted in IssuesOmitted. An untruncated plan of the
// same items is complete, and the zero plan cannot be marked.
func TestTruncatedPlanIsPartialWithABudgetIssue(t *testing.T) {
	g := newRig(t, "test://1", "test://2", "test://3")
	if res := mustRead(t, g); res.Partial() {
		t.Fatalf("an untruncated plan: partial, issues %v", issueCodes(res))
	}
	truncating(g)
	res := mustRead(t, g)
	if !res.Partial() || !slices.Equal(itemURIs(res), []string{"test://1", "test://2", "test://3"}) || fmt.Sprint(issueCodes(res)) != "[budget_exceeded]" || res.IssuesOmitted() != 0 {
		t.Fatalf("truncated plan: partial %v, items %v, issues %v (+%d)", res.Partial(), itemURIs(res), issueCodes(res), res.IssuesOmitted())
	}
	if u := res.Issues()[0].ResourceURI(); u != "" {
		t.Errorf("the truncation issue names %q, want no URI", u)
	}
	if !strings.Contains(string(res.Report()), `"partial":true`) {
		t.Errorf("report %s, want partial", res.Report())
	}

	// After the items' own issues; counted once MaxIssues is spent.
	g.deny("test://2", 0, 1)
	g.disclose[1]["test://2"] = true
	res = mustRead(t, g)
	if fmt.Sprint(issueCodes(res)) != "[unavailable budget_exceeded]" || res.Issues()[0].ResourceURI() != "test://2" {
		t.Fatalf("issues %v, want the item's, then the truncation", issueCodes(res))
	}
	g.opts = []Option{WithResourceLimits(ResourceLimits{MaxIssues: 1})}
	res = mustRead(t, g)
	if fmt.Sprint(issueCodes(res)) != "[unavailable]" || res.IssuesOmitted() != 1 {
		t.Fatalf("MaxIssues 1: issues %v +%d, want the truncation counted in IssuesOmitted", issueCodes(res), res.IssuesOmitted())
	}

	if (ResourceReadPlan{}).Truncated().IsTruncated() {
		t.Error("the zero plan was marked truncated")
	}
}
