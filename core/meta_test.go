package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// Definition metadata is listed byte for byte, so what NewResources accepts
// is what goes on the wire: it must be valid UTF-8 everywhere (keys, values,
// nested values), and its escapes must denote Unicode text (I-JSON, RFC
// 7493: no unpaired surrogate).
func TestDefinitionMetaMustBeValidUTF8AndIJSON(t *testing.T) {
	g := newRig(t)
	build := func(meta string) (*Resources, error) {
		b := g.binding()
		b.Definition.Meta = json.RawMessage(meta)
		return NewResources([]ResourceBinding{b}, g.policy())
	}
	for _, c := range []struct{ name, meta string }{
		{"invalid byte in a value", `{"a":"` + "\xff" + `"}`},
		{"invalid byte in a key", `{"` + "\xff" + `":1}`},
		{"overlong encoding, nested", `{"a":{"b":["x","` + "\xc0\xae" + `"]}}`},
		{"a surrogate encoded as UTF-8", `{"a":"` + "\xed\xa0\x80" + `"}`},
		{"lone high surrogate escape", `{"a":"\ud800"}`},
		{"lone low surrogate escape", `{"a":"\udc00"}`},
		{"high surrogate not followed by a low one", `{"a":"\ud800\u0041"}`},
		{"high surrogate followed by another escape", `{"a":"\ud800\n"}`},
		{"in a nested key, upper-case hex", `{"a":{"\uDBFF":true}}`},
		{"a pair, then a stray low surrogate", `{"a":"\ud83d\ude00\ude00"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			meta := c.meta
			_, err := build(meta)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Path.Field != "Meta" || ce.Definition != 0 {
				t.Fatalf("metadata %q: got %v; want a *ConfigError on field Meta of binding 0", meta, err)
			}
		})
	}
	for _, c := range []struct{ name, meta string }{
		{"an escape of a valid character", `{"a":"\u00ff"}`},
		{"raw UTF-8 in keys and values", `{"a":"ÿ","ÿ":["é"]}`},
		{"a surrogate pair", `{"a":"\ud83d\ude00"}`},
		{"an escaped backslash, then plain text", `{"a":"\\ud800"}`},
		{"an escaped backslash, then a pair", `{"a":"\\\ud83d\ude00"}`},
		{"the replacement character and NUL are text", `{"a":"\uFFFD","b":"\u0000"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			meta := c.meta
			r, err := build(meta)
			if err != nil {
				t.Fatalf("valid metadata %q rejected: %v", meta, err)
			}
			p, err := r.List(context.Background(), ListRequest{ScopeKey: listScope})
			if err != nil || len(p.Descriptions) != 1 {
				t.Fatalf("list: %+v, %v", p, err)
			}
			var want bytes.Buffer
			_ = json.Compact(&want, []byte(meta))
			if got := p.Descriptions[0].Meta; !bytes.Equal(got, want.Bytes()) || !utf8.Valid(got) {
				t.Fatalf("listed metadata %q; want %q", got, want.Bytes())
			}
		})
	}
}
