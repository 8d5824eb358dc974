package core

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/internal/requestscope"

	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

// listCalls counts callbacks that a list must never make.
type listCalls struct{ resolve, read, visibility, readPolicy atomic.Int64 }

func (c *listCalls) binding(def ResourceDefinition) ResourceBinding {
	return ResourceBinding{
		Definition: def,
		Resolver: ResolverFunc(func(context.Context, ResourceMatch) (ResourceReadPlan, error) {
			c.resolve.Add(1)
			return ResourceReadPlan{}, errors.New("list must not resolve")
		}),
		Reader: ItemReader(func(context.Context, ReadItem) (ResourcePayload, error) {
			c.read.Add(1)
			return ResourcePayload{}, errors.New("list must not read")
		}),
	}
}

func (c *listCalls) policy(discover func(context.Context, ResourceDefinition) error) ResourcePolicy {
	return PerTarget(TargetPolicy{
		Discover: discover,
		Visibility: func(context.Context, ResourceTarget) (Visibility, error) {
			c.visibility.Add(1)
			return Visibility{}, errors.New("list must not ask for visibility")
		},
		Read: func(context.Context, ResourceTarget) error {
			c.readPolicy.Add(1)
			return errors.New("list must not ask for read permission")
		},
	})
}

func (c *listCalls) check(t *testing.T) {
	t.Helper()
	if n := c.resolve.Load() + c.read.Load() + c.visibility.Load() + c.readPolicy.Load(); n != 0 {
		t.Errorf("list made %d resolve/read/visibility/read-policy calls", n)
	}
}

func listAllowAll(context.Context, ResourceDefinition) error { return nil }

// listNew builds Resources from definitions, failing the test on error.
func listNew(t testing.TB, calls *listCalls, defs []ResourceDefinition, discover func(context.Context, ResourceDefinition) error, opts ...Option) *Resources {
	t.Helper()
	bs := make([]ResourceBinding, len(defs))
	for i, d := range defs {
		bs[i] = calls.binding(d)
	}
	r, err := NewResources(bs, calls.policy(discover), opts...)
	if err != nil {
		t.Fatalf("NewResources: %v", err)
	}
	return r
}

var listScope = []byte("principal:alice/session:1")

// listWireDescription is the wire shape of a listed description.
type listWireDescription struct {
	URI         string               `json:"uri,omitempty"`
	URITemplate string               `json:"uriTemplate,omitempty"`
	Name        string               `json:"name"`
	Title       string               `json:"title,omitempty"`
	Description string               `json:"description,omitempty"`
	MIMEType    string               `json:"mimeType,omitempty"`
	Annotations *listWireAnnotations `json:"annotations,omitempty"`
	Size        *int64               `json:"size,omitempty"`
	Icons       []listWireIcon       `json:"icons,omitempty"`
	Meta        json.RawMessage      `json:"_meta,omitempty"`
}

type listWireAnnotations struct {
	Audience     []string `json:"audience,omitempty"`
	Priority     *float64 `json:"priority,omitempty"`
	LastModified string   `json:"lastModified,omitempty"`
}

type listWireIcon struct {
	Src      string   `json:"src"`
	MIMEType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"`
}

func listWire(d ResourceDefinition) listWireDescription {
	w := listWireDescription{URI: d.URI, URITemplate: d.URITemplate, Name: d.Name, Title: d.Title,
		Description: d.Description, MIMEType: d.MIMEType, Size: d.Size, Meta: d.Meta}
	if a := d.Annotations; a != nil {
		w.Annotations = &listWireAnnotations{Audience: a.Audience, Priority: a.Priority, LastModified: a.LastModified}
	}
	for _, ic := range d.Icons {
		w.Icons = append(w.Icons, listWireIcon(ic))
	}
	return w
}

// listEncodePage encodes a page as the go-sdk would: compact, HTML escaping off.
func listEncodePage(t *testing.T, key string, p ListPage) []byte {
	t.Helper()
	ds := make([]listWireDescription, len(p.Descriptions))
	for i, d := range p.Descriptions {
		ds[i] = listWire(d)
	}
	var b bytes.Buffer
	b.WriteString(`{"` + key + `":`)
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ds); err != nil {
		t.Fatal(err)
	}
	b.Truncate(b.Len() - 1) // Encode's newline
	if p.NextCursor != "" {
		b.WriteString(`,"nextCursor":`)
		c, _ := json.Marshal(p.NextCursor)
		b.Write(c)
	}
	b.WriteString(`}`)
	return b.Bytes()
}

// listCorpus returns concrete and template definitions in a scrambled
// registration order, with assorted field sizes.
func listCorpus(nRes, nTmpl int, seed uint64) []ResourceDefinition {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var defs []ResourceDefinition
	for i := range nRes {
		d := ResourceDefinition{
			URI:  fmt.Sprintf("file:///r/%03d", (i*37)%nRes),
			Name: fmt.Sprintf("res-%d", i),
		}
		if i%4 == 0 {
			d.Description = strings.Repeat("é\"<", rng.IntN(40))
		}
		if i%5 == 0 {
			d.Meta = json.RawMessage(fmt.Sprintf(`{"n": %d}`, i))
		}
		if i%3 == 0 {
			p := float64(rng.IntN(1000)) / 999
			size := rng.Int64N(1 << 40)
			d.Annotations = &Annotations{Audience: []string{"user"}, Priority: &p, LastModified: "2025-01-12T15:00:58.123+01:00"}
			d.Size = &size
			d.Icons = []Icon{{Src: "https://example.com/i<&>.png", MIMEType: "image/png", Sizes: []string{"48x48", "any"}, Theme: "dark"}}
		}
		if i%7 == 0 {
			d.Name = "hidden-" + d.Name
		}
		defs = append(defs, d)
	}
	for i := range nTmpl {
		d := ResourceDefinition{
			URITemplate: fmt.Sprintf("asset://p%02d/{id}", (i*11)%nTmpl),
			Name:        fmt.Sprintf("tmpl-%d", i),
			MIMEType:    "image/png",
		}
		if i%3 == 0 {
			d.Name = "hidden-" + d.Name
		}
		if i%2 == 0 {
			d.Title = strings.Repeat("t", rng.IntN(200))
		}
		if i%4 == 1 {
			d.Annotations = &Annotations{}
			d.Icons = []Icon{{Src: "data:image/png;base64,AAAA"}, {Src: "https://e.example/\u2028", Theme: "light"}}
		}
		defs = append(defs, d)
	}
	rng.Shuffle(len(defs), func(i, j int) { defs[i], defs[j] = defs[j], defs[i] })
	return defs
}

func listHideNamed(_ context.Context, d ResourceDefinition) error {
	if strings.HasPrefix(d.Name, "hidden-") {
		return NewFailure(FailureUnavailable, errors.New("hidden by test policy"))
	}
	return nil
}

// listExpected returns the visible definitions of one kind in listing order,
// computed independently of the implementation.
func listExpected(defs []ResourceDefinition, templates bool) []ResourceDefinition {
	var out []ResourceDefinition
	for _, d := range defs {
		if (d.URITemplate != "") != templates || strings.HasPrefix(d.Name, "hidden-") {
			continue
		}
		if d.Meta != nil {
			var b bytes.Buffer
			_ = json.Compact(&b, d.Meta)
			d.Meta = b.Bytes()
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b ResourceDefinition) int {
		if c := strings.Compare(a.URI+a.URITemplate, b.URI+b.URITemplate); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

type listFunc func(context.Context, ListRequest) (ListPage, error)

// listWalk lists every page and checks each page's size and encoded bytes.
func listWalk(t *testing.T, list listFunc, wireKey string, pageSize int, pageBytes int64) []ResourceDefinition {
	all, _ := listWalkPages(t, list, wireKey, pageSize, pageSize, pageBytes)
	return all
}

// listWalkPages is listWalk that also counts the pages cut short by the
// byte budget (fewer than pageSize descriptions, yet a next cursor).
// req is the requested page size, eff the size it selects.
func listWalkPages(t *testing.T, list listFunc, wireKey string, req, eff int, pageBytes int64) (all []ResourceDefinition, byteCut int) {
	t.Helper()
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatal("listing does not end")
		}
		p, err := list(context.Background(), ListRequest{ScopeKey: listScope, Cursor: cursor, PageSize: req})
		if err != nil {
			t.Fatalf("page %d (size %d): %v (%v)", pages, req, err, errors.Unwrap(err))
		}
		if p.Descriptions == nil {
			t.Fatalf("page %d: nil Descriptions", pages)
		}
		if len(p.Descriptions) > eff {
			t.Fatalf("page %d holds %d descriptions, page size %d", pages, len(p.Descriptions), eff)
		}
		if n := int64(len(listEncodePage(t, wireKey, p))); n > pageBytes-wire.ReserveBytes {
			t.Fatalf("page %d encodes to %d bytes, over %d - wire reserve", pages, n, pageBytes)
		}
		all = append(all, p.Descriptions...)
		if p.NextCursor == "" {
			return all, byteCut
		}
		if len(p.Descriptions) < eff {
			byteCut++
		}
		if len(p.NextCursor) >= minListEnvelopeBytes {
			t.Fatalf("cursor of %d bytes does not fit the envelope space", len(p.NextCursor))
		}
		cursor = p.NextCursor
	}
}

func listSame(t *testing.T, got, want []ResourceDefinition) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d descriptions, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.URI != w.URI || g.URITemplate != w.URITemplate || g.Name != w.Name || g.Title != w.Title ||
			g.Description != w.Description || g.MIMEType != w.MIMEType || !bytes.Equal(g.Meta, w.Meta) || (g.Meta == nil) != (w.Meta == nil) {
			t.Fatalf("description %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func TestListWalksEveryPageOnceInOrder(t *testing.T) {
	t.Parallel() // independent and CPU-bound: overlaps the tests that wait
	defs := listCorpus(60, 25, 1)
	wantRes, wantTmpl := listExpected(defs, false), listExpected(defs, true)
	for _, pageBytes := range []int64{0, wire.ReserveBytes + minListEnvelopeBytes + 700, wire.ReserveBytes + minListEnvelopeBytes + 2000} {
		var calls listCalls
		r := listNew(t, &calls, defs, listHideNamed, WithResourceLimits(ResourceLimits{ListPageBytes: pageBytes, ListPageSize: 10, MaxListPageSize: 70}))
		lim := r.Limits()
		for size := 1; size <= 72; size++ {
			eff := min(size, lim.MaxListPageSize) // clamped
			got, _ := listWalkPages(t, r.List, "resources", size, eff, lim.ListPageBytes)
			listSame(t, got, wantRes)
			got, _ = listWalkPages(t, r.ListTemplates, "resourceTemplates", size, eff, lim.ListPageBytes)
			listSame(t, got, wantTmpl)
		}
		// Zero selects the default page size.
		got, byteCut := listWalkPages(t, r.List, "resources", 0, lim.ListPageSize, lim.ListPageBytes)
		listSame(t, got, wantRes)
		if small := pageBytes != 0 && pageBytes < 2000+wire.ReserveBytes; small && byteCut == 0 {
			t.Fatalf("ListPageBytes %d: no page was cut by the byte budget", pageBytes)
		}
		calls.check(t)
	}
}

func TestListOrderAndSeparation(t *testing.T) {
	defs := []ResourceDefinition{
		{URI: "b://x", Name: "1"},
		{URITemplate: "b://t/{id}", Name: "z"},
		{URI: "a://y", Name: "2"},
		{URITemplate: "a://t/{id}", Name: "y"},
		{URI: "B://x", Name: "3"}, // byte order: upper case first
		{URITemplate: "a://t/{id}/x", Name: "a"},
	}
	var calls listCalls
	r := listNew(t, &calls, defs, listAllowAll)
	p, err := r.List(context.Background(), ListRequest{ScopeKey: listScope})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range p.Descriptions {
		got = append(got, d.URI+"|"+d.URITemplate)
	}
	if want := []string{"B://x|", "a://y|", "b://x|"}; !slices.Equal(got, want) {
		t.Fatalf("List order %q, want %q", got, want)
	}
	p, err = r.ListTemplates(context.Background(), ListRequest{ScopeKey: listScope})
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, d := range p.Descriptions {
		got = append(got, d.URI+"|"+d.URITemplate)
	}
	if want := []string{"|a://t/{id}", "|a://t/{id}/x", "|b://t/{id}"}; !slices.Equal(got, want) {
		t.Fatalf("ListTemplates order %q, want %q", got, want)
	}
	calls.check(t)
}

func TestListCompareTieBreaks(t *testing.T) {
	mk := func(d ResourceDefinition) *definition { return &definition{desc: d} }
	ordered := []*definition{
		mk(ResourceDefinition{URITemplate: "a://t/{x}", Name: "a"}),
		mk(ResourceDefinition{URITemplate: "a://t/{x}", Name: "b"}),
		mk(ResourceDefinition{URITemplate: "a://t/{x}", Name: "b", Title: "t"}),
		mk(ResourceDefinition{URITemplate: "a://t/{x}", Name: "b", Title: "t", Description: "d"}),
		mk(ResourceDefinition{URITemplate: "a://t/{x}", Name: "b", Title: "t", Description: "d", MIMEType: "text/plain"}),
		mk(ResourceDefinition{URITemplate: "a://t/{x}", Name: "b", Title: "t", Description: "d", MIMEType: "text/plain", Meta: json.RawMessage(`{"a":1}`)}),
		mk(ResourceDefinition{URITemplate: "a://t/{x}", Name: "b", Title: "t", Description: "d", MIMEType: "text/plain", Meta: json.RawMessage(`{"b":1}`)}),
		mk(ResourceDefinition{URITemplate: "b://t/{x}", Name: "a"}),
	}
	for i := range ordered {
		for j := range ordered {
			c := listCompare(ordered[i], ordered[j])
			if want := (i > j) == (c > 0) && (i < j) == (c < 0) && (i == j) == (c == 0); !want {
				t.Errorf("listCompare(%d, %d) = %d", i, j, c)
			}
		}
	}
}

func TestListDiscoveryRecheckedEveryPage(t *testing.T) {
	var defs []ResourceDefinition
	for i := range 12 {
		defs = append(defs, ResourceDefinition{URI: fmt.Sprintf("file:///%02d", i), Name: fmt.Sprintf("n%02d", i)})
	}
	var mu sync.Mutex
	hidden := map[string]bool{}
	set := func(h bool, names ...string) {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range names {
			hidden[n] = h
		}
	}
	discover := func(_ context.Context, d ResourceDefinition) error {
		mu.Lock()
		defer mu.Unlock()
		if hidden[d.Name] {
			return NewFailure(FailureUnavailable, nil)
		}
		return nil
	}
	var calls listCalls
	r := listNew(t, &calls, defs, discover)
	page := func(cursor string) ListPage {
		t.Helper()
		p, err := r.List(context.Background(), ListRequest{ScopeKey: listScope, Cursor: cursor, PageSize: 3})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	names := func(p ListPage) string {
		var s []string
		for _, d := range p.Descriptions {
			s = append(s, d.Name)
		}
		return strings.Join(s, ",")
	}
	set(true, "n01")
	p1 := page("")
	if got := names(p1); got != "n00,n02,n03" {
		t.Fatalf("page 1 = %s", got)
	}
	// Between pages: n01 becomes visible (already passed, not revisited),
	// n04 and n05 become hidden.
	set(false, "n01")
	set(true, "n04", "n05")
	p2 := page(p1.NextCursor)
	if got := names(p2); got != "n06,n07,n08" {
		t.Fatalf("page 2 = %s", got)
	}
	// Replaying the same cursor rechecks discovery again.
	set(false, "n04", "n05")
	if got := names(page(p1.NextCursor)); got != "n04,n05,n06" {
		t.Fatalf("page 2 replayed = %s", got)
	}
	// Everything left hidden: an empty last page.
	set(true, "n09", "n10", "n11")
	p3 := page(p2.NextCursor)
	if got := names(p3); got != "" || p3.NextCursor != "" || p3.Descriptions == nil {
		t.Fatalf("page 3 = %q, next %q", got, p3.NextCursor)
	}
	calls.check(t)
}

func TestListPageFullAtEndHasNoCursor(t *testing.T) {
	defs := []ResourceDefinition{{URI: "a://1", Name: "a"}, {URI: "a://2", Name: "b"}}
	var calls listCalls
	r := listNew(t, &calls, defs, listAllowAll)
	p, err := r.List(context.Background(), ListRequest{ScopeKey: listScope, PageSize: 2})
	if err != nil || len(p.Descriptions) != 2 || p.NextCursor != "" {
		t.Fatalf("page = %+v, %v", p, err)
	}
	p, err = r.ListTemplates(context.Background(), ListRequest{ScopeKey: listScope})
	if err != nil || p.Descriptions == nil || len(p.Descriptions) != 0 || p.NextCursor != "" {
		t.Fatalf("empty template page = %+v, %v", p, err)
	}
}

func TestListDescriptionTooLargeForEmptyPage(t *testing.T) {
	room := int64(300)
	pageBytes := wire.ReserveBytes + minListEnvelopeBytes + room
	small := ResourceDefinition{URI: "a://1", Name: "small"}
	// Exactly fills the room: size + comma == room.
	fits := ResourceDefinition{URI: "a://2", Name: "fits"}
	fits.Description = strings.Repeat("x", int(room)-1-definitionSize(fits)-len(`,"description":""`))
	big := ResourceDefinition{URI: "a://3", Name: "big", Description: strings.Repeat("x", 400)}
	if n := definitionSize(fits) + 1; int64(n) != room {
		t.Fatalf("fits costs %d, want %d", n, room)
	}
	var hideBig atomic.Bool
	discover := func(_ context.Context, d ResourceDefinition) error {
		if d.Name == "big" && hideBig.Load() {
			return NewFailure(FailureUnavailable, nil)
		}
		return nil
	}
	var calls listCalls
	r := listNew(t, &calls, []ResourceDefinition{small, fits, big}, discover, WithResourceLimits(ResourceLimits{ListPageBytes: pageBytes}))

	p1, err := r.List(context.Background(), ListRequest{ScopeKey: listScope})
	if err != nil || len(p1.Descriptions) != 1 || p1.Descriptions[0].Name != "small" || p1.NextCursor == "" {
		t.Fatalf("page 1 = %+v, %v", p1, err)
	}
	p2, err := r.List(context.Background(), ListRequest{ScopeKey: listScope, Cursor: p1.NextCursor})
	if err != nil || len(p2.Descriptions) != 1 || p2.Descriptions[0].Name != "fits" || p2.NextCursor == "" {
		t.Fatalf("page 2 = %+v, %v", p2, err)
	}
	if n := int64(len(listEncodePage(t, "resources", p2))); n > pageBytes-wire.ReserveBytes {
		t.Fatalf("page 2 encodes to %d bytes", n)
	}
	p3, err := r.List(context.Background(), ListRequest{ScopeKey: listScope, Cursor: p2.NextCursor})
	if KindOf(err) != FailureSize || p3.Descriptions != nil || p3.NextCursor != "" {
		t.Fatalf("page 3 = %+v, %v; want FailureSize", p3, err)
	}
	// Hidden, it does not fail the page: it is simply not there.
	hideBig.Store(true)
	p3, err = r.List(context.Background(), ListRequest{ScopeKey: listScope, Cursor: p2.NextCursor})
	if err != nil || len(p3.Descriptions) != 0 || p3.NextCursor != "" {
		t.Fatalf("page 3 with big hidden = %+v, %v", p3, err)
	}
	// A budget with no room for any description, which used to be the floor
	// and failed every non-empty listing, is now refused at construction.
	_, err = NewResources(nil, calls.policy(listAllowAll), WithResourceLimits(ResourceLimits{ListPageBytes: wire.ReserveBytes + minListEnvelopeBytes}))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Path.Field != "ListPageBytes" {
		t.Fatalf("a page budget with no description room: %v, want a *ConfigError on ListPageBytes", err)
	}
	calls.check(t)
}

func TestListDescriptionsOwnMeta(t *testing.T) {
	meta := json.RawMessage(`{"k":"v"}`)
	defs := []ResourceDefinition{{URI: "a://1", Name: "a", Meta: meta}, {URITemplate: "a://t/{x}", Name: "t", Meta: meta}}
	var seen atomic.Int64
	discover := func(_ context.Context, d ResourceDefinition) error {
		if d.Meta != nil {
			d.Meta[0] = 'X' // a policy scribbling on its argument changes nothing either
		}
		seen.Add(1)
		return nil
	}
	var calls listCalls
	r := listNew(t, &calls, defs, discover)
	meta[1] = 'X' // the caller's original is not shared either
	for _, list := range []listFunc{r.List, r.ListTemplates} {
		for range 2 {
			p, err := list(context.Background(), ListRequest{ScopeKey: listScope})
			if err != nil || len(p.Descriptions) != 1 {
				t.Fatal(p, err)
			}
			if got := string(p.Descriptions[0].Meta); got != `{"k":"v"}` {
				t.Fatalf("Meta = %s", got)
			}
			p.Descriptions[0].Meta[2] = 'Z'
			p.Descriptions[0].Meta = append(p.Descriptions[0].Meta, '!')
		}
	}
	if seen.Load() != 4 {
		t.Fatalf("discover called %d times", seen.Load())
	}
}

func TestListRequestValidation(t *testing.T) {
	var calls listCalls
	var discovered atomic.Int64
	r := listNew(t, &calls, []ResourceDefinition{{URI: "a://1", Name: "a"}}, func(context.Context, ResourceDefinition) error {
		discovered.Add(1)
		return nil
	})
	for _, list := range []listFunc{r.List, r.ListTemplates} {
		for _, scope := range [][]byte{nil, {}} {
			_, err := list(context.Background(), ListRequest{ScopeKey: scope})
			if KindOf(err) != FailureInvalidRequest || !errors.Is(err, errMissingScopeKey) {
				t.Fatalf("scope %v: %v", scope, err)
			}
		}
		_, err := list(context.Background(), ListRequest{ScopeKey: listScope, PageSize: -1})
		if KindOf(err) != FailureInvalidRequest || !errors.Is(err, errNegativePageSize) {
			t.Fatalf("negative page size: %v", err)
		}
	}
	if discovered.Load() != 0 {
		t.Fatal("an invalid request reached discovery")
	}
	// A one-byte scope, even a zero byte, is a scope.
	if _, err := r.List(context.Background(), ListRequest{ScopeKey: []byte{0}}); err != nil {
		t.Fatal(err)
	}
}

func TestListPolicyFailures(t *testing.T) {
	defs := []ResourceDefinition{{URI: "a://1", Name: "a"}, {URI: "a://2", Name: "b"}, {URI: "a://3", Name: "c"}}
	cases := []struct {
		name  string
		err   func() error
		cause func(error) bool
	}{
		{"error", func() error { return errors.New("policy store down") }, func(err error) bool {
			return strings.Contains(errors.Unwrap(err).Error(), "policy store down")
		}},
		{"panic", func() error { panic("policy bug") }, func(err error) bool {
			var p *panicError
			return errors.As(err, &p)
		}},
		{"typed non-unavailable failure", func() error { return NewFailure(FailureTimeout, nil) }, func(error) bool { return true }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls listCalls
			r := listNew(t, &calls, defs, func(_ context.Context, d ResourceDefinition) error {
				if d.Name == "b" {
					return tc.err()
				}
				return nil
			})
			p, err := r.List(context.Background(), ListRequest{ScopeKey: listScope})
			if KindOf(err) != FailurePolicy || !tc.cause(err) || p.Descriptions != nil || p.NextCursor != "" {
				t.Fatalf("page %+v, err %v (%v)", p, err, errors.Unwrap(err))
			}
			if err.Error() != "resource policy failed" {
				t.Fatalf("public message %q", err.Error())
			}
			// Before the failing description, pages still work.
			p, err = r.List(context.Background(), ListRequest{ScopeKey: listScope, PageSize: 1})
			if err != nil || len(p.Descriptions) != 1 {
				t.Fatal(p, err)
			}
			calls.check(t)
		})
	}
}

func TestListCancellationAndTimeout(t *testing.T) {
	t.Parallel() // waits out deadlines
	defs := []ResourceDefinition{{URI: "a://1", Name: "a"}, {URI: "a://2", Name: "b"}, {URI: "a://3", Name: "c"}}
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })

	t.Run("canceled before", func(t *testing.T) {
		var calls listCalls
		var discovered atomic.Int64
		r := listNew(t, &calls, defs, func(context.Context, ResourceDefinition) error { discovered.Add(1); return nil })
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := r.List(ctx, ListRequest{ScopeKey: listScope}); KindOf(err) != FailureCanceled {
			t.Fatalf("err %v", err)
		}
		if discovered.Load() != 0 {
			t.Fatal("discovery ran on a canceled context")
		}
	})
	t.Run("canceled during", func(t *testing.T) {
		var calls listCalls
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r := listNew(t, &calls, defs, func(_ context.Context, d ResourceDefinition) error {
			if d.Name == "b" {
				cancel()
				return NewFailure(FailureUnavailable, nil) // even a denial: the operation has ended
			}
			return nil
		})
		p, err := r.List(ctx, ListRequest{ScopeKey: listScope})
		if KindOf(err) != FailureCanceled || p.Descriptions != nil {
			t.Fatalf("page %+v, err %v", p, err)
		}
	})
	t.Run("policy ignoring its context", func(t *testing.T) {
		entered := make(chan struct{}, 8) // one per call of the stuck policy
		stuck := func(context.Context, ResourceDefinition) error {
			entered <- struct{}{}
			<-release
			return nil
		}
		var calls listCalls
		r := listNew(t, &calls, defs, stuck, WithResourceLimits(ResourceLimits{ReadTimeout: 50 * time.Millisecond}))
		start := time.Now()
		_, err := r.List(context.Background(), ListRequest{ScopeKey: listScope})
		if KindOf(err) != FailureTimeout {
			t.Fatalf("err %v", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("list waited %v for a stuck policy", d)
		}
		// Canceled while the policy is stuck, under a timeout that cannot
		// end the list first.
		r = listNew(t, &calls, defs, stuck, WithResourceLimits(ResourceLimits{ReadTimeout: time.Hour}))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		<-entered // the first list's call
		go func() {
			<-entered
			cancel()
		}()
		if _, err := r.List(ctx, ListRequest{ScopeKey: listScope}); KindOf(err) != FailureCanceled {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("caller's scope is used", func(t *testing.T) {
		// ReadTimeout is short, but a scope already begun by the caller (the
		// adapter) governs: the list does not start its own.
		var calls listCalls
		// The policy waits out a deadline as short as the list's own and
		// answers at once under a longer one: no race between two timers.
		r := listNew(t, &calls, defs, func(ctx context.Context, _ ResourceDefinition) error {
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) < 10*time.Second {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}, WithResourceLimits(ResourceLimits{ReadTimeout: 30 * time.Millisecond}))
		if _, err := r.List(context.Background(), ListRequest{ScopeKey: listScope}); KindOf(err) != FailureTimeout {
			t.Fatalf("own scope: %v", err)
		}
		ctx, cancel := requestscope.Begin(context.Background(), time.Minute)
		defer cancel()
		if p, err := r.List(ctx, ListRequest{ScopeKey: listScope}); err != nil || len(p.Descriptions) != 3 {
			t.Fatalf("caller's scope: %+v, %v", p, err)
		}
	})
}

func TestListConcurrent(t *testing.T) {
	defs := listCorpus(40, 15, 2)
	want := listExpected(defs, false)
	var calls listCalls
	r := listNew(t, &calls, defs, listHideNamed)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			got := listWalk(t, r.List, "resources", 1+i, r.Limits().ListPageBytes)
			if len(got) != len(want) {
				t.Errorf("goroutine %d: %d descriptions, want %d", i, len(got), len(want))
			}
		})
	}
	wg.Wait()
}

// BenchmarkList measures the first page and a page near the end of a
// 100 000-definition registry: a late page must cost what the first costs.
func BenchmarkList(b *testing.B) {
	const n = 100_000
	bs := make([]ResourceBinding, n)
	var calls listCalls
	for i := range bs {
		bs[i] = calls.binding(ResourceDefinition{URI: fmt.Sprintf("file:///assets/%06d", i), Name: fmt.Sprintf("asset-%06d", i), MIMEType: "text/plain"})
	}
	r, err := NewResources(bs, calls.policy(listAllowAll))
	if err != nil {
		b.Fatal(err)
	}
	scope := sha256.Sum256(listScope)
	late := r.list.encodeCursor(listMethodResources, n-2*DefaultResourceLimits().ListPageSize, &scope)
	for _, bc := range []struct{ name, cursor string }{{"first", ""}, {"late", late}} {
		b.Run("page="+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			req := ListRequest{ScopeKey: listScope, Cursor: bc.cursor}
			for b.Loop() {
				p, err := r.List(context.Background(), req)
				if err != nil || len(p.Descriptions) != DefaultResourceLimits().ListPageSize || p.NextCursor == "" {
					b.Fatal(len(p.Descriptions), err)
				}
			}
		})
	}
}

// listDefinitionCosting returns a definition whose cost in a page (encoded
// size plus its separating comma) is exactly cost bytes.
func listDefinitionCosting(t *testing.T, d ResourceDefinition, cost int) ResourceDefinition {
	t.Helper()
	d.Description = strings.Repeat("x", cost-1-definitionSize(d)-len(`,"description":""`))
	if n := definitionSize(d) + 1; n != cost {
		t.Fatalf("definition costs %d, want %d", n, cost)
	}
	return d
}

// At the floor of ListPageBytes a page has room, beyond the wire reserve and
// the largest envelope (cursor included), for one description of up to 256
// bytes with its comma: a listing at the floor works, and only a larger
// description fails the page.
func TestListPageBytesFloorHoldsOneSmallDescription(t *testing.T) {
	const floor = 8<<10 + 256 + 256
	lim := WithResourceLimits(ResourceLimits{ListPageBytes: floor})
	small := ResourceDefinition{URI: "a://1", Name: "small", MIMEType: "text/plain"}
	largest := listDefinitionCosting(t, ResourceDefinition{URI: "a://2", Name: "largest"}, 256)
	over := listDefinitionCosting(t, ResourceDefinition{URI: "a://3", Name: "over"}, 257)
	template := ResourceDefinition{URITemplate: "a://t/{x}", Name: "template"}
	var calls listCalls

	r := listNew(t, &calls, []ResourceDefinition{small, template}, listAllowAll, lim)
	p, err := r.List(context.Background(), ListRequest{ScopeKey: listScope})
	if err != nil || len(p.Descriptions) != 1 || p.Descriptions[0].Name != "small" || p.NextCursor != "" {
		t.Fatalf("List at the floor = %+v, %v; want the one small description", p, err)
	}
	p, err = r.ListTemplates(context.Background(), ListRequest{ScopeKey: listScope})
	if err != nil || len(p.Descriptions) != 1 || p.Descriptions[0].Name != "template" {
		t.Fatalf("ListTemplates at the floor = %+v, %v; want the one template", p, err)
	}

	// Two pages, the first with a cursor: each fits the page without the
	// wire reserve.
	r = listNew(t, &calls, []ResourceDefinition{small, largest}, listAllowAll, lim)
	p1, err := r.List(context.Background(), ListRequest{ScopeKey: listScope})
	if err != nil || len(p1.Descriptions) != 1 || p1.Descriptions[0].Name != "small" || p1.NextCursor == "" {
		t.Fatalf("page 1 = %+v, %v", p1, err)
	}
	p2, err := r.List(context.Background(), ListRequest{ScopeKey: listScope, Cursor: p1.NextCursor})
	if err != nil || len(p2.Descriptions) != 1 || p2.Descriptions[0].Name != "largest" || p2.NextCursor != "" {
		t.Fatalf("page 2 = %+v, %v", p2, err)
	}
	for i, p := range []ListPage{p1, p2} {
		if n := len(listEncodePage(t, "resources", p)); n > floor-wire.ReserveBytes {
			t.Fatalf("page %d encodes to %d bytes, more than %d", i+1, n, floor-wire.ReserveBytes)
		}
	}

	r = listNew(t, &calls, []ResourceDefinition{over}, listAllowAll, lim)
	if _, err := r.List(context.Background(), ListRequest{ScopeKey: listScope}); KindOf(err) != FailureSize {
		t.Fatalf("a 257-byte description at the floor: %v, want FailureSize", err)
	}
	calls.check(t)

	// One byte below the floor is a configuration error.
	_, err = NewResources(nil, calls.policy(listAllowAll), WithResourceLimits(ResourceLimits{ListPageBytes: floor - 1}))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Path.Field != "ListPageBytes" {
		t.Fatalf("ListPageBytes one below the floor: %v, want a *ConfigError on ListPageBytes", err)
	}
}
