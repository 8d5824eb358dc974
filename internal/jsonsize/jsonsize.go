// Package jsonsize computes the length of a string as encoding/json writes
// it with HTML escaping off (the go-sdk's encoding), without writing it.
// core sizes results with it and the go-sdk adapter's sizer uses it too.
package jsonsize

import (
	"math/bits"
	"unicode/utf8"
)

// asciiWidth is the encoded width of each ASCII byte.
var asciiWidth = func() (t [utf8.RuneSelf]uint8) {
	for b := range utf8.RuneSelf {
		switch {
		case b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
			t[b] = 2
		case b < 0x20:
			t[b] = 6 // \u00XX
		default:
			t[b] = 1
		}
	}
	return t
}()

const (
	lsb  = 0x0101010101010101
	msb  = 0x8080808080808080
	low7 = 0x7f7f7f7f7f7f7f7f
)

// load64 is the little-endian word at s[i:i+8]; the compiler makes it one
// load.
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// zeroBytes sets the high bit of exactly those bytes of x that are zero.
func zeroBytes(x uint64) uint64 { return ^(((x & low7) + low7) | x | low7) }

// plain is zero when the word w is ASCII without control characters.
func plain(w uint64) uint64 {
	// For ASCII, a byte is below 0x20 exactly when bits 5 and 6 are clear.
	return w&msb | zeroBytes(w&(lsb*0x60))
}

// escaped marks, in the high bit of each byte, the '"' and '\\' bytes of
// the plain word w: each takes two bytes.
func escaped(w uint64) uint64 { return zeroBytes(w^(lsb*'"')) | zeroBytes(w^(lsb*'\\')) }

// StringLen returns the encoded length of s as a JSON string, quotes
// included, exactly as encoding/json writes it with SetEscapeHTML(false):
// '"', '\\', \b, \f, \n, \r and \t take two bytes, other control
// characters six (\u00XX), each invalid UTF-8 byte six (\ufffd), U+2028
// and U+2029 six, everything else its own length.
//
// ASCII without control characters is sized sixteen or eight bytes at a
// time, counting its '"' and '\\' in the word; the eight bytes from a word
// holding a control character or non-ASCII are sized one by one (a
// multi-byte sequence whole).
func StringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		if i+16 <= len(s) {
			if w0, w1 := load64(s, i), load64(s, i+8); plain(w0)|plain(w1) == 0 {
				n += 16 + bits.OnesCount64(escaped(w0)) + bits.OnesCount64(escaped(w1))
				i += 16
				continue
			}
		}
		if i+8 <= len(s) {
			if w := load64(s, i); plain(w) == 0 {
				n += 8 + bits.OnesCount64(escaped(w))
				i += 8
				continue
			}
		}
		for stop := min(i+8, len(s)); i < stop; {
			if b := s[i]; b < utf8.RuneSelf {
				n += int(asciiWidth[b])
				i++
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
				n += 6
			default:
				n += size
			}
			i += size
		}
	}
	return n
}
