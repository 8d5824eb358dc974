package s3store

import (
	"errors"
	"slices"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
)

// TestBindingRefusesConfigurationThatCouldNotFormAKey proves a binding
// needs a template with a variable and a prefix that is empty or ends with
// '/', with a typed error otherwise.
func TestBindingRefusesConfigurationThatCouldNotFormAKey(t *testing.T) {
	c, err := NewClient(t.Context(), ClientConfig{Endpoint: "http://127.0.0.1:1", AccessKeyID: "a", SecretAccessKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenBucket(t.Context(), c, "assets", nil)
	if err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		def    core.ResourceDefinition
		prefix string
	}{
		{core.ResourceDefinition{URI: "asset://docs/one", Name: "x"}, ""},
		{core.ResourceDefinition{URITemplate: "asset://docs/fixed", Name: "x"}, ""},
		{core.ResourceDefinition{URITemplate: "asset://docs/{id}", Name: "x"}, "docs"},
		{core.ResourceDefinition{URITemplate: "asset://docs/{id}", Name: "x"}, "../docs/"},
		{core.ResourceDefinition{URITemplate: "asset://docs/{id}", Name: "x"}, "/docs/"},
	}
	for _, tt := range bad {
		var ce *core.ConfigError
		if _, err := b.Binding(tt.def, tt.prefix); !errors.As(err, &ce) {
			t.Errorf("Binding(%+v, %q) = %v, want *core.ConfigError", tt.def, tt.prefix, err)
		}
	}
	for _, prefix := range []string{"", "docs/", "a b/ü/"} {
		if _, err := b.Binding(core.ResourceDefinition{URITemplate: "asset://docs/{id}", Name: "x"}, prefix); err != nil {
			t.Errorf("Binding with prefix %q: %v", prefix, err)
		}
	}
	if got, err := core.TemplateVariables("asset://p/{project}/x/{file}?q=1"); err != nil || !slices.Equal(got, []string{"project", "file"}) {
		t.Errorf("TemplateVariables = %q, %v", got, err)
	}
}

// TestOpenBucketRefusesInvalidNamesAndOptions proves configuration errors
// are typed, and a nil client is a programming error.
func TestOpenBucketRefusesInvalidNamesAndOptions(t *testing.T) {
	c, _ := NewClient(t.Context(), ClientConfig{Endpoint: "http://127.0.0.1:1", AccessKeyID: "a", SecretAccessKey: "s"})
	for _, name := range []string{"", "ab", "Assets", "-assets", "assets-", "as/sets", "assets..x/"} {
		var ce *core.ConfigError
		if _, err := OpenBucket(t.Context(), c, name, nil); !errors.As(err, &ce) {
			t.Errorf("OpenBucket(%q) = %v, want *core.ConfigError", name, err)
		}
	}
	var ce *core.ConfigError
	if _, err := OpenBucket(t.Context(), c, "assets", &Options{MaxListKeys: -1}); !errors.As(err, &ce) {
		t.Errorf("negative MaxListKeys: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("OpenBucket with a nil client did not panic")
		}
	}()
	OpenBucket(t.Context(), nil, "assets", nil)
}
