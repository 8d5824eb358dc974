package mcpsdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/itemsize"

	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

// randomBinding serves rand://r/{n}: a bundle whose items are drawn from a
// generator seeded by n, so every read of n is the same bundle. Items mix
// text full of escapes, blobs, both empty variants, invalid content and
// failing readers (partial results).
//
// Lengths are drawn by randomLen: every length up to the old uniform
// bound (2,000 text pieces, 3,000 blob bytes) still occurs, but most items
// are short, so that the corpus reads of the parity tests cost the race
// detector little JSON while each still meets every escape, every blob
// length modulo 3 and every item kind.
func randomBinding(t testing.TB) core.ResourceBinding {
	pieces := []string{"a", "é", "\"", "\\", "\n", "\t", "\x01", "\x1f", "<", "&", "\u2028", "\u2029", "😀", "\x7f", " ", "/", "Ω"}
	body := func(n, i int) (core.ResourcePayload, error) {
		rng := rand.New(rand.NewPCG(uint64(n), uint64(i)))
		switch rng.IntN(10) {
		case 0:
			return core.TextPayload("text/plain", ""), nil
		case 1:
			return core.BlobPayload("application/octet-stream", nil), nil
		case 2, 3:
			b := make([]byte, randomLen(rng, 3000))
			for j := range b {
				b[j] = byte(rng.UintN(256))
			}
			return core.BlobPayload("image/png", b), nil
		case 4:
			if rng.IntN(3) == 0 {
				return core.ResourcePayload{}, errors.New(canaryCause)
			}
			return core.TextPayload("text/plain", "bad \xff utf-8"), nil // invalid_content
		}
		var b strings.Builder
		for range randomLen(rng, 2000) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return core.TextPayload("text/markdown; charset=utf-8", b.String()), nil
	}
	return core.ResourceBinding{
		Definition: core.ResourceDefinition{URITemplate: "rand://r/{n}", Name: "random"},
		Resolver: core.ResolverFunc(func(_ context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
			s, _ := m.Var("n")
			n, _ := strconv.Atoi(s)
			k := rand.New(rand.NewPCG(uint64(n), 99)).IntN(7)
			ts := make([]core.ResourceTarget, k)
			for i := range k {
				ts[i] = target(t, fmt.Sprintf("rand://item/%d/%d?q=\"é\"/disclosed", n, i))
			}
			return core.NewResourceReadPlan(target(t, m.URI()), ts...)
		}),
		Reader: core.ItemReader(func(_ context.Context, item core.ReadItem) (core.ResourcePayload, error) {
			tg := item.Target
			var n, i int
			fmt.Sscanf(tg.URI(), "rand://item/%d/%d", &n, &i)
			return body(n, i)
		}),
	}
}

// randomLen draws a length below bound: one draw in eight from the whole
// range, the others below bound/10.
func randomLen(rng *rand.Rand, bound int) int {
	if rng.IntN(8) == 0 {
		return rng.IntN(bound)
	}
	return rng.IntN(bound / 10)
}

// corpusReads is how many random results a parity test reads per
// protocol: 1,000, or 400 under the race detector, whose JSON is some ten
// times slower (the unit run in CI is race-built). 400 still meet every
// shape the corpus has many times over (see corpusCoverage, which the
// tests check, and the read after which it was complete, which they log).
var corpusReads = map[bool]int{false: 1000, true: 400}[raceDetector]

// corpusCoverage records which shapes of result and item a parity test's
// reads met, so that the test fails if its corpus, or its number of reads,
// stops meeting any of them.
type corpusCoverage struct {
	failed, partial      int    // reads where no item survived; partial results
	emptyText, text      int    // text items
	emptyBlob            int    // "blob":""
	blobMod3             [3]int // other blobs by length modulo 3: each base64 padding
	counts               map[int]bool
	completeAfter, reads int
}

// add records one read: its result, or the error of a read where no item
// survived.
func (c *corpusCoverage) add(res *core.ResourceResult, err error) {
	c.reads++
	if err != nil {
		c.failed++
	} else {
		if c.counts == nil {
			c.counts = map[int]bool{}
		}
		c.counts[len(res.Items())] = true
		if res.Partial() {
			c.partial++
		}
		for _, it := range res.Items() {
			switch {
			case it.IsBlob() && len(it.Blob()) == 0:
				c.emptyBlob++
			case it.IsBlob():
				c.blobMod3[len(it.Blob())%3]++
			case it.Text() == "":
				c.emptyText++
			default:
				c.text++
			}
		}
	}
	if c.completeAfter == 0 && c.missing() == "" {
		c.completeAfter = c.reads
	}
}

// missing names the first shape not met yet, or is "".
func (c *corpusCoverage) missing() string {
	for _, m := range []struct {
		n    int
		what string
	}{
		{c.failed, "a read where no item survived"}, {c.partial, "a partial result"},
		{c.emptyText, "empty text"}, {c.text, "text"}, {c.emptyBlob, "an empty blob"},
		{c.blobMod3[0], "a blob of 3n bytes"}, {c.blobMod3[1], "a blob of 3n+1 bytes"}, {c.blobMod3[2], "a blob of 3n+2 bytes"},
		{len(c.counts), "a result"},
	} {
		if m.n == 0 {
			return m.what
		}
	}
	// Up to 6 targets, each item read or failed, and the warning first in
	// a partial result: results of 1 to 6 items.
	for n := 1; n <= 6; n++ {
		if !c.counts[n] {
			return fmt.Sprintf("a result of %d items", n)
		}
	}
	return ""
}

// check fails t when a shape was not met, and logs when all were.
func (c *corpusCoverage) check(t *testing.T) {
	t.Helper()
	if m := c.missing(); m != "" {
		t.Errorf("%d reads of the corpus never met %s", c.reads, m)
		return
	}
	t.Logf("%d reads: every shape met after %d (%d failed, %d partial; text %d, empty %d; blobs by length mod 3 %v, empty %d)",
		c.reads, c.completeAfter, c.failed, c.partial, c.text, c.emptyText, c.blobMod3, c.emptyBlob)
}

// admittedSize is what core counts for a result under the adapter's sizer:
// the envelope {"_meta":META,"contents":[...]} and every item with its
// separator.
func admittedSize(res *core.ResourceResult) int64 {
	n := int64(len(`{"_meta":,"contents":[]}`) + len(res.Meta()))
	for _, it := range res.Items() {
		n += itemSize(itemOf(it))
	}
	return n
}

func itemOf(it core.ResourceItem) itemsize.Item {
	return itemsize.Item{URI: it.URI(), MIMEType: it.MIMEType(), Text: it.Text(), Blob: it.Blob(), IsBlob: it.IsBlob(), Meta: it.Meta()}
}

// TestWireBytesStayWithinWhatCoreAdmitted reads [corpusReads] random
// results per protocol through the SDK client and compares the bytes the server wrote
// for each result with what core admitted: never more than that plus the
// wire reserve, and in fact only the fixed fields the SDK adds. Each
// content entry on the wire is exactly the sizer's estimate minus its
// separator.
func TestWireBytesStayWithinWhatCoreAdmitted(t *testing.T) {
	t.Parallel() // CPU-bound and independent: it overlaps the other corpus reads
	r, _ := newResources(t, core.ResourceLimits{}, randomBinding(t))
	for _, v := range protocols {
		t.Run(fmt.Sprintf("protocol %q", v), func(t *testing.T) {
			t.Parallel()
			c := connect(t, newServer(r, nil), pipes, v, "")
			ctx := context.Background()
			minM, maxM, minMsg, maxMsg := int64(1<<62), int64(-1), int64(1<<62), int64(-1)
			var seen corpusCoverage
			for n := range corpusReads {
				uri := fmt.Sprintf("rand://r/%d", n)
				// As the adapter reads: core sizes items with its own formula.
				want, werr := r.Read(ctx, uri)
				noCanary(t, c) // before the reset: every byte is checked once
				c.tap.reset()
				_, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				if (err == nil) != (werr == nil) {
					t.Fatalf("%s: adapter %v, core %v", uri, err, werr)
				}
				seen.add(want, werr)
				if err != nil {
					continue // no item survived: nothing was admitted
				}
				msg := c.tap.last(t)
				admitted := admittedSize(want)
				got := int64(len(msg.Result))
				if got > admitted+wire.ReserveBytes {
					t.Fatalf("%s: %d bytes on the wire, core admitted %d", uri, got, admitted)
				}
				margin, msgMargin := got-admitted, int64(len(msg.Raw))-admitted
				minM, maxM = min(minM, margin), max(maxM, margin)
				minMsg, maxMsg = min(minMsg, msgMargin), max(maxMsg, msgMargin)
				items := want.Items()
				raws := rawItems(t, msg.Result)
				if len(raws) != len(items) {
					t.Fatalf("%s: %d items on the wire, core %d", uri, len(raws), len(items))
				}
				for i, it := range items {
					raw := raws[i]
					if est := itemSize(itemOf(it)); int64(len(raw))+1 != est {
						t.Fatalf("%s item %d: %d bytes on the wire, sizer %d: %s", uri, i, len(raw), est, raw)
					}
				}
			}
			t.Logf("protocol %q: result margin over core's admitted size %d..%d bytes, whole JSON-RPC message %d..%d bytes",
				v, minM, maxM, minMsg, maxMsg)
			if maxM > wire.ConfigOverheadBytes || minM < 0 {
				t.Errorf("margin %d..%d is not the small fixed one", minM, maxM)
			}
			seen.check(t)
			noCanary(t, c)
		})
	}
}

// rawItems returns the content entries of a result exactly as written.
func rawItems(t testing.TB, result json.RawMessage) []json.RawMessage {
	t.Helper()
	var r struct {
		Contents []json.RawMessage `json:"contents"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatal(err)
	}
	return r.Contents
}

func TestItemSizeIsExactForEveryShape(t *testing.T) {
	meta := []byte(`{"k":{"diagnostic":true}}`)
	for _, it := range []itemsize.Item{
		{URI: "a://x", MIMEType: "text/plain", Text: ""},
		{URI: "a://x", MIMEType: "text/plain", Text: "\x00\x1f\"\\\n\u2028<>&é😀\x7f"},
		{URI: "a://x", MIMEType: "text/plain", Text: "bad \xff\xc0"},
		{URI: "a://\"q\"", MIMEType: "application/octet-stream", IsBlob: true, Blob: []byte{}},
		{URI: "a://x", MIMEType: "a/b", IsBlob: true, Blob: []byte{1}},
		{URI: "a://x", MIMEType: "a/b", IsBlob: true, Blob: []byte{1, 2}},
		{URI: "a://x", MIMEType: "a/b", IsBlob: true, Blob: []byte{1, 2, 3}},
		{URI: "a://x", MIMEType: "a/b", Text: "t", Meta: meta},
	} {
		c := content{URI: it.URI, MIMEType: it.MIMEType, Meta: it.Meta}
		if it.IsBlob {
			c.Blob = &it.Blob
		} else {
			c.Text = &it.Text
		}
		enc, err := marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := itemSize(it); got != int64(len(enc))+1 {
			t.Errorf("itemSize %d, encoded %d+1: %s", got, len(enc), enc)
		}
	}
}
