package core_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/storetest"
)

// CheckDefinitions reports what a gateway of the same definitions and
// limits would: its overlaps, and its first definition or limit error.
func TestCheckDefinitions(t *testing.T) {
	defs := []core.ResourceDefinition{
		{Name: "a", URITemplate: "a://x/{id}/y"},
		{Name: "b", URI: "a://x/1/z"},
		{Name: "c", URITemplate: "a://x/z/{k}"},
		{Name: "d", URITemplate: "a://x/{id}/w"},
	}
	got, err := core.CheckDefinitions(defs, core.ResourceLimits{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := core.NewResources(bindingsOf(defs), storetest.AllowAll())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := res.TemplateOverlaps()
	if len(want) != 2 || !reflect.DeepEqual(got, want) {
		t.Fatalf("CheckDefinitions overlaps = %+v, gateway's = %+v (want two, the same)", got, want)
	}
	if o := got[0]; o.FirstBinding != 0 || o.SecondBinding != 2 || o.Example != "a://x/z/y" {
		t.Fatalf("overlap = %+v, want bindings 0 and 2 on a://x/z/y", o)
	}

	for _, tc := range []struct {
		rule   string
		defs   []core.ResourceDefinition
		limits core.ResourceLimits
		index  int
		field  string
	}{
		{"a bad media type names its definition", []core.ResourceDefinition{defs[0], {Name: "m", URI: "a://m", MIMEType: "text"}}, core.ResourceLimits{}, 1, "MIMEType"},
		{"a URI registered twice names the second", []core.ResourceDefinition{defs[1], {Name: "e", URI: "a://x/1/z"}}, core.ResourceLimits{}, 1, "URI"},
		{"a bad template names its definition", []core.ResourceDefinition{{Name: "t", URITemplate: "a://x/{+path}"}}, core.ResourceLimits{}, 0, "URITemplate"},
		{"a URI over the limit names its definition", []core.ResourceDefinition{defs[0], {Name: "l", URI: "a://x/" + strings.Repeat("l", 64)}}, core.ResourceLimits{MaxURIBytes: 64}, 1, "URI"},
		{"a negative limit names no definition", defs, core.ResourceLimits{MaxItems: -1}, -1, "MaxItems"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			_, err := core.CheckDefinitions(tc.defs, tc.limits)
			var ce *core.ConfigError
			if !errors.As(err, &ce) || ce.Definition != tc.index || ce.Path.Field != tc.field {
				t.Fatalf("err = %#v, want a *ConfigError about definition %d, field %s", err, tc.index, tc.field)
			}
			_, gwErr := core.NewResources(bindingsOf(tc.defs), storetest.AllowAll(), core.WithResourceLimits(tc.limits))
			if gwErr == nil || gwErr.Error() != err.Error() {
				t.Fatalf("CheckDefinitions: %v; NewResources: %v (want the same)", err, gwErr)
			}
		})
	}
}

func bindingsOf(defs []core.ResourceDefinition) []core.ResourceBinding {
	stub := core.ResolverFunc(func(context.Context, core.ResourceMatch) (core.ResourceReadPlan, error) {
		return core.ResourceReadPlan{}, errors.New("not read")
	})
	reader := core.ItemReader(func(context.Context, core.ReadItem) (core.ResourcePayload, error) {
		return core.ResourcePayload{}, errors.New("not read")
	})
	out := make([]core.ResourceBinding, len(defs))
	for i, d := range defs {
		out[i] = core.ResourceBinding{Definition: d, Resolver: stub, Reader: reader}
	}
	return out
}
