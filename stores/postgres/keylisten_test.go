package postgres

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/core"
)

// TestKeyPayloadsReachExactlyTheItemsTheyName: a key payload changes the
// item with that key and the channel's bundles; PREFIX/* every item under
// the prefix; * every item; and nothing reaches another key, another
// prefix or another channel.
func TestKeyPayloadsReachExactlyTheItemsTheyName(t *testing.T) {
	hits := func(channel, payload, itemChannel, key string) bool {
		deps := itemKeys(itemChannel, key)
		for _, k := range payloadKeys(channel, payload) {
			if slices.Contains(deps, k) {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		payload, key string
		want         bool
	}{
		{"p1/a1", "p1/a1", true},
		{"p1/a1", "p1/a2", false},
		{"p1/*", "p1/a1", true},
		{"p1/*", "p10/a1", false},
		{"p1/*", "p1", false},
		{"*", "anything", true},
		{"", "anything", true},
		{"projects", "projects", true},
		{"projects", "p1/a1", false},
		{"a/b/*", "a/b/c/d", true},
		{"a/b/*", "a/bc", false},
	} {
		if got := hits("ch", c.payload, "ch", c.key); got != c.want {
			t.Errorf("payload %q, item key %q: changed %v, want %v", c.payload, c.key, got, c.want)
		}
	}
	if hits("other", "p1/a1", "ch", "p1/a1") || hits("other", "*", "ch", "p1/a1") {
		t.Error("a payload on another channel changed the item")
	}
	bundle := "ch" + keySep + keyAnyItem
	for _, p := range []string{"p1/a1", "p1/*", "*"} {
		if !slices.Contains(payloadKeys("ch", p), bundle) {
			t.Errorf("payload %q does not change the channel's bundles", p)
		}
	}
}

// TestSourceListenerGivesEachTargetItsBindingsChannelKeys: the listener of
// a source LISTENs on the channels its bindings name and gives a row its
// key on its binding's channel, a bundle the channel's any-item key, and
// nothing to a binding without a channel or a target of another source.
func TestSourceListenerGivesEachTargetItsBindingsChannelKeys(t *testing.T) {
	src, err := NewSource(&countingDB{}, SourceOptions{Name: "docs", Role: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Listener(&pgx.ConnConfig{}, nil); err == nil || !strings.Contains(err.Error(), "no binding names a channel") {
		t.Fatalf("a listener without channels: %v", err)
	}
	for _, b := range []SQLBinding{
		{Definition: core.ResourceDefinition{URITemplate: "doc://d/{id}", Name: "doc"}, Listen: "docs_keys",
			Plan: `SELECT 1 AS key, 1 AS version, 'text/plain' AS mime WHERE $id = ''`, Body: `SELECT 'b' AS body WHERE $key = '' AND $version = ''`},
		{Definition: core.ResourceDefinition{URI: "doc://all", Name: "all"}, Listen: "docs_keys", ItemURI: "doc://d/{key}",
			Bundle: `SELECT 1 AS key, 1 AS version, 'text/plain' AS mime`, Body: `SELECT 'b' AS body WHERE $key = '' AND $version = ''`},
		{Definition: core.ResourceDefinition{URITemplate: "note://n/{id}", Name: "note"},
			Plan: `SELECT 1 AS key, 1 AS version, 'text/plain' AS mime WHERE $id = ''`, Body: `SELECT 'b' AS body WHERE $key = '' AND $version = ''`},
	} {
		if _, err := src.Binding(b); err != nil {
			t.Fatal(err)
		}
	}
	l, err := src.Listener(&pgx.ConnConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.channels, []string{"docs_keys"}) {
		t.Fatalf("channels %v", l.channels)
	}
	target := func(r sqlRef) core.ResourceTarget {
		authz, _ := json.Marshal(r)
		tg, err := core.NewResourceTarget("doc://x", ReprRow, authz)
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	if got := l.ChangeKeys(target(sqlRef{Kind: refRow, Source: "docs", Binding: "doc", Key: "k1"})); !slices.Equal(got, itemKeys("docs_keys", "k1")) {
		t.Errorf("a row's keys: %q", got)
	}
	if got := l.ChangeKeys(target(sqlRef{Kind: refBundle, Source: "docs", Binding: "all"})); !slices.Equal(got, []string{"docs_keys" + keySep + keyAnyItem}) {
		t.Errorf("a bundle's keys: %q", got)
	}
	for _, r := range []sqlRef{{Kind: refRow, Source: "docs", Binding: "note", Key: "k1"}, {Kind: refRow, Source: "other", Binding: "doc", Key: "k1"}} {
		if got := l.ChangeKeys(target(r)); got != nil {
			t.Errorf("%+v: keys %q, want none", r, got)
		}
	}
}

// TestBindingRefusesMisusedPlanOptions: Anchored is for bundles, a plan
// without body (its row's object alone) needs an object source and no
// ObjectURI, and Listen takes a plain channel name; each is one
// ConfigError naming the field.
func TestBindingRefusesMisusedPlanOptions(t *testing.T) {
	src, err := NewSource(&countingDB{}, SourceOptions{Name: "docs", Role: "r"})
	if err != nil {
		t.Fatal(err)
	}
	base := SQLBinding{Definition: core.ResourceDefinition{URITemplate: "doc://d/{id}", Name: "doc"},
		Plan: `SELECT 1 AS key, 1 AS version, 'text/plain' AS mime WHERE $id = ''`, Body: `SELECT 'b' AS body WHERE $key = ''`}
	for _, c := range []struct {
		field string
		edit  func(*SQLBinding)
	}{
		{"Anchored", func(b *SQLBinding) { b.Anchored = true }},
		{"body", func(b *SQLBinding) { b.Body = "" }},
		{"Listen", func(b *SQLBinding) { b.Listen = "Docs-Keys" }},
		{"Listen", func(b *SQLBinding) { b.Listen = strings.Repeat("k", 64) }},
	} {
		b := base
		c.edit(&b)
		_, err := src.Binding(b)
		var ce *core.ConfigError
		if !errors.As(err, &ce) || !strings.EqualFold(ce.Path.Field, c.field) {
			t.Errorf("%s: got %v, want a ConfigError naming %s", c.field, err, c.field)
		}
	}
	withObjects, err := NewSource(&countingDB{}, SourceOptions{Name: "docs", Role: "r", Objects: map[string]string{"s3": ""}})
	if err != nil {
		t.Fatal(err)
	}
	objectOnly := base
	objectOnly.Body, objectOnly.ObjectSource = "", "s3"
	if _, err := withObjects.Binding(objectOnly); err != nil {
		t.Errorf("a plan without body on a source with objects: %v", err)
	}
	objectOnly.ObjectURI = "doc://d/{key}/object"
	var ce *core.ConfigError
	if _, err := withObjects.Binding(objectOnly); !errors.As(err, &ce) || ce.Path.Field != "ObjectURI" {
		t.Errorf("a plan without body with an ObjectURI: got %v, want a ConfigError naming ObjectURI", err)
	}
}
