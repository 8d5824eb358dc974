package core

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

// CompletionRequest asks a binding's [ResourceBinding].Complete for values
// of one template variable.
type CompletionRequest struct {
	// Definition is the template definition being completed.
	Definition ResourceDefinition
	// Variable is the name of the variable to complete.
	Variable string
	// Prefix is what the caller typed so far: a literal prefix, never a
	// pattern. Compare it with a bind argument and no LIKE metacharacters
	// (or escape them).
	Prefix string
	// Arguments are values the caller already chose for other variables of
	// the template, decoded and checked like captures; unknown names and
	// invalid values are left out.
	Arguments map[string]string
	// Limit is the most values to return (at most 100, as MCP
	// allows in one completion/complete result).
	Limit int
}

// Completion is the answer to a CompletionRequest.
type Completion struct {
	// Values are decoded variable values that match the prefix (start with
	// it, or name something that does, such as an asset id whose name
	// starts with it), at most Limit of them, each a value the caller may
	// discover.
	Values []string
	// Total is how many values match in all, when known; 0 means unknown.
	Total int
	// HasMore says that more values match than Values holds.
	HasMore bool
}

// Complete returns values for variable of the registered template tmpl
// (its URITemplate, byte for byte) that match prefix, for the caller
// that ctx identifies. args holds values already chosen for other
// variables.
//
// An unknown template or variable, a definition the caller may not
// discover, a binding without [ResourceBinding].Complete, and a prefix that is not
// valid UTF-8, holds NUL (no capture can) or is longer than MaxURIBytes all
// give an empty completion
// and no error, so completion reveals nothing that listing would not. The
// gateway caps the answer at 100 values (what MCP allows in one result), drops values that could
// never be captured (invalid UTF-8, '/', '\', NUL, "." or "..") and, when
// args complete the URI, values whose URI would select another definition. Errors are *[Failure] values:
// FailurePolicy for a failing discovery check or completion
// (FailureOutage when its error is a [FailureOutage] one), FailureCanceled
// and FailureTimeout for the end of the request.
func (r *Resources) Complete(ctx context.Context, tmpl, variable, prefix string, args map[string]string) (Completion, error) {
	return scoped(ctx, r.limits.ReadTimeout, func(ctx context.Context) (Completion, error) {
		return r.complete(ctx, tmpl, variable, prefix, args)
	})
}

func (r *Resources) complete(ctx context.Context, tmpl, variable, prefix string, args map[string]string) (Completion, error) {
	empty := Completion{Values: []string{}}
	if len(prefix) > r.limits.MaxURIBytes || !utf8.ValidString(prefix) || strings.IndexByte(prefix, 0) >= 0 {
		return empty, nil
	}
	var def *definition
	var t *template
	var vars []string
	for _, tt := range r.sel.templates {
		if tt.raw == tmpl {
			def, t, vars = tt.def, tt, tt.vars()
			break
		}
	}
	if def == nil || !slices.Contains(vars, variable) {
		return empty, nil
	}
	comp := def.complete
	if comp == nil {
		return empty, nil
	}
	if err := r.discover(ctx, def); err != nil {
		if KindOf(err) == FailureUnavailable {
			return empty, nil
		}
		return empty, err
	}
	known := map[string]string{}
	for name, v := range args {
		if name != variable && slices.Contains(vars, name) && v != "" && len(v) <= r.limits.MaxURIBytes && checkCapture(v) == 0 {
			known[name] = v
		}
	}
	var c Completion
	err := guard(ctx, func() (err error) {
		c, err = comp(ctx, CompletionRequest{Definition: def.description(), Variable: variable,
			Prefix: prefix, Arguments: known, Limit: wire.MaxCompletionValues})
		return err
	})
	switch {
	case err != nil && isUnavailable(err):
		return empty, nil
	case errors.Is(err, errScopeEnded):
		return empty, err
	case err != nil:
		return empty, callbackFailure(FailurePolicy, err)
	}
	out := Completion{Values: make([]string, 0, min(len(c.Values), wire.MaxCompletionValues)), Total: c.Total, HasMore: c.HasMore}
	dropped := 0
	for _, v := range c.Values {
		if !r.completes(t, def, variable, v, known) {
			dropped++
			continue
		}
		if len(out.Values) == wire.MaxCompletionValues {
			out.HasMore = true
			continue
		}
		out.Values = append(out.Values, v)
	}
	if out.Total > 0 {
		out.Total = max(out.Total-dropped, len(out.Values))
	}
	if out.Total > len(out.Values) {
		out.HasMore = true
	}
	return out, nil
}

// completes reports whether v may be offered for variable: a valid capture
// that, when known fills every other variable, makes a URI that selects
// def.
func (r *Resources) completes(t *template, def *definition, variable, v string, known map[string]string) bool {
	if v == "" || checkCapture(v) != 0 {
		return false
	}
	vals := maps.Clone(known)
	vals[variable] = v
	uri, ok := t.expand(vals)
	if !ok {
		return true // the URI is not complete yet: nothing more to check
	}
	m, err := r.sel.match(uri)
	return err == nil && m.def == def
}

// expand builds the URI that vals fill in, percent-encoding each value as
// one path segment; ok is false when a variable has no value.
func (t *template) expand(vals map[string]string) (string, bool) {
	var b strings.Builder
	b.WriteString(t.origin)
	for i, s := range t.segs {
		if i > 0 {
			b.WriteByte('/')
		}
		if s.name == "" {
			b.WriteString(s.lit)
			continue
		}
		v, ok := vals[s.name]
		if !ok {
			return "", false
		}
		b.WriteString(escapeSegment(v))
	}
	b.WriteString(t.suffix)
	return b.String(), true
}

// escapeSegment percent-encodes everything but RFC 3986 unreserved
// characters, so the value decodes back to itself as one capture.
func escapeSegment(v string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if isAlpha(c) || isDigit(c) || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
