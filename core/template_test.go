package core

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseTemplateAcceptsWholeSegmentVariables(t *testing.T) {
	tests := []struct {
		raw, origin, suffix string
		segs                []tmplSeg
	}{
		{"asset://project/{id}/thumbnail", "asset://project", "", []tmplSeg{{}, {name: "id"}, {lit: "thumbnail"}}},
		{"a://h/{a}/{B_2}/{_c}", "a://h", "", []tmplSeg{{}, {name: "a"}, {name: "B_2"}, {name: "_c"}}},
		{"a://h/{id}?v=1", "a://h", "?v=1", []tmplSeg{{}, {name: "id"}}},
		{"a://h/{id}#top", "a://h", "#top", []tmplSeg{{}, {name: "id"}}},
		{"a://h/{id}?q=%7B%7D#f", "a://h", "?q=%7B%7D#f", []tmplSeg{{}, {name: "id"}}},
		{"a://h/{id}/", "a://h", "", []tmplSeg{{}, {name: "id"}, {}}},
		{"a:///{id}", "a://", "", []tmplSeg{{}, {name: "id"}}},
		{"urn:{id}", "urn:", "", []tmplSeg{{name: "id"}}},
		{"a:/{x}/y", "a:", "", []tmplSeg{{}, {name: "x"}, {lit: "y"}}},
		{"a://h/static", "a://h", "", []tmplSeg{{}, {lit: "static"}}},
		{"a://h/%2e%2e/{id}", "a://h", "", []tmplSeg{{}, {lit: "%2e%2e"}, {name: "id"}}},
	}
	for _, tc := range tests {
		tp, err := parseTemplate(tc.raw, 2048)
		if err != nil {
			t.Errorf("parseTemplate(%q): %v", tc.raw, err)
			continue
		}
		if tp.origin != tc.origin || tp.suffix != tc.suffix || len(tp.segs) != len(tc.segs) {
			t.Errorf("parseTemplate(%q) = %q %v %q", tc.raw, tp.origin, tp.segs, tp.suffix)
			continue
		}
		for i := range tc.segs {
			if tp.segs[i] != tc.segs[i] {
				t.Errorf("parseTemplate(%q) seg %d = %+v, want %+v", tc.raw, i, tp.segs[i], tc.segs[i])
			}
		}
	}
}

func TestParseTemplateRejectsUnsupportedForms(t *testing.T) {
	tests := []struct {
		form, raw, reason string
	}{
		{"operator +", "a://h/{+x}", tmplOperator},
		{"operator #", "a://h/{#x}", tmplOperator},
		{"operator /", "a://h/{/x}", tmplOperator},
		{"operator .", "a://h/{.x}", tmplOperator},
		{"operator ;", "a://h/{;x}", tmplOperator},
		{"operator ?", "a://h/x{?q}", tmplOperator},
		{"operator &", "a://h/x?a=1{&b}", tmplOperator},
		{"reserved operator =", "a://h/{=x}", tmplReservedOp},
		{"reserved operator ,", "a://h/{,x}", tmplReservedOp},
		{"reserved operator !", "a://h/{!x}", tmplReservedOp},
		{"reserved operator @", "a://h/{@x}", tmplReservedOp},
		{"reserved operator |", "a://h/{|x}", tmplReservedOp},
		{"explode", "a://h/{x*}", tmplExplode},
		{"prefix", "a://h/{x:3}", tmplPrefix},
		{"list", "a://h/{a,b}", tmplList},
		{"partial segment before", "a://h/x{id}", tmplPartialSegment},
		{"partial segment after", "a://h/{id}.png", tmplPartialSegment},
		{"two variables in one segment", "a://h/{a}{b}", tmplPartialSegment},
		{"partial rootless segment", "urn:x:{id}", tmplPartialSegment},
		{"repeated name", "a://h/{id}/x/{id}", tmplRepeatedName},
		{"name starting with a digit", "a://h/{1id}", tmplBadName},
		{"name with a hyphen", "a://h/{a-b}", tmplBadName},
		{"name with a percent escape", "a://h/{%41}", tmplBadName},
		{"name with a space", "a://h/{a b}", tmplBadName},
		{"non-ASCII name", "a://h/{\u00e9}", tmplBadName},
		{"nested braces", "a://h/{{id}}", tmplBadName},
		{"empty variable", "a://h/{}", tmplEmptyVar},
		{"unclosed brace", "a://h/{id", tmplUnclosed},
		{"stray closing brace", "a://h/id}", tmplStrayClose},
		{"variable as the scheme", "{s}://h/x", tmplInScheme},
		{"variable inside the scheme", "a{s}b://h/x", tmplInScheme},
		{"variable as the authority", "a://{host}/x", tmplInAuthority},
		{"variable inside the authority", "a://h{port}/x", tmplInAuthority},
		{"variable as the whole authority, no path", "a://{host}", tmplInAuthority},
		{"variable in the query", "a://h/x?q={q}", tmplInQuery},
		{"variable as the query", "a://h/x?{q}", tmplInQuery},
		{"variable in the fragment", "a://h/x#{f}", tmplInFragment},
		{"variable in a fragment after a query", "a://h/x?y#{f}", tmplInFragment},
	}
	for _, tc := range tests {
		t.Run(tc.form, func(t *testing.T) {
			_, err := parseTemplate(tc.raw, 2048)
			if err == nil || err.Error() != tc.reason {
				t.Fatalf("parseTemplate(%q) = %v, want %q", tc.raw, err, tc.reason)
			}
		})
	}
}

func TestParseTemplateAppliesURIRulesToLiterals(t *testing.T) {
	tests := []struct {
		raw      string
		maxBytes int
		want     uriReason
	}{
		{"", 2048, uriReasonEmpty},
		{"a://h/" + strings.Repeat("x", 60) + "/{id}", 64, uriReasonTooLong},
		{"/rel/{id}", 2048, uriReasonNotAbsolute},
		{"a://u:p@h/{id}", 2048, uriReasonCredentials},
		{"a://h/\xff/{id}", 2048, uriReasonInvalidUTF8},
		{"a://h/%zz/{id}", 2048, uriReasonBadEscape},
		{"a://h/a b/{id}", 2048, uriReasonControlOrSpace},
		{"a://h/{id}?q=\x7f", 2048, uriReasonControlOrSpace},
		{"mcp-WARNING://read/{id}", 2048, uriReasonReservedScheme},
	}
	for _, tc := range tests {
		_, err := parseTemplate(tc.raw, tc.maxBytes)
		var ue *uriError
		if !errors.As(err, &ue) || ue.Reason != tc.want {
			t.Errorf("parseTemplate(%q) = %v, want URI reason %v", tc.raw, err, tc.want)
		}
	}
}

func TestNewResourcesRejectsTemplatesWithConfigError(t *testing.T) {
	cases := []struct{ tmpl, reason string }{
		{"a://h/{x*}", tmplExplode},
		{"a://{h}/x", tmplInAuthority},
		{"a://h/{id}/{id}", tmplRepeatedName},
		{"a://h/%zz/{id}", uriReasonBadEscape.String()},
	}
	for _, tc := range cases {
		b := []ResourceBinding{
			selBinding(ResourceDefinition{URI: "a://h/fine", Name: "ok"}),
			selBinding(ResourceDefinition{URITemplate: tc.tmpl, Name: "bad"}),
		}
		_, err := NewResources(b, selPolicy())
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("NewResources(%q) = %v, want *ConfigError", tc.tmpl, err)
		}
		if ce.Definition != 1 || ce.Name != tc.tmpl || ce.Path.Field != "URITemplate" || !strings.Contains(ce.Reason, tc.reason) {
			t.Errorf("NewResources(%q) = %+v, want binding 1, field URITemplate, reason %q", tc.tmpl, ce, tc.reason)
		}
	}
}

func TestDecodeCaptureDecodesOnce(t *testing.T) {
	tests := []struct {
		seg, want string
		bad       captureReason
	}{
		{"abc", "abc", 0},
		{"%252F", "%2F", 0},
		{"%252e%252e", "%2e%2e", 0},
		{"%25", "%", 0},
		{"caf%C3%A9", "caf\u00e9", 0},
		{"1%27%20OR%201%3D1", "1' OR 1=1", 0},
		{"...", "...", 0},
		{".a", ".a", 0},
		{"%2e", ".", captureDotSegment},
		{"%2E%2e", "..", captureDotSegment},
		{"a%2fb", "a/b", captureSlash},
		{"a%5Cb", "a\\b", captureBackslash},
		{"a\\b", "a\\b", captureBackslash},
		{"%00", "\x00", captureNUL},
		{"%c0%ae", "\xc0\xae", captureInvalidUTF8},
		{"%ff", "\xff", captureInvalidUTF8},
	}
	for _, tc := range tests {
		got, bad := decodeCapture(tc.seg)
		if got != tc.want || bad != tc.bad {
			t.Errorf("decodeCapture(%q) = %q, %v; want %q, %v", tc.seg, got, bad, tc.want, tc.bad)
		}
	}
	for r := captureInvalidUTF8; r <= captureDotSegment; r++ {
		if strings.HasPrefix(r.String(), "captureReason(") {
			t.Errorf("capture reason %d has no text", r)
		}
	}
}

func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{
		"asset://project/{id}/thumbnail", "a://h/{a}/{b}?q#f", "urn:{id}", "a://h/{x:3}", "a://{h}/x",
		"{s}://h", "a://h/{a,b}", "a://h/x{id}", "a://h/{id}/{id}", "a://h/{", "a://h/}", "a://h/{}",
		"a://h/{+x}", "a:{x}/{y}", "a://h/{id}#{f}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		tp, err := parseTemplate(raw, 4096)
		if err != nil {
			if _, ok := err.(*templateError); !ok {
				t.Fatalf("parseTemplate(%q) = %T, want *templateError", raw, err)
			}
			return
		}
		if err := checkURI(raw, 4096); err != nil {
			t.Fatalf("accepted template %q is not a valid URI: %v", raw, err)
		}
		if strings.ContainsAny(tp.origin, "{}") || strings.ContainsAny(tp.suffix, "{}") {
			t.Fatalf("template %q has a variable outside the path", raw)
		}
		parts := make([]string, len(tp.segs))
		req := make([]string, len(tp.segs))
		want := map[string]string{}
		for i, s := range tp.segs {
			if s.name == "" {
				if strings.ContainsAny(s.lit, "{}/") {
					t.Fatalf("template %q literal segment %q", raw, s.lit)
				}
				parts[i], req[i] = s.lit, s.lit
				continue
			}
			if checkVarName(s.name) != "" {
				t.Fatalf("template %q accepted variable name %q", raw, s.name)
			}
			if _, dup := want[s.name]; dup {
				t.Fatalf("template %q repeats %q", raw, s.name)
			}
			v := "v" + strconv.Itoa(i)
			want[s.name] = v
			parts[i], req[i] = "{"+s.name+"}", v
		}
		if got := tp.origin + strings.Join(parts, "/") + tp.suffix; got != raw {
			t.Fatalf("template %q reassembles as %q", raw, got)
		}
		// The template must select the request built from it.
		sel, err := newSelector([]*definition{{index: 0, desc: ResourceDefinition{URITemplate: raw, Name: "t"}}}, 1<<16)
		if err != nil {
			t.Fatalf("newSelector(%q): %v", raw, err)
		}
		uri := tp.origin + strings.Join(req, "/") + tp.suffix
		m, err := sel.match(uri)
		if err != nil {
			t.Fatalf("template %q does not select %q: %v", raw, uri, err)
		}
		if got := m.Vars(); len(got) != len(want) {
			t.Fatalf("template %q captures %v from %q, want %v", raw, got, uri, want)
		}
		for k, v := range want {
			if got, _ := m.Var(k); got != v {
				t.Fatalf("template %q captures %s=%q, want %q", raw, k, got, v)
			}
		}
	})
}

// TestTemplateVariablesNamesEachCaptureInOrderAndChecksTheTemplate: store
// authors get a template's variables in order, and a template NewResources
// would reject is an error, not a guess.
func TestTemplateVariablesNamesEachCaptureInOrderAndChecksTheTemplate(t *testing.T) {
	got, err := TemplateVariables("doc://tenants/{tenant}/docs/{id}?v=1")
	if err != nil || !slices.Equal(got, []string{"tenant", "id"}) {
		t.Fatalf("TemplateVariables = %q, %v; want [tenant id]", got, err)
	}
	if got, err := TemplateVariables("doc://static/path"); err != nil || len(got) != 0 {
		t.Errorf("a template without variables: %q, %v", got, err)
	}
	for _, bad := range []string{"doc://{host}/x", "doc://x/{+path}", "doc://x/a{id}", "doc://x/{id}/{id}", ""} {
		if _, err := TemplateVariables(bad); err == nil {
			t.Errorf("TemplateVariables(%q) accepted a template NewResources rejects", bad)
		}
	}
}
