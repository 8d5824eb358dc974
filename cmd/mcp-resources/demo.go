package main

import (
	"context"
	"errors"
	"fmt"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/memory"
)

// The embedded demo: an in-memory catalogue that shows every feature at
// once to the default principal. Another principal ("guest" in the README's
// tokens example) sees only the readme, so two callers see different lists
// of what they may read.
const (
	demoReadme = "demo://readme"
	demoLogo   = "demo://logo.png"
	demoEmpty  = "demo://empty"
	demoBundle = "demo://bundle/welcome"
	demoNotes  = "demo://notes/{id}"

	guestPrincipal = "guest"
)

// demoPNG is a 1x1 transparent PNG: a real image for the blob item.
var demoPNG = []byte{
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
	0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
	0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
	0x42, 0x60, 0x82,
}

const demoReadmeText = `# mcp-resources demo

This server runs on the embedded in-memory store. Try:

- resources/list and resources/templates/list
- resources/read demo://logo.png (a blob) and demo://empty (empty text)
- resources/read demo://notes/1 (a template with a capture)
- resources/read demo://bundle/welcome: a bundle in which one item is hidden
  from you and one is visible but revoked, so the result is partial and
  starts with a warning item whose report is also in the result's _meta.
`

var demoNoteTexts = map[string]string{
	"1": "Notes are served by a template: demo://notes/{id}.",
	"2": "A capture is decoded once; demo://notes/%2e%2e is refused, not a path.",
	"3": "Every read is authorized before and after its body reads.",
}

// newDemo builds the demo store and its bindings; principal is who the
// server serves when no tokens file names the caller. Serving guest itself
// (--principal guest) shows what guest sees: the readme only.
func newDemo(principal string) (*memory.Store, []core.ResourceBinding, error) {
	st := memory.New(nil)
	full := func(a memory.Access) map[string]memory.Access {
		if principal == guestPrincipal {
			return map[string]memory.Access{}
		}
		return map[string]memory.Access{principal: a}
	}
	type item struct {
		key    string
		it     memory.Item
		grants map[string]memory.Access
	}
	read := memory.Access{Read: true, DiscloseURI: true}
	items := []item{
		{"readme", memory.Item{MIMEType: "text/markdown", Text: true, Body: []byte(demoReadmeText)},
			map[string]memory.Access{principal: read, guestPrincipal: read}},
		{"logo.png", memory.Item{MIMEType: "image/png", Body: demoPNG}, full(read)},
		{"empty", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte{}}, full(read)},
		// Visible to the default principal, but its read grant is revoked.
		{"revoked", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("you should not see this")},
			full(memory.Access{DiscloseURI: true})},
		// Not granted to the default principal at all: hidden.
		{"hidden", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("nor this")}, map[string]memory.Access{}},
	}
	for id, text := range demoNoteTexts {
		items = append(items, item{"note/" + id, memory.Item{MIMEType: "text/plain", Text: true, Body: []byte(text)},
			full(read)})
	}
	for _, x := range items {
		if _, err := st.Put(x.key, x.it); err != nil {
			return nil, nil, fmt.Errorf("demo item %s: %w", x.key, err)
		}
		for p, a := range x.grants {
			st.Grant(x.key, p, a)
		}
	}

	one := func(uri, key string) func(core.ResourceMatch) ([]memory.Ref, error) {
		return func(core.ResourceMatch) ([]memory.Ref, error) { return []memory.Ref{{URI: uri, Key: key}}, nil }
	}
	bindings := []core.ResourceBinding{
		st.Binding(core.ResourceDefinition{URI: demoReadme, Name: "readme", Title: "Read me first",
			Description: "What this demo shows and how to try it.", MIMEType: "text/markdown"}, one(demoReadme, "readme")),
		st.Binding(core.ResourceDefinition{URI: demoLogo, Name: "logo", Title: "Logo",
			Description: "A binary item: a 1x1 PNG, served as a base64 blob.", MIMEType: "image/png"}, one(demoLogo, "logo.png")),
		st.Binding(core.ResourceDefinition{URI: demoEmpty, Name: "empty", Title: "Empty",
			Description: "An explicit empty text item.", MIMEType: "text/plain"}, one(demoEmpty, "empty")),
		st.KeyBinding(core.ResourceDefinition{URITemplate: demoNotes, Name: "note", Title: "Note",
			Description: "Notes 1 to 3, selected by a template capture; completion offers their ids.", MIMEType: "text/plain"},
			"id", "note/"),
		st.Binding(core.ResourceDefinition{URI: demoBundle, Name: "welcome", Title: "Welcome bundle",
			Description: "A bundle with one hidden and one revoked item: the result is partial and starts with a warning."},
			func(core.ResourceMatch) ([]memory.Ref, error) {
				return []memory.Ref{
					{URI: demoReadme, Key: "readme"},
					{URI: demoLogo, Key: "logo.png"},
					{URI: "demo://revoked", Key: "revoked"},
					{URI: "demo://hidden", Key: "hidden"},
					{URI: "demo://notes/1", Key: "note/1"},
				}, nil
			}),
	}
	return st, bindings, nil
}

// demoPolicy is the store's policy, except that guest discovers only the
// readme: guest's list holds what guest may read, not every definition.
func demoPolicy(st *memory.Store) core.ResourcePolicy {
	p := st.Policy()
	discover := p.Discover
	p.Discover = func(ctx context.Context, d core.ResourceDefinition) error {
		if err := discover(ctx, d); err != nil {
			return err
		}
		if who, _ := core.CallerFrom(ctx); who.Principal == guestPrincipal && d.URI != demoReadme {
			return core.NewFailure(core.FailureUnavailable, errors.New("demo: guest discovers only the readme"))
		}
		return nil
	}
	return p
}
