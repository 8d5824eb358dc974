package core

import (
	"errors"
	"strings"
	"testing"

	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

// An invalid principal is refused, never rewritten: the three spellings
// that a decoder's replacement would make one principal are all refused,
// and so are controls, format and separator characters and surrounding
// white space. The error never quotes the principal.
func TestCheckPrincipal(t *testing.T) {
	for _, p := range []string{"alice", "alice@example.test", "auth0|5f7c8ec7c33c6c004bbafe82", "Alice Smith", "ålice", "用户", "a", strings.Repeat("x", wire.MaxPrincipalBytes)} {
		if err := CheckPrincipal(p); err != nil {
			t.Errorf("%q refused: %v", p, err)
		}
	}
	for name, p := range map[string]string{
		"empty":                  "",
		"too long":               strings.Repeat("x", wire.MaxPrincipalBytes+1),
		"invalid UTF-8 \\xff":    "ali\xffce",
		"invalid UTF-8 \\xfe":    "ali\xfece",
		"U+FFFD":                 "ali\uFFFDce",
		"NUL":                    "ali\x00ce",
		"C0 control":             "ali\x1bce",
		"DEL":                    "ali\x7fce",
		"C1 U+0085 (NEL)":        "ali\u0085ce",
		"C1 U+009B (CSI)":        "ali\u009bce",
		"U+2028 line separator":  "ali\u2028ce",
		"U+2029 para separator":  "ali\u2029ce",
		"U+202E bidi override":   "ali\u202Ece",
		"U+2066 bidi isolate":    "ali\u2066ce",
		"U+200B zero width":      "ali\u200Bce",
		"U+FEFF BOM":             "\uFEFFalice",
		"U+FFFE noncharacter":    "ali\uFFFEce",
		"U+FDD0 noncharacter":    "ali\uFDD0ce",
		"leading space":          " alice",
		"trailing space":         "alice ",
		"leading no-break space": "\u00A0alice",
		"trailing tab":           "alice\t",
	} {
		err := CheckPrincipal(p)
		if !errors.Is(err, ErrInvalidPrincipal) {
			t.Errorf("%s: %v, want ErrInvalidPrincipal", name, err)
			continue
		}
		if len(p) > 2 && strings.Contains(err.Error(), p) {
			t.Errorf("%s: the error %q quotes the principal", name, err)
		}
	}
}
