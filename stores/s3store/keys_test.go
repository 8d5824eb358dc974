package s3store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/storetest"
)

func testBucket(t *testing.T) *Bucket {
	t.Helper()
	c, err := NewClient(t.Context(), ClientConfig{Endpoint: "http://127.0.0.1:1", AccessKeyID: "a", SecretAccessKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenBucket(t.Context(), c, "assets", nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var reports = KeyFamily{Definition: core.ResourceDefinition{Name: "report"},
	URI: "report://tenants/{tenant}/reports/...", Prefix: "tenants/{tenant}/reports/", MaxDepth: 6}

// stub is a binding of tmpl that is never read.
func stub(tmpl string) core.ResourceBinding {
	return core.ResourceBinding{Definition: core.ResourceDefinition{URITemplate: tmpl, Name: "neighbour"},
		Resolver: core.ResolverFunc(func(context.Context, core.ResourceMatch) (core.ResourceReadPlan, error) {
			return core.ResourceReadPlan{}, core.NewFailure(core.FailureUnavailable, nil)
		}),
		Reader: core.ItemReader(func(context.Context, core.ReadItem) (core.ResourcePayload, error) {
			return core.ResourcePayload{}, core.NewFailure(core.FailureUnavailable, nil)
		})}
}

// TestKeyFamilyIsOneWholeSegmentTemplatePerDepth: a family of depth six is
// six templates whose segments are the URI's own and one capture per key
// segment, in depth order.
func TestKeyFamilyIsOneWholeSegmentTemplatePerDepth(t *testing.T) {
	bs, err := testBucket(t).KeyBindings(reports)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range bs {
		got = append(got, b.Definition.URITemplate)
		if b.Definition.Name != "report" {
			t.Errorf("%s is named %q", b.Definition.URITemplate, b.Definition.Name)
		}
	}
	want := []string{
		"report://tenants/{tenant}/reports/{k1}",
		"report://tenants/{tenant}/reports/{k1}/{k2}",
		"report://tenants/{tenant}/reports/{k1}/{k2}/{k3}",
		"report://tenants/{tenant}/reports/{k1}/{k2}/{k3}/{k4}",
		"report://tenants/{tenant}/reports/{k1}/{k2}/{k3}/{k4}/{k5}",
		"report://tenants/{tenant}/reports/{k1}/{k2}/{k3}/{k4}/{k5}/{k6}",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("templates\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestKeyFamilyIsNeverAmbiguousWithItselfOrDisjointNeighbours: registered
// with the documents templates and another family under a distinct literal
// segment, core.TemplateOverlaps finds nothing; a neighbour that some
// report URI also matches is reported, so a host's start-up check catches
// it.
func TestKeyFamilyIsNeverAmbiguousWithItselfOrDisjointNeighbours(t *testing.T) {
	b := testBucket(t)
	invoices := KeyFamily{Definition: core.ResourceDefinition{Name: "invoice"},
		URI: "report://tenants/{tenant}/invoices/...", Prefix: "tenants/{tenant}/invoices/", MaxDepth: 6}
	bs, err := b.KeyBindings(reports, invoices)
	if err != nil {
		t.Fatal(err)
	}
	neighbours := []core.ResourceBinding{stub("doc://tenants/{tenant}/documents/{id}"), stub("doc://tenants/{tenant}/documents"),
		stub("report://tenants/{tenant}")}
	r, err := core.NewResources(append(slices.Clone(bs), neighbours...), storetest.AllowAll())
	if err != nil {
		t.Fatal(err)
	}
	if o, complete := r.TemplateOverlaps(); len(o) != 0 || !complete {
		t.Fatalf("overlaps %+v (complete %v), want none", o, complete)
	}
	clash := stub("report://tenants/{tenant}/reports/{year}/index")
	r, err = core.NewResources(append(slices.Clone(bs), clash), storetest.AllowAll())
	if err != nil {
		t.Fatal(err)
	}
	o, _ := r.TemplateOverlaps()
	if len(o) != 1 || o[0].First != "report://tenants/{tenant}/reports/{k1}/{k2}" || o[0].Second != clash.Definition.URITemplate {
		t.Fatalf("overlaps %+v, want the depth-2 template against the neighbour", o)
	}
}

// TestKeyFamilyRefusesEverySegmentThatIsNotAKeySegment: the resolver
// checks every segment, literal or captured, before any request (the
// bucket's endpoint refuses connections, so a request would be a
// different error).
func TestKeyFamilyRefusesEverySegmentThatIsNotAKeySegment(t *testing.T) {
	for _, seg := range []string{"", ".", "..", "a/b", `a\b`, "a\x00b", "a\x7fb"} {
		if err := checkSegment(seg); err == nil {
			t.Errorf("segment %q accepted", seg)
		}
	}
	for _, seg := range []string{"a", "q3.pdf", "...", "ü", "a b"} {
		if err := checkSegment(seg); err != nil {
			t.Errorf("segment %q refused: %v", seg, err)
		}
	}
}

func TestContentTypeOfPrefersTheStoredTypeThenTheExtension(t *testing.T) {
	for _, c := range []struct{ key, stored, want string }{
		{"a/q3.pdf", "", "application/pdf"},
		{"a/notes.md", "", "text/markdown; charset=utf-8"},
		{"a/notes.md", "text/x-custom", "text/x-custom"},
		{"a/notes.md", "binary/octet-stream", "text/markdown; charset=utf-8"},
		{"a/notes.md", "application/octet-stream", "text/markdown; charset=utf-8"},
		{"a/NOTES.TXT", "", "text/plain; charset=utf-8"},
		{"a/noext", "", "application/octet-stream"},
		{"a/noext", "not a type", "application/octet-stream"},
	} {
		if got := ContentTypeOf(c.key, c.stored); got != c.want {
			t.Errorf("ContentTypeOf(%q, %q) = %q, want %q", c.key, c.stored, got, c.want)
		}
	}
}

// FuzzKeyFamily: whatever URI and prefix a family is given, KeyBindings
// never panics, and a family it accepts registers with core and is never
// ambiguous with itself.
func FuzzKeyFamily(f *testing.F) {
	f.Add("report://tenants/{tenant}/reports/...", "tenants/{tenant}/reports/", 3)
	f.Add("r://{a}/{b}/...", "{b}/x/{a}/", 2)
	f.Add("r://x/...", "", 1)
	f.Add("r://{a}/...", "{a}/{a}/", 1)
	f.Fuzz(func(t *testing.T, uri, prefix string, depth int) {
		depth = depth%5 + 1
		if depth < 1 {
			depth += 5
		}
		bs, err := testBucket(t).KeyBindings(KeyFamily{Definition: core.ResourceDefinition{Name: "f"}, URI: uri, Prefix: prefix, MaxDepth: depth})
		if err != nil {
			return
		}
		if len(bs) != depth {
			t.Fatalf("%d bindings for depth %d", len(bs), depth)
		}
		r, err := core.NewResources(bs, storetest.AllowAll())
		if err != nil {
			return // a URI core refuses (scheme, escapes): registration fails, as it should
		}
		if o, _ := r.TemplateOverlaps(); len(o) != 0 {
			t.Fatalf("%q: family overlaps itself: %+v", uri, o)
		}
	})
}

// TestCheckKeyFamilyRefusesPrefixes proves the check a caller runs
// before it has a bucket refuses a family's prefix as KeyBindings does (no
// trailing '/', a dot segment, a partial capture, a backslash, a prefix
// longer than a key may be, a capture the URI lacks), at the path of the
// family's Prefix.
func TestCheckKeyFamilyRefusesPrefixes(t *testing.T) {
	fam := func(prefix string) KeyFamily {
		return KeyFamily{Definition: core.ResourceDefinition{Name: "r"}, URI: "r://x/{tenant}/...", Prefix: prefix, MaxDepth: 2}
	}
	if err := CheckKeyFamily(fam("tenants/{tenant}/reports/")); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		"tenants/{tenant}":           "end in /",
		"tenants/../{tenant}/":       `".." segment`,
		"tenants/x{tenant}/":         "captures are whole segments",
		`tenants\x/{tenant}/`:        "backslash",
		strings.Repeat("a/", 513):    "exceeds 1024 bytes",
		"tenants//{tenant}/":         "empty segment",
		"tenants/{tenant}/{year}/":   "{year}, which the template does not capture: it must capture exactly the template's captures (tenant)",
		"tenants/":                   "does not use the template's capture {tenant}",
		"tenants/{tenant}/{tenant}/": "{tenant} twice",
	} {
		err := CheckKeyFamily(fam(p))
		ce, ok := errors.AsType[*core.ConfigError](err)
		if !ok || !strings.Contains(ce.Reason, want) || strings.Contains(ce.Reason, "s3store:") || ce.Path != (core.ConfigPath{Binding: "r", Field: "Prefix"}) {
			t.Errorf("%.40q: %v (%+v), want a reason about %q at the family's Prefix", p, err, ce, want)
		}
	}
}
