package core

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestRevision(t *testing.T) {
	var calls listCalls
	rev := func(defs ...ResourceDefinition) string {
		t.Helper()
		return listNew(t, &calls, defs, listAllowAll).Revision()
	}
	base := ResourceDefinition{URI: "a://x", Name: "n", Title: "t", Description: "d", MIMEType: "text/plain", Meta: json.RawMessage(`{"k":1}`)}
	seen := map[string]string{rev(base): "base"}
	variants := map[string]ResourceDefinition{}
	v := base
	v.URI = "a://y"
	variants["uri"] = v
	v = base
	v.URI, v.URITemplate = "", "a://x"
	variants["template instead of uri"] = v
	v = base
	v.Name = "m"
	variants["name"] = v
	v = base
	v.Title = ""
	variants["title"] = v
	v = base
	v.Description = "e"
	variants["description"] = v
	v = base
	v.MIMEType = "text/html"
	variants["mime"] = v
	v = base
	v.Meta = nil
	variants["meta absent"] = v
	v = base
	v.Meta = json.RawMessage(`{}`)
	variants["meta empty"] = v
	v = base
	v.Name, v.Title = "nt", "" // same concatenation as Name+Title of base
	variants["field boundary"] = v
	v = base
	v.Title, v.Description = "td", ""
	variants["field boundary 2"] = v
	for name, d := range variants {
		got := rev(d)
		if prev, dup := seen[got]; dup {
			t.Errorf("%s has the revision of %s", name, prev)
		}
		seen[got] = name
	}
	// Count boundaries: one concrete and one template vs two templates.
	a := rev(ResourceDefinition{URI: "a://1", Name: "x"}, ResourceDefinition{URITemplate: "a://{y}", Name: "y"})
	b := rev(ResourceDefinition{URITemplate: "a://1", Name: "x"}, ResourceDefinition{URITemplate: "a://{y}", Name: "y"})
	if a == b {
		t.Error("moving a definition between sections kept the revision")
	}
	if rev() == rev(base) || rev() != rev() {
		t.Error("empty registry revision")
	}
	// Deterministic across values and binding order.
	x := ResourceDefinition{URI: "z://1", Name: "z"}
	if rev(base, x) != rev(x, base) {
		t.Error("binding order changed the revision")
	}
}

func TestCursorOptions(t *testing.T) {
	var calls listCalls
	bs := []ResourceBinding{calls.binding(ResourceDefinition{URI: "a://1", Name: "a"})}
	pol := calls.policy(listAllowAll)
	for _, tc := range []struct {
		name  string
		opt   Option
		field string
	}{
		{"nil key", WithCursorKey(nil), "WithCursorKey"},
		{"short key", WithCursorKey(make([]byte, 31)), "WithCursorKey"},
		{"nil clock", WithClock(nil), "WithClock"},
	} {
		_, err := NewResources(bs, pol, tc.opt)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field || ce.Definition != -1 {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// The first error wins over later options.
	_, err := NewResources(bs, pol, WithClock(nil), WithCursorKey(nil))
	if ce := (*ConfigError)(nil); !errors.As(err, &ce) || ce.Field != "WithClock" {
		t.Errorf("two bad options: %v", err)
	}
}
