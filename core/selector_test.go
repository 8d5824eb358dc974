package core

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// Helpers of the selector tests; named sel* to stay clear of other files'.

func selBinding(d ResourceDefinition) ResourceBinding {
	return ResourceBinding{
		Definition: d,
		Resolver: ResolverFunc(func(context.Context, ResourceMatch) (ResourceReadPlan, error) {
			return ResourceReadPlan{}, errors.New("not used")
		}),
		Reader: ItemReader(func(context.Context, ReadItem) (ResourcePayload, error) {
			return ResourcePayload{}, errors.New("not used")
		}),
	}
}

func selPolicy() ResourcePolicy {
	return PerTarget(TargetPolicy{
		Discover:   func(context.Context, ResourceDefinition) error { return nil },
		Visibility: func(context.Context, ResourceTarget) (Visibility, error) { return Visibility{Visible: true}, nil },
		Read:       func(context.Context, ResourceTarget) error { return nil },
	})
}

// selDefs builds definitions: an entry with a '{' or a "T " prefix is a
// template, anything else a concrete URI.
func selDefs(entries ...string) []*definition {
	defs := make([]*definition, len(entries))
	for i, e := range entries {
		d := ResourceDefinition{Name: fmt.Sprintf("d%d", i)}
		if t, ok := strings.CutPrefix(e, "T "); ok {
			d.URITemplate = t
		} else if strings.Contains(e, "{") {
			d.URITemplate = e
		} else {
			d.URI = e
		}
		defs[i] = &definition{index: i, desc: d}
	}
	return defs
}

func selMust(t testing.TB, entries ...string) *selector {
	t.Helper()
	s, err := newSelector(selDefs(entries...), 2048)
	if err != nil {
		t.Fatalf("newSelector: %v", err)
	}
	return s
}

// selOutcome is what one request is expected to produce.
type selOutcome struct {
	kind FailureKind   // 0: selected
	uri  uriReason     // for FailureInvalidRequest from checkURI
	cap  captureReason // for FailureInvalidRequest from a capture
	def  int           // selected binding index
	vars map[string]string
}

func ok(def int, kv ...string) selOutcome {
	o := selOutcome{def: def, vars: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		o.vars[kv[i]] = kv[i+1]
	}
	return o
}

func badURI(r uriReason) selOutcome         { return selOutcome{kind: FailureInvalidRequest, uri: r} }
func badCapture(r captureReason) selOutcome { return selOutcome{kind: FailureInvalidRequest, cap: r} }

var (
	unavailable = selOutcome{kind: FailureUnavailable}
	ambiguous   = selOutcome{kind: FailureAmbiguous}
)

func checkOutcome(t *testing.T, s *selector, uri string, want selOutcome) {
	t.Helper()
	m, err := s.match(uri)
	if want.kind == 0 {
		if err != nil {
			t.Fatalf("match(%q) = %v (%v), want binding %d", uri, err, errors.Unwrap(err), want.def)
		}
		if m.def.index != want.def || m.URI() != uri {
			t.Fatalf("match(%q) selected binding %d with URI %q, want %d", uri, m.def.index, m.URI(), want.def)
		}
		got := m.Vars()
		if len(got) != len(want.vars) {
			t.Fatalf("match(%q) vars = %q, want %q", uri, got, want.vars)
		}
		for k, v := range want.vars {
			if got[k] != v {
				t.Fatalf("match(%q) var %s = %q, want %q", uri, k, got[k], v)
			}
		}
		return
	}
	if KindOf(err) != want.kind {
		t.Fatalf("match(%q) = %v, want kind %v", uri, err, want.kind)
	}
	if strings.Contains(err.Error(), "{") {
		t.Fatalf("public message %q names a template", err)
	}
	var ue *uriError
	var ce *captureError
	switch {
	case want.uri != 0:
		if !errors.As(err, &ue) || ue.Reason != want.uri {
			t.Fatalf("match(%q) cause = %v, want URI reason %v", uri, errors.Unwrap(err), want.uri)
		}
	case want.cap != 0:
		if !errors.As(err, &ce) || ce.Reason != want.cap {
			t.Fatalf("match(%q) cause = %v, want capture reason %v", uri, errors.Unwrap(err), want.cap)
		}
	}
}

// hostileRegistry is the registry of the hostile-request table.
var hostileRegistry = []string{
	"asset://project/{id}/thumbnail",    // 0
	"asset://project/{id}",              // 1
	"asset://q/{id}?v=1",                // 2
	"asset://f/{id}#top",                // 3
	"urn:x:y",                           // 4
	"asset://project/special/thumbnail", // 5
	"file:///srv/docs/{name}",           // 6
	"db://main/users/{user}/rows/{row}", // 7
	"mailto:ops@example.com?subject=Hi", // 8
}

func TestHostileRequests(t *testing.T) {
	s := selMust(t, hostileRegistry...)
	long := strings.Repeat("a", 2100)
	tests := []struct {
		rule string
		uri  string
		want selOutcome
	}{
		// Traversal in every encoding fails as a capture, never as a silent miss.
		{"dot-dot capture fails", "asset://project/../thumbnail", badCapture(captureDotSegment)},
		{"dot capture fails", "asset://project/./thumbnail", badCapture(captureDotSegment)},
		{"encoded dot-dot capture fails", "asset://project/%2e%2e/thumbnail", badCapture(captureDotSegment)},
		{"mixed-case encoded dot-dot capture fails", "asset://project/%2E%2e/thumbnail", badCapture(captureDotSegment)},
		{"half-encoded dot-dot capture fails", "asset://project/.%2e", badCapture(captureDotSegment)},
		{"encoded dot capture fails", "asset://project/%2E", badCapture(captureDotSegment)},
		{"encoded slash capture fails", "asset://project/a%2fb/thumbnail", badCapture(captureSlash)},
		{"upper encoded slash capture fails", "asset://project/a%2Fb", badCapture(captureSlash)},
		{"encoded traversal path capture fails", "asset://project/..%2f..%2fetc%2fpasswd", badCapture(captureSlash)},
		{"encoded dot-dot-slash-dot-dot capture fails", "asset://project/%2e%2e%2f%2e%2e/thumbnail", badCapture(captureSlash)},
		{"encoded backslash capture fails", "asset://project/a%5cb", badCapture(captureBackslash)},
		{"upper encoded backslash capture fails", "asset://project/..%5C..%5Cwin.ini/thumbnail", badCapture(captureBackslash)},
		{"raw backslash capture fails", "asset://project/a\\b", badCapture(captureBackslash)},
		{"raw backslash traversal capture fails", "asset://project/..\\..", badCapture(captureBackslash)},
		{"encoded NUL capture fails", "asset://project/a%00b", badCapture(captureNUL)},
		{"encoded NUL extension trick fails", "db://main/users/u/rows/x%00.png", badCapture(captureNUL)},
		{"overlong dot-dot capture fails", "asset://project/%c0%ae%c0%ae", badCapture(captureInvalidUTF8)},
		{"overlong slash capture fails", "asset://project/%c0%af/thumbnail", badCapture(captureInvalidUTF8)},
		{"three-byte overlong dot capture fails", "asset://project/%e0%80%ae", badCapture(captureInvalidUTF8)},
		{"encoded invalid byte capture fails", "asset://project/%ff", badCapture(captureInvalidUTF8)},
		{"encoded surrogate capture fails", "asset://project/%ed%a0%80", badCapture(captureInvalidUTF8)},
		{"truncated encoded UTF-8 capture fails", "file:///srv/docs/%e2%82", badCapture(captureInvalidUTF8)},
		{"bad capture in a later variable fails", "db://main/users/ok/rows/%2e%2e", badCapture(captureDotSegment)},

		// Double encoding decodes once and is a valid capture.
		{"double-encoded dot-dot captures literally", "asset://project/%252e%252e", ok(1, "id", "%2e%2e")},
		{"double-encoded slash captures literally", "asset://project/%252F/thumbnail", ok(0, "id", "%2F")},
		{"double-encoded NUL captures literally", "asset://project/%2500", ok(1, "id", "%00")},

		// The request URI itself breaks a rule.
		{"raw invalid UTF-8 request fails", "asset://project/\xff", badURI(uriReasonInvalidUTF8)},
		{"raw overlong UTF-8 request fails", "asset://project/\xc0\xae\xc0\xae", badURI(uriReasonInvalidUTF8)},
		{"credentials with password fail", "asset://user:pw@project/1", badURI(uriReasonCredentials)},
		{"credentials without password fail", "asset://user@project/1", badURI(uriReasonCredentials)},
		{"empty userinfo fails", "asset://@project/1", badURI(uriReasonCredentials)},
		{"raw NUL fails", "asset://project/a\x00b", badURI(uriReasonControlOrSpace)},
		{"newline fails", "asset://project/a\nb", badURI(uriReasonControlOrSpace)},
		{"CRLF injection fails", "asset://project/1\r\nX-Evil: 1", badURI(uriReasonControlOrSpace)},
		{"tab fails", "asset://project/\t1", badURI(uriReasonControlOrSpace)},
		{"DEL fails", "asset://project/a\x7fb", badURI(uriReasonControlOrSpace)},
		{"space fails", "asset://project/a b", badURI(uriReasonControlOrSpace)},
		{"space in authority fails", "asset://pro ject/1", badURI(uriReasonControlOrSpace)},
		{"lone percent fails", "asset://project/%", badURI(uriReasonBadEscape)},
		{"short escape fails", "asset://project/%2", badURI(uriReasonBadEscape)},
		{"non-hex escape fails", "asset://project/%zz", badURI(uriReasonBadEscape)},
		{"percent-percent fails", "asset://project/%%32%65", badURI(uriReasonBadEscape)},
		{"too long fails", "asset://project/" + long, badURI(uriReasonTooLong)},
		{"reserved scheme fails", "mcp-warning://read/0123456789abcdef0123456789abcdef", badURI(uriReasonReservedScheme)},
		{"reserved scheme in any case fails", "MCP-Warning://read/x", badURI(uriReasonReservedScheme)},
		{"empty fails", "", badURI(uriReasonEmpty)},
		{"relative path fails", "project/1", badURI(uriReasonNotAbsolute)},
		{"network-path reference fails", "//project/1", badURI(uriReasonNotAbsolute)},
		{"digit scheme fails", "1asset://project/1", badURI(uriReasonNotAbsolute)},

		// A variable matches one non-empty segment: no template, no capture.
		{"empty segment is not captured", "asset://project//thumbnail", unavailable},
		{"trailing empty segment is not captured", "asset://project/", unavailable},
		{"missing segment is unavailable", "asset://project", unavailable},
		{"extra segment is unavailable", "asset://project/1/thumbnail/x", unavailable},
		{"query-borne traversal does not reach the path", "asset://project/a?/../../etc", unavailable},
		{"fragment-borne traversal does not reach the path", "asset://project/a#/../thumbnail", unavailable},
		{"authority is compared byte for byte", "asset://PROJECT/1", unavailable},
		{"scheme is compared byte for byte", "ASSET://project/1", unavailable},
		{"encoded separator is not a separator", "asset://project%2f1", unavailable},

		// Data that looks dangerous elsewhere is a valid capture here.
		{"SQL in a capture is just data", "asset://project/1%27%20OR%201%3D1", ok(1, "id", "1' OR 1=1")},
		{"SQL in a deeper capture is just data", "db://main/users/1%27%3B%20DROP%20TABLE%20users%3B--/rows/1", ok(7, "user", "1'; DROP TABLE users;--", "row", "1")},
		{"encoded control is allowed by the capture rules", "asset://project/a%0Ab", ok(1, "id", "a\nb")},
		{"bidi override is valid UTF-8", "asset://project/%E2%80%AEgnp.exe", ok(1, "id", "\u202egnp.exe")},
		{"braces are data in a request", "asset://project/{id}", ok(1, "id", "{id}")},
		{"three dots are not a dot segment", "asset://project/...", ok(1, "id", "...")},
		{"long capture within the limit", "asset://project/" + long[:2000], ok(1, "id", long[:2000])},
	}
	for _, tc := range tests {
		t.Run(tc.rule, func(t *testing.T) { checkOutcome(t, s, tc.uri, tc.want) })
	}
	if n := len(tests); n < 40 {
		t.Fatalf("only %d hostile requests", n)
	}
}

func TestSelectionRules(t *testing.T) {
	s := selMust(t, hostileRegistry...)
	tests := []struct {
		rule string
		uri  string
		want selOutcome
	}{
		{"exact registration is selected", "urn:x:y", ok(4)},
		{"opaque URI keeps its exact bytes", "urn:x:Y", unavailable},
		{"exact wins over a matching template", "asset://project/special/thumbnail", ok(5)},
		{"template takes the neighbours of an exact registration", "asset://project/special2/thumbnail", ok(0, "id", "special2")},
		{"capture is a whole segment", "asset://project/7/thumbnail", ok(0, "id", "7")},
		{"non-ASCII capture", "asset://project/caf\u00e9", ok(1, "id", "caf\u00e9")},
		{"percent-encoded UTF-8 capture decodes", "asset://project/caf%C3%A9", ok(1, "id", "caf\u00e9")},
		{"static query matches byte for byte", "asset://q/1?v=1", ok(2, "id", "1")},
		{"different query does not match", "asset://q/1?v=2", unavailable},
		{"missing query does not match", "asset://q/1", unavailable},
		{"longer query does not match", "asset://q/1?v=1&w=2", unavailable},
		{"fragment on a query template does not match", "asset://q/1?v=1#x", unavailable},
		{"capture before a static query is checked", "asset://q/..?v=1", badCapture(captureDotSegment)},
		{"static fragment matches byte for byte", "asset://f/1#top", ok(3, "id", "1")},
		{"different fragment does not match", "asset://f/1#TOP", unavailable},
		{"query on a path-only template does not match", "asset://project/1?x", unavailable},
		{"fragment on a path-only template does not match", "asset://project/1#x", unavailable},
		{"empty authority template", "file:///srv/docs/readme.md", ok(6, "name", "readme.md")},
		{"two captures", "db://main/users/alice/rows/42", ok(7, "user", "alice", "row", "42")},
		{"opaque URI with @ and query is exact", "mailto:ops@example.com?subject=Hi", ok(8)},
	}
	for _, tc := range tests {
		t.Run(tc.rule, func(t *testing.T) { checkOutcome(t, s, tc.uri, tc.want) })
	}
}

func TestTemplateAndLiteralOfTheSameShape(t *testing.T) {
	s := selMust(t, "a://x/{id}/y", "a://x/1/y", "T a://x/2/y")
	checkOutcome(t, s, "a://x/1/y", ok(1))
	checkOutcome(t, s, "a://x/3/y", ok(0, "id", "3"))
	// A variable-free template is a template: it and {id} both match.
	checkOutcome(t, s, "a://x/2/y", ambiguous)
}

func TestAmbiguityIsARequestError(t *testing.T) {
	t.Run("same shape, different names", func(t *testing.T) {
		s := selMust(t, "a://x/{id}/y", "a://x/{name}/y")
		checkOutcome(t, s, "a://x/1/y", ambiguous)
		checkOutcome(t, s, "a://x/1/z", unavailable)
	})
	t.Run("literal and variable cross", func(t *testing.T) {
		s := selMust(t, "a://x/{id}/y", "a://x/z/{k}")
		checkOutcome(t, s, "a://x/z/y", ambiguous)
		checkOutcome(t, s, "a://x/w/y", ok(0, "id", "w"))
		checkOutcome(t, s, "a://x/z/w", ok(1, "k", "w"))
	})
	t.Run("exact registration removes the ambiguity", func(t *testing.T) {
		s := selMust(t, "a://x/{id}/y", "a://x/z/{k}", "a://x/z/y")
		checkOutcome(t, s, "a://x/z/y", ok(2))
	})
	t.Run("ambiguity is decided before captures", func(t *testing.T) {
		s := selMust(t, "a://x/{id}", "a://x/{name}")
		checkOutcome(t, s, "a://x/%2e%2e", ambiguous)
	})
	t.Run("private cause names the templates, public message does not", func(t *testing.T) {
		s := selMust(t, "a://x/{id}/y", "a://x/{name}/y")
		_, err := s.match("a://x/1/y")
		var ae *ambiguousMatchError
		if !errors.As(err, &ae) || len(ae.Templates) != 2 || !strings.Contains(ae.Error(), "a://x/{name}/y") {
			t.Fatalf("cause = %v", errors.Unwrap(err))
		}
		if err.Error() != kindMessages[FailureAmbiguous] {
			t.Fatalf("public message %q", err)
		}
	})
}

func TestNewSelectorRejectsDuplicates(t *testing.T) {
	tests := []struct {
		rule    string
		entries []string
		field   string
		index   int
	}{
		{"duplicate concrete URI", []string{"a://x/1", "a://x/2", "a://x/1"}, "URI", 2},
		{"duplicate template", []string{"a://x/{id}", "a://x/{id}/y", "a://x/{id}"}, "URITemplate", 2},
	}
	for _, tc := range tests {
		_, err := newSelector(selDefs(tc.entries...), 2048)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Path.Field != tc.field || ce.Definition != tc.index || !strings.Contains(ce.Reason, "twice") {
			t.Errorf("%s: %v", tc.rule, err)
		}
	}
	if _, err := newSelector(selDefs("a://x/{id}", "a://x/{ID}", "a://x/{id}/"), 2048); err != nil {
		t.Errorf("templates differing in bytes were rejected: %v", err)
	}
}

func TestNewSelectorRejectsRepeatedNames(t *testing.T) {
	_, err := newSelector(selDefs("a://x/{id}/{id}"), 2048)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Reason != tmplRepeatedName {
		t.Fatalf("repeated name: %v", err)
	}
}

func TestMatchIsImmutableToTheCallee(t *testing.T) {
	s := selMust(t, "a://x/{id}/{k}")
	m, err := s.match("a://x/1/2")
	if err != nil {
		t.Fatal(err)
	}
	v := m.Vars()
	v["id"] = "evil"
	d := m.Definition()
	d.URITemplate = "evil"
	if got, _ := m.Var("id"); got != "1" {
		t.Fatalf("Var after mutating Vars() = %q", got)
	}
	if m.Definition().URITemplate != "a://x/{id}/{k}" {
		t.Fatal("definition changed through a copy")
	}
	if _, ok := m.Var("missing"); ok {
		t.Fatal("Var of an unknown name reported ok")
	}
}

func TestSelectorThroughResources(t *testing.T) {
	b := []ResourceBinding{
		selBinding(ResourceDefinition{URITemplate: "asset://project/{id}/thumbnail", Name: "thumb"}),
		selBinding(ResourceDefinition{URI: "asset://project/special/thumbnail", Name: "special"}),
	}
	r, err := NewResources(b, selPolicy())
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.sel.match("asset://project/p%2541/thumbnail")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := m.Var("id"); v != "p%41" || m.Definition().Name != "thumb" {
		t.Fatalf("match = %q %q", v, m.Definition().Name)
	}
	if _, err := NewResources(b, selPolicy(), WithResourceLimits(ResourceLimits{MaxURIBytes: 64})); err != nil {
		t.Fatalf("short templates under a 64-byte limit: %v", err)
	}
	long := selBinding(ResourceDefinition{URITemplate: "asset://project/{id}/" + strings.Repeat("t", 60), Name: "long"})
	_, err = NewResources([]ResourceBinding{long}, selPolicy(), WithResourceLimits(ResourceLimits{MaxURIBytes: 64}))
	var ue *uriError
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Path.Field != "URITemplate" || !strings.Contains(ce.Reason, uriReasonTooLong.String()) {
		t.Fatalf("template over MaxURIBytes: %v (%v)", err, errors.As(err, &ue))
	}
}

// Oracle for FuzzMatch: a linear scan over templates with net/url decoding.
var oracleParts = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.\-]*:(?://[^/?#]*)?)([^?#]*)(.*)$`)

func oracleMatches(tmpl, uri string) (map[string]string, bool) {
	tp, up := oracleParts.FindStringSubmatch(tmpl), oracleParts.FindStringSubmatch(uri)
	if tp == nil || up == nil || tp[1] != up[1] || tp[3] != up[3] {
		return nil, false
	}
	ts, us := strings.Split(tp[2], "/"), strings.Split(up[2], "/")
	if len(ts) != len(us) {
		return nil, false
	}
	raw := map[string]string{}
	for i := range ts {
		if strings.HasPrefix(ts[i], "{") {
			if us[i] == "" {
				return nil, false
			}
			raw[ts[i][1:len(ts[i])-1]] = us[i]
		} else if ts[i] != us[i] {
			return nil, false
		}
	}
	return raw, true
}

func oracleCaptureOK(v string) bool {
	return utf8.ValidString(v) && !strings.ContainsAny(v, "/\\\x00") && v != "." && v != ".."
}

var fuzzRegistry = []string{
	"asset://project/{id}/thumbnail",
	"asset://project/{id}",
	"asset://project/special/thumbnail",
	"asset://project/{a}/{b}/{c}",
	"asset://project/x/{b}/y",
	"asset://q/{id}?v=1",
	"asset://f/{id}#top",
	"urn:x:y",
	"urn:{id}",
	"file:///srv/{name}",
	"db://main/users/{user}/rows/{row}",
	"T db://main/users/me/rows/1",
}

func FuzzMatch(f *testing.F) {
	for _, u := range []string{
		"asset://project/1/thumbnail", "asset://project/%2e%2e", "asset://project/%252F", "asset://project/x/1/y",
		"asset://project/%c0%ae", "asset://q/1?v=1", "urn:abc", "urn:x:y", "file:///srv/a%5cb",
		"db://main/users/me/rows/1", "asset://project//thumbnail", "asset://u:p@project/1",
	} {
		f.Add(u, "")
		f.Add(u, "asset://project/{z}/{y}")
	}
	base, err := newSelector(selDefs(fuzzRegistry...), 2048)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, uri, extra string) {
		entries, s := fuzzRegistry, base
		if _, err := parseTemplate(extra, 2048); err == nil {
			entries = append(entries[:len(entries):len(entries)], "T "+extra)
			if s, err = newSelector(selDefs(entries...), 2048); err != nil {
				return // extra duplicated a registered template byte for byte
			}
		}
		m, err := s.match(uri)

		// Oracle selOutcome.
		var want selOutcome
		var wantVars map[string]string
		if checkURI(uri, 2048) != nil || !oracleURIOK(uri, 2048) {
			want.kind = FailureInvalidRequest
		} else if i := exactIndex(entries, uri); i >= 0 {
			want.def = i
		} else {
			var hits []int
			var raws []map[string]string
			for i, e := range entries {
				tmpl, isT := strings.CutPrefix(e, "T ")
				if !isT && !strings.Contains(e, "{") {
					continue
				}
				if raw, ok := oracleMatches(tmpl, uri); ok {
					hits = append(hits, i)
					raws = append(raws, raw)
				}
			}
			switch len(hits) {
			case 0:
				want.kind = FailureUnavailable
			case 1:
				want.def = hits[0]
				wantVars = map[string]string{}
				for k, r := range raws[0] {
					v, err := url.PathUnescape(r)
					if err != nil || !oracleCaptureOK(v) {
						want.kind = FailureInvalidRequest
						break
					}
					wantVars[k] = v
				}
			default:
				want.kind = FailureAmbiguous
			}
		}

		if want.kind != 0 {
			if KindOf(err) != want.kind {
				t.Fatalf("match(%q) = %v, oracle wants %v", uri, err, want.kind)
			}
			return
		}
		if err != nil {
			t.Fatalf("match(%q) = %v (%v), oracle selects %d", uri, err, errors.Unwrap(err), want.def)
		}
		if m.def.index != want.def || m.URI() != uri {
			t.Fatalf("match(%q) selected %d, oracle %d", uri, m.def.index, want.def)
		}
		for k, v := range m.Vars() {
			if !oracleCaptureOK(v) {
				t.Fatalf("match(%q) yields capture %s=%q that breaks the capture rules", uri, k, v)
			}
			if wantVars[k] != v {
				t.Fatalf("match(%q) capture %s=%q, oracle %q", uri, k, v, wantVars[k])
			}
		}
		if len(m.Vars()) != len(wantVars) {
			t.Fatalf("match(%q) vars %q, oracle %q", uri, m.Vars(), wantVars)
		}
	})
}

func exactIndex(entries []string, uri string) int {
	for i, e := range entries {
		if e == uri && !strings.Contains(e, "{") {
			return i
		}
	}
	return -1
}

// BenchmarkSelect measures one template selection at several registry
// sizes. Every registry has the same shapes; the request hits the last
// template registered, deep in the set.
func BenchmarkSelect(b *testing.B) {
	for _, n := range []int{10, 1000, 100000} {
		b.Run(fmt.Sprintf("templates=%d", n), func(b *testing.B) {
			entries := make([]string, n)
			for i := range entries {
				switch i % 4 {
				case 0:
					entries[i] = fmt.Sprintf("asset://project/t%d/{id}/thumbnail", i)
				case 1:
					entries[i] = fmt.Sprintf("asset://project/t%d/{id}", i)
				case 2:
					entries[i] = fmt.Sprintf("asset://project/{id}/t%d/{size}", i)
				default:
					entries[i] = fmt.Sprintf("asset://project/t%d/{id}/{v}/x%d", i, i)
				}
			}
			entries[n-1] = fmt.Sprintf("asset://project/t%d/{id}/thumbnail", n-1)
			s, err := newSelector(selDefs(entries...), 2048)
			if err != nil {
				b.Fatal(err)
			}
			uri := fmt.Sprintf("asset://project/t%d/p%%2541/thumbnail", n-1)
			if m, err := s.match(uri); err != nil || m.def.index != n-1 {
				b.Fatalf("match: %v", err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.match(uri); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
