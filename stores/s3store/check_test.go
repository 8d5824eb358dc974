package s3store

import (
	"errors"
	"slices"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
)

// TestCheckBucketNameIsOpenBucketsRule proves the check a caller runs
// before it has a client refuses what OpenBucket refuses, two periods in a
// row included, at the path of the Bucket.
func TestCheckBucketNameIsOpenBucketsRule(t *testing.T) {
	for name, ok := range map[string]bool{"acme-docs": true, "a.b.c": true, "ab": false, "Acme": false, "a..b": false, "-ab": false} {
		err := CheckBucketName(name)
		ce, isCE := errors.AsType[*core.ConfigError](err)
		switch {
		case ok && err != nil:
			t.Errorf("%q: %v, want it accepted", name, err)
		case !ok && (!isCE || ce.Path != (core.ConfigPath{Field: "Bucket"})):
			t.Errorf("%q: %v, want a *core.ConfigError at the Bucket", name, err)
		}
		if _, err := OpenBucket(t.Context(), testBucket(t).client, name, nil); (err == nil) != ok {
			t.Errorf("OpenBucket(%q) = %v, but CheckBucketName says %v", name, err, ok)
		}
	}
}

// TestKeyFamilyTemplatesAndCapturesAreKeyBindings proves the templates
// and captures a family names before it has a bucket are those of its
// bindings and of the grant KeyBindings builds.
func TestKeyFamilyTemplatesAndCapturesAreKeyBindings(t *testing.T) {
	f := KeyFamily{Definition: core.ResourceDefinition{Name: "r"}, URI: "r://x/{tenant}/docs/...", Prefix: "t/{tenant}/", MaxDepth: 3}
	bs, err := testBucket(t).KeyBindings(f)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range bs {
		got = append(got, b.Definition.URITemplate)
	}
	if !slices.Equal(got, f.Templates()) {
		t.Errorf("KeyBindings registers %v, Templates says %v", got, f.Templates())
	}
	if want := []string{"tenant", "k1", "k2", "k3"}; !slices.Equal(f.Captures(), want) {
		t.Errorf("Captures = %v, want %v", f.Captures(), want)
	}
}
