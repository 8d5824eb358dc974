package core

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheckURIRules(t *testing.T) {
	long := "a://h/" + strings.Repeat("x", 58) // 64 bytes
	tests := []struct {
		rule     string
		uri      string
		maxBytes int
		want     uriReason // 0: accepted
	}{
		{"accepts an absolute URI with an authority", "asset://project/1/thumbnail", 0, 0},
		{"accepts an opaque URI", "urn:x:y", 0, 0},
		{"accepts mailto, whose @ is not in an authority", "mailto:user@example.com", 0, 0},
		{"accepts an empty authority", "file:///etc/hosts", 0, 0},
		{"accepts a scheme with + - .", "a+b-c.d://h/x", 0, 0},
		{"accepts query and fragment", "a://h/x?y=1#z", 0, 0},
		{"accepts UTF-8 beyond ASCII", "a://h/caf\u00e9/\u6f22", 0, 0},
		{"accepts upper and lower hex escapes", "a://h/%2f%2F%aA", 0, 0},
		{"accepts braces, which are data in a request", "a://h/{id}", 0, 0},
		{"accepts exactly max bytes", long, 64, 0},
		{"accepts @ after the authority", "a://h/x@y?u@v#w@z", 0, 0},

		{"empty is rejected", "", 0, uriReasonEmpty},
		{"over max bytes is rejected", long + "x", 64, uriReasonTooLong},
		{"too long is decided before the bytes are scanned", strings.Repeat("\x00", 65), 64, uriReasonTooLong},

		{"relative reference is not absolute", "/x/y", 0, uriReasonNotAbsolute},
		{"network-path reference is not absolute", "//h/x", 0, uriReasonNotAbsolute},
		{"scheme must start with a letter", "1a://h/x", 0, uriReasonNotAbsolute},
		{"empty scheme is not absolute", ":x", 0, uriReasonNotAbsolute},
		{"scheme with _ is not absolute", "a_b://h", 0, uriReasonNotAbsolute},
		{"no colon is not absolute", "asset", 0, uriReasonNotAbsolute},
		{"percent in scheme is not absolute", "a%41://h", 0, uriReasonNotAbsolute},

		{"userinfo with password is credentials", "a://user:pw@h/x", 0, uriReasonCredentials},
		{"userinfo without password is credentials", "a://user@h/x", 0, uriReasonCredentials},
		{"empty userinfo is credentials", "a://@h/x", 0, uriReasonCredentials},
		{"userinfo before a query is credentials", "a://u@h?x", 0, uriReasonCredentials},
		{"backslash does not hide userinfo", "a://h\\@evil/x", 0, uriReasonCredentials},

		{"invalid UTF-8 byte", "a://h/\xff", 0, uriReasonInvalidUTF8},
		{"overlong UTF-8 raw", "a://h/\xc0\xae", 0, uriReasonInvalidUTF8},
		{"truncated UTF-8", "a://h/\xe2\x82", 0, uriReasonInvalidUTF8},
		{"raw surrogate", "a://h/\xed\xa0\x80", 0, uriReasonInvalidUTF8},

		{"lone percent", "a://h/%", 0, uriReasonBadEscape},
		{"percent with one hex digit at end", "a://h/%2", 0, uriReasonBadEscape},
		{"percent with non-hex", "a://h/%zz", 0, uriReasonBadEscape},
		{"percent with one non-hex", "a://h/%2g", 0, uriReasonBadEscape},
		{"double percent", "a://h/%%41", 0, uriReasonBadEscape},

		{"space", "a://h/x y", 0, uriReasonControlOrSpace},
		{"NUL", "a://h/x\x00", 0, uriReasonControlOrSpace},
		{"tab", "a://h/\tx", 0, uriReasonControlOrSpace},
		{"newline", "a://h/x\n", 0, uriReasonControlOrSpace},
		{"carriage return", "a://h/x\r", 0, uriReasonControlOrSpace},
		{"escape", "a://h/\x1b[0m", 0, uriReasonControlOrSpace},
		{"DEL", "a://h/\x7f", 0, uriReasonControlOrSpace},
		{"leading space", " a://h/x", 0, uriReasonControlOrSpace},

		{"reserved scheme", "mcp-warning://read/00000000000000000000000000000000", 0, uriReasonReservedScheme},
		{"reserved scheme in upper case", "MCP-WARNING://read/x", 0, uriReasonReservedScheme},
		{"reserved scheme in mixed case, opaque", "Mcp-Warning:x", 0, uriReasonReservedScheme},
		{"a longer scheme is not reserved", "mcp-warnings://read/x", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.rule, func(t *testing.T) {
			maxBytes := tc.maxBytes
			if maxBytes == 0 {
				maxBytes = 2048
			}
			err := checkURI(tc.uri, maxBytes)
			if tc.want == 0 {
				if err != nil {
					t.Fatalf("checkURI(%q) = %v, want nil", tc.uri, err)
				}
				return
			}
			var ue *uriError
			if !errors.As(err, &ue) {
				t.Fatalf("checkURI(%q) = %v, want *uriError", tc.uri, err)
			}
			if ue.Reason != tc.want {
				t.Fatalf("checkURI(%q) reason = %v, want %v", tc.uri, ue.Reason, tc.want)
			}
			if strings.Contains(err.Error(), tc.uri) && len(tc.uri) > 3 {
				t.Fatalf("error %q quotes the URI", err)
			}
		})
	}
}

func TestURIErrorNamesEveryReason(t *testing.T) {
	for r := uriReasonEmpty; r <= uriReasonReservedScheme; r++ {
		if s := r.String(); s == "" || strings.HasPrefix(s, "uriReason(") {
			t.Errorf("reason %d has no text", r)
		}
	}
	if s := uriReason(0).String(); s != "uriReason(0)" {
		t.Errorf("zero reason = %q", s)
	}
}

func TestTargetAndDefinitionUseURIRules(t *testing.T) {
	if _, err := NewResourceTarget("a://u:p@h/x", "r", nil); !errors.As(err, new(*uriError)) {
		t.Fatalf("NewResourceTarget with credentials: %v, want a wrapped *uriError", err)
	}
	if _, err := NewResourceTarget("MCP-warning://read/x", "r", nil); err == nil {
		t.Fatal("NewResourceTarget accepted the reserved scheme")
	}
}

func TestSplitURIEndsThePathAtQueryOrFragment(t *testing.T) {
	tests := []struct{ uri, origin, path, suffix string }{
		{"a://h/x/y", "a://h", "/x/y", ""},
		{"a://h", "a://h", "", ""},
		{"a://h?q", "a://h", "", "?q"},
		{"a://h#f/x", "a://h", "", "#f/x"},
		{"a://h/x?y/z#w", "a://h", "/x", "?y/z#w"},
		{"a://h/x#y?z", "a://h", "/x", "#y?z"},
		{"a:///x", "a://", "/x", ""},
		{"urn:x:y", "urn:", "x:y", ""},
		{"urn:x/y?z", "urn:", "x/y", "?z"},
		{"a:/x", "a:", "/x", ""},
	}
	for _, tc := range tests {
		o, p, s := splitURI(tc.uri)
		if o != tc.origin || p != tc.path || s != tc.suffix {
			t.Errorf("splitURI(%q) = %q %q %q, want %q %q %q", tc.uri, o, p, s, tc.origin, tc.path, tc.suffix)
		}
	}
}

// Independent statement of the URI rules, used as the fuzz oracle.
var (
	oracleEscapes = regexp.MustCompile(`^(?s:[^%]|%[0-9A-Fa-f]{2})*$`)
	oracleScheme  = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.\-]*):`)
	oracleAuth    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.\-]*://([^/?#]*)`)
	oracleControl = regexp.MustCompile(`[\x00-\x20\x7f]`)
)

func oracleURIOK(s string, maxBytes int) bool {
	if s == "" || len(s) > maxBytes || !utf8.ValidString(s) || oracleControl.MatchString(s) || !oracleEscapes.MatchString(s) {
		return false
	}
	m := oracleScheme.FindStringSubmatch(s)
	if m == nil || strings.ToLower(m[1]) == "mcp-warning" {
		return false
	}
	if a := oracleAuth.FindStringSubmatch(s); a != nil && strings.Contains(a[1], "@") {
		return false
	}
	return true
}

func FuzzCheckURI(f *testing.F) {
	for _, s := range []string{
		"asset://project/1/thumbnail", "urn:x:y", "a://u:p@h/", "a://h/%2e%2e", "a://h/%zz",
		"a://h/\xc0\xae", "a://h/\x7f", "mcp-warning://read/x", "MCP-WARNING:x", "//h/x", "a://h?x@y",
		"a://@", "a:", "a://h/%", "mailto:u@h",
	} {
		f.Add(s, uint16(2048))
	}
	f.Fuzz(func(t *testing.T, s string, m uint16) {
		maxBytes := int(m)%4096 + 1
		err := checkURI(s, maxBytes)
		want := oracleURIOK(s, maxBytes)
		if (err == nil) != want {
			t.Fatalf("checkURI(%q, %d) = %v, oracle accepts = %v", s, maxBytes, err, want)
		}
		if err != nil {
			var ue *uriError
			if !errors.As(err, &ue) || ue.Reason < uriReasonEmpty || ue.Reason > uriReasonReservedScheme {
				t.Fatalf("checkURI(%q) = %#v, want a *uriError with a known reason", s, err)
			}
			if ue.Offset >= len(s) {
				t.Fatalf("offset %d beyond %d bytes", ue.Offset, len(s))
			}
			return
		}
		o, p, x := splitURI(s)
		if o+p+x != s || strings.ContainsAny(p, "?#") || (x != "" && x[0] != '?' && x[0] != '#') {
			t.Fatalf("splitURI(%q) = %q %q %q", s, o, p, x)
		}
	})
}
