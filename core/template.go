package core

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Reasons a URI template is rejected (ConfigError.Reason, Path.Field
// "URITemplate"). Each names the unsupported form.
const (
	tmplUnclosed       = "template has a '{' without a closing '}'"
	tmplStrayClose     = "template has a '}' without an opening '{'"
	tmplEmptyVar       = "template variable {} has no name"
	tmplOperator       = "template operators ({+x} {#x} {/x} {.x} {;x} {?x} {&x}) are unsupported"
	tmplReservedOp     = "template reserved operators ({=x} {,x} {!x} {@x} {|x}) are unsupported"
	tmplList           = "template variable lists ({a,b}) are unsupported"
	tmplExplode        = "template explode modifiers ({x*}) are unsupported"
	tmplPrefix         = "template prefix modifiers ({x:3}) are unsupported"
	tmplBadName        = "template variable names must match [A-Za-z_][A-Za-z0-9_]*"
	tmplInScheme       = "template variables in the scheme are unsupported"
	tmplInAuthority    = "template variables in the authority are unsupported"
	tmplInQuery        = "template variables in the query are unsupported"
	tmplInFragment     = "template variables in the fragment are unsupported"
	tmplPartialSegment = "template variables must be a whole path segment ({id}, not x{id} or {id}.png)"
	tmplRepeatedName   = "template variable name is repeated"
)

// template is a parsed URI template: an origin (scheme and authority,
// matched literally), path segments that are literal or a whole variable,
// and a literal suffix (query and fragment).
type template struct {
	raw    string
	origin string
	segs   []tmplSeg
	suffix string
	def    *definition
}

// tmplSeg is one path segment: a literal, or a variable when name != "".
type tmplSeg struct {
	lit  string
	name string
}

// templateError is a rejected template; the reason is one of the tmpl*
// constants, or a *uriError's text.
type templateError struct {
	reason string
	uri    error
}

func (e *templateError) Error() string { return e.reason }
func (e *templateError) Unwrap() error { return e.uri }

// parseTemplate parses and validates a URI template: an absolute URI whose
// path segments are each literal or exactly one {name}, with names matching
// [A-Za-z_][A-Za-z0-9_]* and not repeated; variables in the scheme,
// authority, query or fragment, operators, explode and prefix modifiers,
// lists and partial segments are rejected. Its literal parts must also form
// a valid URI of at most maxBytes bytes.
func parseTemplate(raw string, maxBytes int) (*template, error) {
	fail := func(reason string) (*template, error) { return nil, &templateError{reason: reason} }
	if len(raw) > maxBytes {
		err := uriErr(uriReasonTooLong, -1)
		return nil, &templateError{reason: err.Error(), uri: err}
	}

	// Find the expressions first, and mask them so that a ':' or '?'
	// inside braces does not move the scheme, path or query boundaries.
	type expr struct{ lo, hi int } // raw[lo:hi] is "{...}"
	var exprs []expr
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '}':
			return fail(tmplStrayClose)
		case '{':
			j := strings.IndexByte(raw[i+1:], '}')
			if j < 0 {
				return fail(tmplUnclosed)
			}
			if r := checkVarName(raw[i+1 : i+1+j]); r != "" {
				return fail(r)
			}
			exprs = append(exprs, expr{i, i + 2 + j})
			i += 1 + j
		}
	}
	masked := raw
	if len(exprs) > 0 {
		b := []byte(raw)
		for _, e := range exprs {
			for k := e.lo; k < e.hi; k++ {
				b[k] = 'v'
			}
		}
		masked = string(b)
	}

	// Locate every expression against the masked structure.
	n := schemeLen(masked)
	if n == 0 {
		// No scheme even with the variables masked: the raw template has
		// none either.
		err := checkURI(raw, maxBytes)
		if err == nil {
			err = uriErr(uriReasonNotAbsolute, -1)
		}
		return nil, &templateError{reason: err.Error(), uri: err}
	}
	pathLo := n + 1
	if _, hi, ok := authority(masked, n); ok {
		pathLo = hi
	}
	pathHi := pathLo
	for pathHi < len(masked) && masked[pathHi] != '?' && masked[pathHi] != '#' {
		pathHi++
	}
	fragLo := strings.IndexByte(masked[pathHi:], '#')
	if fragLo >= 0 {
		fragLo += pathHi
	} else {
		fragLo = len(masked)
	}
	for _, e := range exprs {
		switch {
		case e.lo < n:
			return fail(tmplInScheme)
		case e.lo < pathLo:
			return fail(tmplInAuthority)
		case e.lo >= fragLo:
			return fail(tmplInFragment)
		case e.lo >= pathHi:
			return fail(tmplInQuery)
		}
		// A variable must be the whole segment: '/' or the path bounds on
		// both sides.
		if (e.lo != pathLo && raw[e.lo-1] != '/') || (e.hi != pathHi && raw[e.hi] != '/') {
			return fail(tmplPartialSegment)
		}
	}
	if err := checkURI(raw, maxBytes); err != nil {
		return nil, &templateError{reason: err.Error(), uri: err}
	}

	t := &template{raw: raw, origin: raw[:pathLo], suffix: raw[pathHi:]}
	path := raw[pathLo:pathHi]
	t.segs = make([]tmplSeg, 0, strings.Count(path, "/")+1)
	names := make(map[string]struct{}, len(exprs))
	for seg := range strings.SplitSeq(path, "/") {
		if len(seg) > 2 && seg[0] == '{' {
			name := seg[1 : len(seg)-1]
			if _, dup := names[name]; dup {
				return fail(tmplRepeatedName)
			}
			names[name] = struct{}{}
			t.segs = append(t.segs, tmplSeg{name: name})
			continue
		}
		t.segs = append(t.segs, tmplSeg{lit: seg})
	}
	return t, nil
}

// checkVarName classifies the text between braces and returns a rejection
// reason, or "" for a plain variable name.
func checkVarName(v string) string {
	switch {
	case v == "":
		return tmplEmptyVar
	case strings.IndexByte("+#./;?&", v[0]) >= 0:
		return tmplOperator
	case strings.IndexByte("=,!@|", v[0]) >= 0:
		return tmplReservedOp
	case strings.IndexByte(v, ',') >= 0:
		return tmplList
	case strings.HasSuffix(v, "*"):
		return tmplExplode
	case strings.IndexByte(v, ':') >= 0:
		return tmplPrefix
	}
	if !isAlpha(v[0]) && v[0] != '_' {
		return tmplBadName
	}
	for i := 1; i < len(v); i++ {
		if c := v[i]; !isAlpha(c) && !isDigit(c) && c != '_' {
			return tmplBadName
		}
	}
	return ""
}

// captureReason says which capture rule a captureError broke.
type captureReason uint8

// The capture rules: a template variable matches one non-empty path segment,
// which is percent-decoded once; the result must be valid UTF-8, must not
// contain '/', '\' or NUL, and must not be "." or "..". The zero value is
// not a valid reason.
const (
	// captureInvalidUTF8: the decoded capture is not valid UTF-8 (this
	// includes overlong encodings such as %C0%AE).
	captureInvalidUTF8 captureReason = iota + 1
	// captureSlash: the decoded capture contains '/'.
	captureSlash
	// captureBackslash: the decoded capture contains '\'.
	captureBackslash
	// captureNUL: the decoded capture contains a NUL byte.
	captureNUL
	// captureDotSegment: the decoded capture is "." or "..".
	captureDotSegment
)

var captureReasonText = [...]string{
	captureInvalidUTF8: "is not valid UTF-8 after decoding",
	captureSlash:       "contains '/' after decoding",
	captureBackslash:   "contains '\\' after decoding",
	captureNUL:         "contains NUL after decoding",
	captureDotSegment:  "is a dot segment ('.' or '..') after decoding",
}

// String describes the rule.
func (r captureReason) String() string {
	return enumText(captureReasonText[:], r, "captureReason")
}

// captureError is the private cause of a [FailureInvalidRequest] whose request
// matched a template but whose capture breaks the capture rules. It names
// the template variable, never the captured value.
type captureError struct {
	// Variable is the template variable's name.
	Variable string
	// Reason is the rule that was broken.
	Reason captureReason
}

// Error describes the broken rule.
func (e *captureError) Error() string {
	return fmt.Sprintf("capture of {%s} %s", e.Variable, e.Reason)
}

// decodeCapture percent-decodes seg (which passed checkURI, so every '%'
// has two hex digits) exactly once and applies the capture rules.
func decodeCapture(seg string) (string, captureReason) {
	v := seg
	if strings.IndexByte(seg, '%') >= 0 {
		b := make([]byte, 0, len(seg))
		for i := 0; i < len(seg); i++ {
			if seg[i] == '%' {
				b = append(b, unhex(seg[i+1])<<4|unhex(seg[i+2]))
				i += 2
				continue
			}
			b = append(b, seg[i])
		}
		v = string(b)
	}
	return v, checkCapture(v)
}

// checkCapture applies the capture rules to a decoded value and returns the
// first broken one, or 0.
func checkCapture(v string) captureReason {
	switch {
	case !utf8.ValidString(v):
		return captureInvalidUTF8
	case v == "." || v == "..":
		return captureDotSegment
	}
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '/':
			return captureSlash
		case '\\':
			return captureBackslash
		case 0:
			return captureNUL
		}
	}
	return 0
}

// TemplateVariables returns the variable names of a URI template in the
// order they appear, after checking the template as [NewResources] does
// (whole path segments only, valid and distinct names). Store authors use
// it to bind a template's captures to their own parameters.
func TemplateVariables(uriTemplate string) ([]string, error) {
	t, err := parseTemplate(uriTemplate, maxURIHardLimit)
	if err != nil {
		return nil, fmt.Errorf("core: URI template: %w", err)
	}
	return t.vars(), nil
}

// vars returns the template's variable names in the order they appear.
func (t *template) vars() []string {
	var names []string
	for _, s := range t.segs {
		if s.name != "" {
			names = append(names, s.name)
		}
	}
	return names
}
