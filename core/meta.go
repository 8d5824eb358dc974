package core

import (
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// checkMetaText checks the text of definition metadata that is already known
// to be valid JSON. Metadata is listed byte for byte, so it must be valid
// UTF-8 everywhere (keys, values, nested values) and, following I-JSON
// (RFC 7493, section 2.1), its \u escapes must denote Unicode text: a high
// surrogate escape must be followed by a low one, and a low one must follow
// a high one. encoding/json would decode an unpaired surrogate to U+FFFD,
// but other JSON parsers reject it or keep the lone surrogate, so it is
// refused rather than listed. Escapes of valid characters (such as \u00ff)
// are accepted unchanged.
func checkMetaText(b []byte) error {
	if !utf8.Valid(b) {
		return errors.New("must be valid UTF-8")
	}
	// In valid JSON a backslash occurs only inside a string, and \u is
	// always followed by four hex digits.
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		i++ // the escaped character
		if b[i] != 'u' {
			continue
		}
		r := hexRune(b[i+1 : i+5])
		i += 4
		if !utf16.IsSurrogate(r) {
			continue
		}
		if r >= 0xdc00 || i+6 >= len(b) || b[i+1] != '\\' || b[i+2] != 'u' {
			return errors.New("must not hold an unpaired surrogate escape")
		}
		if lo := hexRune(b[i+3 : i+7]); lo < 0xdc00 || lo > 0xdfff {
			return errors.New("must not hold an unpaired surrogate escape")
		}
		i += 6
	}
	return nil
}

// hexRune decodes the four hex digits of a \u escape.
func hexRune(h []byte) rune {
	n, err := strconv.ParseUint(string(h), 16, 16)
	if err != nil {
		return utf8.RuneError // unreachable for valid JSON
	}
	return rune(n)
}
