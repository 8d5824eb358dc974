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
		"ErrNoPrincipal":               ErrNoPrincipal,
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
// no binding index (Definition -1, as [NewConfigError] builds it) still names
// the definition when a store sets Name, and that each shape of the message
// keeps what it was given.
func TestConfigErrorNamesTheDefinitionWithoutAnIndex(t *testing.T) {
	named := NewConfigError("URITemplate", "needs a variable", nil)
	named.Name = "docs"
	nameOnly := NewConfigError("", "is empty", nil)
	nameOnly.Name = "docs"
	for _, c := range []struct {
		err  *ConfigError
		want string
	}{
		{named, `core: "docs": URITemplate: needs a variable`},
		{nameOnly, `core: "docs": is empty`},
		{NewConfigError("db", "is nil", nil), "core: db: is nil"},
		{NewConfigError("", "r", nil), "core: r"},
		{&ConfigError{Definition: 2, Name: "docs", Field: "URI", Reason: "bad"}, `core: binding 2 ("docs"): URI: bad`},
		{&ConfigError{Definition: 0, Field: "URI", Reason: "bad"}, "core: binding 0: URI: bad"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
	}
	cause := errors.New("cause")
	if err := NewConfigError("f", "r", cause); !errors.Is(err, cause) || err.Definition != -1 {
		t.Errorf("NewConfigError(…, cause) = %+v: want Definition -1 wrapping the cause", err)
	}
}
