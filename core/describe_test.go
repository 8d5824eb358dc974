package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// fullDefinition lists every field MCP lists for a concrete resource.
func fullDefinition() ResourceDefinition {
	return ResourceDefinition{
		URI: "a://x", Name: "n", Title: "t", Description: "d<&>\u2028", MIMEType: "text/plain",
		Meta: json.RawMessage(`{"k":1}`),
		Annotations: &Annotations{
			Audience:     []string{audienceUser, audienceAssistant},
			Priority:     ptr(0.25),
			LastModified: "2025-01-12T15:00:58Z",
		},
		Size:  ptr(int64(1234)),
		Icons: []Icon{{Src: "https://example.com/a.png", MIMEType: "image/png", Sizes: []string{"48x48"}, Theme: "dark"}},
	}
}

func encodeWire(t *testing.T, d ResourceDefinition) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(listWire(d)); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func TestDefinitionSizeIsExactForTheListedShapeWithAnnotationsSizeAndIcons(t *testing.T) {
	var calls listCalls
	cases := map[string]ResourceDefinition{"full": fullDefinition()}
	d := fullDefinition()
	d.Annotations = &Annotations{}
	cases["empty annotations"] = d
	d = fullDefinition()
	d.Annotations = &Annotations{Priority: ptr(0.0)}
	cases["zero priority"] = d
	d = fullDefinition()
	d.Annotations = &Annotations{Priority: ptr(1e-7), LastModified: "2025-01-12T15:00:58.5-07:00"}
	cases["tiny priority"] = d
	d = fullDefinition()
	d.Annotations, d.Size, d.Icons = nil, ptr(int64(0)), []Icon{{Src: "data:image/png;base64,AA=="}, {Src: "https://e/x", Sizes: []string{"a\"b", "\x7f"}}}
	cases["size zero, two icons"] = d
	d = fullDefinition()
	d.URI, d.URITemplate, d.Size = "", "a://t/{id}", nil
	cases["template"] = d
	for name, def := range cases {
		r := listNew(t, &calls, []ResourceDefinition{def}, listAllowAll)
		got := r.defs[0].desc
		want := encodeWire(t, got)
		if n := definitionSize(got); n != len(want) {
			t.Errorf("%s: definitionSize %d, encoded %d: %s", name, n, len(want), want)
		}
	}
}

func TestDefinitionExtrasAreValidatedAtNewResources(t *testing.T) {
	var calls listCalls
	for _, tc := range []struct {
		name  string
		edit  func(d *ResourceDefinition)
		field string
	}{
		{"unknown audience", func(d *ResourceDefinition) { d.Annotations.Audience = []string{"robot"} }, "Annotations.Audience"},
		{"repeated audience", func(d *ResourceDefinition) { d.Annotations.Audience = []string{"user", "user"} }, "Annotations.Audience"},
		{"priority above 1", func(d *ResourceDefinition) { d.Annotations.Priority = ptr(1.5) }, "Annotations.Priority"},
		{"negative priority", func(d *ResourceDefinition) { d.Annotations.Priority = ptr(-0.1) }, "Annotations.Priority"},
		{"NaN priority", func(d *ResourceDefinition) { d.Annotations.Priority = ptr(math.NaN()) }, "Annotations.Priority"},
		{"infinite priority", func(d *ResourceDefinition) { d.Annotations.Priority = ptr(math.Inf(1)) }, "Annotations.Priority"},
		{"lastModified not RFC 3339", func(d *ResourceDefinition) { d.Annotations.LastModified = "yesterday" }, "Annotations.LastModified"},
		{"negative size", func(d *ResourceDefinition) { d.Size = ptr(int64(-1)) }, "Size"},
		{"size on a template", func(d *ResourceDefinition) { d.URI, d.URITemplate = "", "a://t/{id}" }, "Size"},
		{"icon without src", func(d *ResourceDefinition) { d.Icons[0].Src = "" }, "Icons.Src"},
		{"relative icon src", func(d *ResourceDefinition) { d.Icons[0].Src = "/a.png" }, "Icons.Src"},
		{"icon src with credentials", func(d *ResourceDefinition) { d.Icons[0].Src = "https://u:p@e/a.png" }, "Icons.Src"},
		{"icon src with control character", func(d *ResourceDefinition) { d.Icons[0].Src = "https://e/\x00" }, "Icons.Src"},
		{"icon MIME type", func(d *ResourceDefinition) { d.Icons[0].MIMEType = "png" }, "Icons.MIMEType"},
		{"empty icon size", func(d *ResourceDefinition) { d.Icons[0].Sizes = []string{""} }, "Icons.Sizes"},
		{"icon size not UTF-8", func(d *ResourceDefinition) { d.Icons[0].Sizes = []string{"\xff"} }, "Icons.Sizes"},
		{"icon theme", func(d *ResourceDefinition) { d.Icons[0].Theme = "blue" }, "Icons.Theme"},
		{"extras push the definition over 64 KiB", func(d *ResourceDefinition) {
			d.Icons[0].Sizes = []string{strings.Repeat("9", maxDefinitionBytes)}
		}, "Definition"},
	} {
		d := fullDefinition()
		tc.edit(&d)
		_, err := NewResources([]ResourceBinding{calls.binding(d)}, calls.policy(listAllowAll))
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Path.Field != tc.field || ce.Definition != 0 {
			t.Errorf("%s: got %v, want a *ConfigError on %s", tc.name, err, tc.field)
		}
	}
}

func TestDescriptionsOwnTheirAnnotationsSizeAndIcons(t *testing.T) {
	var calls listCalls
	in := fullDefinition()
	r := listNew(t, &calls, []ResourceDefinition{in}, listAllowAll)
	// Changing the caller's definition after NewResources changes nothing.
	in.Annotations.Audience[0] = "assistant"
	*in.Annotations.Priority = 0.9
	*in.Size = 1
	in.Icons[0].Sizes[0] = "1x1"
	in.Icons[0].Src = "https://evil/"
	page, err := r.List(context.Background(), ListRequest{ScopeKey: listScope})
	if err != nil {
		t.Fatal(err)
	}
	got := page.Descriptions[0]
	want := fullDefinition()
	if !bytes.Equal(encodeWire(t, got), encodeWire(t, want)) {
		t.Fatalf("listed %s, want %s", encodeWire(t, got), encodeWire(t, want))
	}
	// Changing a returned description changes nothing either.
	got.Annotations.Audience[0] = "assistant"
	*got.Annotations.Priority = 0.9
	*got.Size = 1
	got.Icons[0].Sizes[0] = "1x1"
	again, _ := r.List(context.Background(), ListRequest{ScopeKey: listScope})
	if !bytes.Equal(encodeWire(t, again.Descriptions[0]), encodeWire(t, want)) {
		t.Fatalf("a returned description shares state: %s", encodeWire(t, again.Descriptions[0]))
	}
}

func TestRevisionCoversAnnotationsSizeAndIcons(t *testing.T) {
	var calls listCalls
	rev := func(defs ...ResourceDefinition) string {
		t.Helper()
		return listNew(t, &calls, defs, listAllowAll).Revision()
	}
	plain := fullDefinition()
	plain.Annotations, plain.Size, plain.Icons = nil, nil, nil
	seen := map[string]string{rev(fullDefinition()): "full", rev(plain): "no extras"}
	edits := map[string]func(d *ResourceDefinition){
		"annotations absent":  func(d *ResourceDefinition) { d.Annotations = nil },
		"annotations empty":   func(d *ResourceDefinition) { d.Annotations = &Annotations{} },
		"audience order":      func(d *ResourceDefinition) { d.Annotations.Audience = []string{"assistant", "user"} },
		"audience shorter":    func(d *ResourceDefinition) { d.Annotations.Audience = []string{"user"} },
		"priority":            func(d *ResourceDefinition) { d.Annotations.Priority = ptr(0.5) },
		"priority absent":     func(d *ResourceDefinition) { d.Annotations.Priority = nil },
		"priority zero":       func(d *ResourceDefinition) { d.Annotations.Priority = ptr(0.0) },
		"lastModified":        func(d *ResourceDefinition) { d.Annotations.LastModified = "2025-01-12T15:00:59Z" },
		"size":                func(d *ResourceDefinition) { d.Size = ptr(int64(1235)) },
		"size absent":         func(d *ResourceDefinition) { d.Size = nil },
		"size zero":           func(d *ResourceDefinition) { d.Size = ptr(int64(0)) },
		"icons absent":        func(d *ResourceDefinition) { d.Icons = nil },
		"icon src":            func(d *ResourceDefinition) { d.Icons[0].Src = "https://example.com/b.png" },
		"icon MIME":           func(d *ResourceDefinition) { d.Icons[0].MIMEType = "image/jpeg" },
		"icon sizes":          func(d *ResourceDefinition) { d.Icons[0].Sizes = nil },
		"icon theme":          func(d *ResourceDefinition) { d.Icons[0].Theme = "light" },
		"second icon":         func(d *ResourceDefinition) { d.Icons = append(d.Icons, Icon{Src: "https://e/c"}) },
		"icon field boundary": func(d *ResourceDefinition) { d.Icons[0].MIMEType, d.Icons[0].Theme = "", "" },
	}
	for name, edit := range edits {
		d := fullDefinition()
		edit(&d)
		got := rev(d)
		if prev, dup := seen[got]; dup {
			t.Errorf("%s has the revision of %s", name, prev)
		}
		seen[got] = name
	}
	// Binding order still does not matter.
	a, b := fullDefinition(), fullDefinition()
	b.URI, b.Size = "a://y", ptr(int64(1))
	if rev(a, b) != rev(b, a) {
		t.Error("binding order changed the revision")
	}
}
