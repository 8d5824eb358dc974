package core

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// Errors meant for the host developer (configuration, constructors,
// exported causes) name the package they come from with one prefix, core:,
// the package's name.
func TestDeveloperErrorsCarryTheCorePrefix(t *testing.T) {
	g := newRig(t)
	target, _ := NewResourceTarget("test://a", "item", nil)
	_, planErr := NewResourceReadPlan(ResourceTarget{})
	_, itemErr := NewResourceReadPlan(target, ResourceTarget{})
	_, dupErr := NewResourceReadPlan(target, target, target)
	_, uriErr := NewResourceTarget("no scheme", "item", nil)
	_, reprErr := NewResourceTarget("test://a", "", nil)
	_, authzErr := NewResourceTarget("test://a", "item", []byte("{"))
	_, authzBigErr := NewResourceTarget("test://a", "item", []byte(`"`+strings.Repeat("x", maxAuthorizationBytes)+`"`))
	_, limitErr := NewResources(nil, g.policy(), WithResourceLimits(ResourceLimits{MaxItems: -1}))
	bad := g.binding()
	bad.Definition.Name = ""
	_, bindingErr := NewResources([]ResourceBinding{bad}, g.policy())
	bad.Definition.URI = ""
	_, unnamedErr := NewResources([]ResourceBinding{bad}, g.policy())
	r := g.resources()
	_, scopeErr := r.List(context.Background(), ListRequest{})
	_, pageErr := r.List(context.Background(), ListRequest{ScopeKey: listScope, PageSize: -1})
	for name, err := range map[string]error{
		"errMissingScopeKey":           errMissingScopeKey,
		"errNoPrincipal":               errNoPrincipal,
		"plan with a zero requested":   planErr,
		"plan with a zero item":        itemErr,
		"plan repeating an item":       dupErr,
		"target URI":                   uriErr,
		"target representation":        reprErr,
		"target authorization JSON":    authzErr,
		"target authorization size":    authzBigErr,
		"ConfigError on a limit":       limitErr,
		"ConfigError on a binding":     bindingErr,
		"ConfigError, unnamed binding": unnamedErr,
		"missing ScopeKey cause":       errors.Unwrap(scopeErr),
		"negative PageSize cause":      errors.Unwrap(pageErr),
		"ConfigError without a field":  &ConfigError{Definition: -1, Reason: "r"},
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if !strings.HasPrefix(err.Error(), "core: ") {
			t.Errorf("%s: %q does not start with %q", name, err.Error(), "core: ")
		}
	}
}

// TestConfigErrorNamesTheDefinitionWithoutAnIndex proves a *ConfigError about
// no binding index (Definition -1, as [ConfigPath.Reject] builds it) still names
// the definition when a store sets Name, and that each shape of the message
// keeps what it was given.
func TestConfigErrorNamesTheDefinitionWithoutAnIndex(t *testing.T) {
	named := ConfigPath{Field: "URITemplate"}.Reject("needs a variable", nil)
	named.Name = "docs"
	nameOnly := ConfigPath{Field: ""}.Reject("is empty", nil)
	nameOnly.Name = "docs"
	for _, c := range []struct {
		err  *ConfigError
		want string
	}{
		{named, `core: "docs": URITemplate: needs a variable`},
		{nameOnly, `core: "docs": is empty`},
		{ConfigPath{Field: "db"}.Reject("is nil", nil), "core: db: is nil"},
		{ConfigPath{Field: ""}.Reject("r", nil), "core: r"},
		{&ConfigError{Definition: 2, Name: "docs", Path: ConfigPath{Field: "URI"}, Reason: "bad"}, `core: binding 2 ("docs"): URI: bad`},
		{&ConfigError{Definition: 0, Path: ConfigPath{Field: "URI"}, Reason: "bad"}, "core: binding 0: URI: bad"},
		// A store's path in words: statements by their kind, keys and columns.
		{ConfigPath{Source: "desk", Binding: "note", Field: "Plan"}.Reject("bad", nil), `core: source desk: binding "note": plan: bad`},
		{ConfigPath{Source: "desk", Binding: "note", Field: "Complete", Key: "id"}.Reject("bad", nil), `core: source desk: binding "note": complete "id": bad`},
		{ConfigPath{Source: "desk", Field: "Exempt", Key: "public.t"}.Reject("bad", nil), `core: source desk: Exempt[public.t]: bad`},
		{ConfigPath{Source: "desk", Binding: "note", Field: "ItemURI", Column: "slug"}.Reject("bad", nil), `core: source desk: binding "note": ItemURI: column slug: bad`},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
	}
	cause := errors.New("cause")
	if err := (ConfigPath{Field: "f"}).Reject("r", cause); !errors.Is(err, cause) || err.Definition != -1 {
		t.Errorf("Reject(…, cause) = %+v: want Definition -1 wrapping the cause", err)
	}
}
