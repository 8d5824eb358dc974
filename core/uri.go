package core

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxURIHardLimit bounds URIs checked before a Resources value's own limit
// applies (target construction).
const maxURIHardLimit = 64 << 10

// reservedScheme is the scheme of generated warnings; no request, definition
// or target may use it, in any letter case.
const reservedScheme = "mcp-warning"

// uriReason says which URI rule a uriError broke.
type uriReason uint8

// The URI rules. The zero value is not a valid reason.
const (
	// uriReasonEmpty: the URI is the empty string.
	uriReasonEmpty uriReason = iota + 1
	// uriReasonTooLong: the URI exceeds the byte limit.
	uriReasonTooLong
	// uriReasonNotAbsolute: the URI does not start with an RFC 3986 scheme
	// (a letter, then letters, digits, '+', '-' or '.', then ':').
	uriReasonNotAbsolute
	// uriReasonCredentials: the authority carries userinfo (an '@').
	uriReasonCredentials
	// uriReasonInvalidUTF8: the URI bytes are not valid UTF-8.
	uriReasonInvalidUTF8
	// uriReasonBadEscape: a '%' is not followed by two hex digits.
	uriReasonBadEscape
	// uriReasonControlOrSpace: an ASCII control character (including DEL)
	// or a space.
	uriReasonControlOrSpace
	// uriReasonReservedScheme: the scheme is mcp-warning, in any letter case.
	uriReasonReservedScheme
)

var uriReasonText = [...]string{
	uriReasonEmpty:          "is empty",
	uriReasonTooLong:        "exceeds the byte limit",
	uriReasonNotAbsolute:    "is not absolute (no valid scheme)",
	uriReasonCredentials:    "carries credentials (userinfo) in its authority",
	uriReasonInvalidUTF8:    "is not valid UTF-8",
	uriReasonBadEscape:      "has a '%' not followed by two hex digits",
	uriReasonControlOrSpace: "contains an ASCII control character or a space",
	uriReasonReservedScheme: "uses the reserved mcp-warning scheme",
}

// String describes the rule.
func (r uriReason) String() string {
	return enumText(uriReasonText[:], r, "uriReason")
}

// uriError reports a URI (request, definition, template or target) that
// breaks a validity rule. It never quotes the URI, which may be hostile or
// private; Offset locates the offending byte instead.
type uriError struct {
	// Reason is the rule that was broken.
	Reason uriReason
	// Offset is the byte offset of the offending byte, or -1 when the rule
	// concerns the URI as a whole (empty, too long, not absolute).
	Offset int
}

// Error describes the broken rule without quoting the URI.
func (e *uriError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("URI %s (at byte %d)", e.Reason, e.Offset)
	}
	return "URI " + e.Reason.String()
}

func uriErr(r uriReason, off int) error { return &uriError{Reason: r, Offset: off} }

// checkURI applies the URI rules (non-empty, at most maxBytes bytes, absolute,
// no userinfo, valid UTF-8, every '%' followed by two hex digits, no ASCII
// control character or space, not the mcp-warning scheme; see uriReason)
// and returns a *uriError or nil. It never normalises: a URI is either
// accepted byte for byte or rejected. Byte-level rules are reported at the
// first offending byte, before the structural rules.
func checkURI(s string, maxBytes int) error {
	if s == "" {
		return uriErr(uriReasonEmpty, -1)
	}
	if len(s) > maxBytes {
		return uriErr(uriReasonTooLong, -1)
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c <= ' ' || c == 0x7f:
			return uriErr(uriReasonControlOrSpace, i)
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return uriErr(uriReasonBadEscape, i)
			}
			i += 3
			continue
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				return uriErr(uriReasonInvalidUTF8, i)
			}
			i += n
			continue
		}
		i++
	}
	n := schemeLen(s)
	if n == 0 {
		return uriErr(uriReasonNotAbsolute, -1)
	}
	if strings.EqualFold(s[:n], reservedScheme) {
		return uriErr(uriReasonReservedScheme, 0)
	}
	if lo, hi, ok := authority(s, n); ok {
		if at := strings.IndexByte(s[lo:hi], '@'); at >= 0 {
			return uriErr(uriReasonCredentials, lo+at)
		}
	}
	return nil
}

// schemeLen returns the length of s's scheme (without the ':'), or 0 when s
// does not start with one.
func schemeLen(s string) int {
	if s == "" || !isAlpha(s[0]) {
		return 0
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ':':
			return i
		case isAlpha(c) || isDigit(c) || c == '+' || c == '-' || c == '.':
		default:
			return 0
		}
	}
	return 0
}

// authority returns the bounds of the authority of s, whose scheme has
// length n: after "scheme://", up to the next '/', '?' or '#'. ok is false
// when s has no authority (an opaque or rootless URI such as urn:x:y).
func authority(s string, n int) (lo, hi int, ok bool) {
	lo = n + 1
	if !strings.HasPrefix(s[lo:], "//") {
		return 0, 0, false
	}
	lo += 2
	hi = lo
	for hi < len(s) && s[hi] != '/' && s[hi] != '?' && s[hi] != '#' {
		hi++
	}
	return lo, hi, true
}

// splitURI cuts a URI that passed checkURI into its origin (scheme and
// authority, "a://host" or "urn:"), its path, and its suffix (the query
// and fragment, from the first '?' or '#' on). Path segments never extend
// into the suffix.
func splitURI(s string) (origin, path, suffix string) {
	n := schemeLen(s)
	start := n + 1
	if _, hi, ok := authority(s, n); ok {
		start = hi
	}
	end := start
	for end < len(s) && s[end] != '?' && s[end] != '#' {
		end++
	}
	return s[:start], s[start:end], s[end:]
}

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case isDigit(c):
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
