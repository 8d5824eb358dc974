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
	_, authzBigErr := NewResourceTarget("test://a", "item", []byte(`"`+strings.Repeat("x", MaxAuthorizationBytes)+`"`))
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
		"ErrMissingScopeKey":           ErrMissingScopeKey,
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
