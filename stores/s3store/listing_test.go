package s3store

import (
	"context"
	"strings"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
)

// TestKeyContentTypeIsTheDeclaredTypeElseTheExtension: the one MIME rule
// of a TypeByKey bucket's reads and listings.
func TestKeyContentTypeIsTheDeclaredTypeElseTheExtension(t *testing.T) {
	for _, c := range []struct{ key, declared, want string }{
		{"a/q3.pdf", "", "application/pdf"},
		{"a/notes.md", "", "text/markdown; charset=utf-8"},
		{"a/notes.md", "text/x-custom", "text/x-custom"},
		{"a/notes.md", "application/octet-stream", "application/octet-stream"},
		{"a/notes.md", "not a type", "text/markdown; charset=utf-8"},
		{"a/NOTES.TXT", "", "text/plain; charset=utf-8"},
		{"a/noext", "", "application/octet-stream"},
	} {
		if got := keyContentType(c.key, c.declared); got != c.want {
			t.Errorf("keyContentType(%q, %q) = %q, want %q", c.key, c.declared, got, c.want)
		}
	}
}

func listingBucket(t *testing.T, typeByKey bool) *Bucket {
	t.Helper()
	c, err := NewClient(t.Context(), ClientConfig{Endpoint: "http://127.0.0.1:1", AccessKeyID: "a", SecretAccessKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenBucket(t.Context(), c, "assets", &Options{TypeByKey: typeByKey})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestListingBindingRefusesWhatCouldDisagreeOrLeak: a listing needs a
// TypeByKey bucket and a template with exactly the family's captures.
func TestListingBindingRefusesWhatCouldDisagreeOrLeak(t *testing.T) {
	fam := KeyFamily{Definition: core.ResourceDefinition{Name: "report"}, URI: "report://t/{tenant}/...", Prefix: "tenants/{tenant}/", MaxDepth: 2}
	l := KeyListing{Definition: core.ResourceDefinition{Name: "reports", URITemplate: "report://t/{tenant}"}, Family: fam}
	if _, err := listingBucket(t, true).ListingBinding(l); err != nil {
		t.Fatalf("a sound listing: %v", err)
	}
	for _, c := range []struct {
		name      string
		typeByKey bool
		tmpl      string
		want      string
	}{
		{"stored types", false, "report://t/{tenant}", "TypeByKey"},
		{"a capture short", true, "report://t/all", "exactly the family's captures"},
		{"another capture", true, "report://t/{org}", "exactly the family's captures"},
	} {
		l := l
		l.Definition.URITemplate = c.tmpl
		_, err := listingBucket(t, c.typeByKey).ListingBinding(l)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error about %s", c.name, err, c.want)
		}
	}
}

// TestListingAsksTheGrantAboutThePrefixBeforeAnyRequest: a refused
// listing is unavailable without reaching S3 (the bucket's endpoint
// answers nothing: a request would be an outage, not unavailable).
func TestListingAsksTheGrantAboutThePrefixBeforeAnyRequest(t *testing.T) {
	var asked []string
	fam := KeyFamily{Definition: core.ResourceDefinition{Name: "report"}, URI: "report://t/{tenant}/...", Prefix: "tenants/{tenant}/r/", MaxDepth: 2,
		Grant: func(_ context.Context, binding, key string, vars map[string]string) (bool, error) {
			asked = append(asked, binding+" "+key+" "+vars["tenant"])
			return false, nil
		}}
	b, err := listingBucket(t, true).ListingBinding(KeyListing{Definition: core.ResourceDefinition{Name: "reports", URITemplate: "report://t/{tenant}"}, Family: fam})
	if err != nil {
		t.Fatal(err)
	}
	res, err := core.NewResources([]core.ResourceBinding{b}, core.PerTarget(core.TargetPolicy{
		Discover: func(context.Context, core.ResourceDefinition) error { return nil },
		Visibility: func(context.Context, core.ResourceTarget) (core.Visibility, error) {
			return core.Visibility{Visible: true}, nil
		},
		Read: func(context.Context, core.ResourceTarget) error { return nil },
	}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = res.Read(core.WithCaller(t.Context(), core.Caller{Principal: "bob"}), "report://t/%61cme")
	if core.KindOf(err) != core.FailureUnavailable {
		t.Errorf("a refused listing: %v, want unavailable", err)
	}
	if len(asked) != 1 || asked[0] != "report tenants/acme/r/ acme" {
		t.Errorf("the grant was asked %q, want once about the decoded prefix under the family's name", asked)
	}
}
