package core

import (
	"math/bits"
	"unicode/utf8"
)

// sizer adds up the exact length of JSON as encoding/json writes it with
// HTML escaping off (the go-sdk's encoding): no value is built.
type sizer struct{ n int }

func (s *sizer) lit(x string) { s.n += len(x) }
func (s *sizer) str(x string) { s.n += jsonStringLen(x) }

// jsonSafe marks the ASCII bytes encoding/json copies unescaped.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// asciiWidth is the encoded width of each ASCII byte; 0 marks the start of
// a multi-byte sequence.
var asciiWidth = func() (t [256]uint8) {
	for b := range utf8.RuneSelf {
		switch {
		case jsonSafe[b]:
			t[b] = 1
		case b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
			t[b] = 2
		default:
			t[b] = 6 // \u00XX
		}
	}
	return t
}()

// jsonStringLen returns the encoded length of s as a JSON string, quotes
// included, exactly as encoding/json writes it with SetEscapeHTML(false).
// ASCII is sized eight bytes at a time; a word holding a control character or
// a byte of a multi-byte sequence is sized byte by byte.
func jsonStringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		stop := len(s)
		if i+8 <= len(s) {
			if w, ok := asciiWordLen(load64(s, i)); ok {
				n += w
				i += 8
				continue
			}
			stop = i + 8
		}
		for i < stop {
			if w := asciiWidth[s[i]]; w != 0 {
				n += int(w)
				i++
				continue
			}
			c, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case c == utf8.RuneError && size == 1:
				n += 6 // \ufffd
			case c == '\u2028' || c == '\u2029':
				n += 6
			default:
				n += size
			}
			i += size
		}
	}
	return n
}

const (
	lsb  = 0x0101010101010101
	msb  = 0x8080808080808080
	low7 = 0x7f7f7f7f7f7f7f7f
)

func load64(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// zeroBytes sets the high bit of exactly those bytes of x that are zero.
func zeroBytes(x uint64) uint64 { return ^(((x & low7) + low7) | x | low7) }

// asciiWordLen sizes eight ASCII bytes without control characters: each '"'
// or '\\' takes two bytes, everything else one. ok is false for a word it
// cannot size.
func asciiWordLen(w uint64) (n int, ok bool) {
	// For ASCII, a byte is below 0x20 exactly when bits 5 and 6 are clear.
	if w&msb != 0 || zeroBytes(w&(lsb*0x60)) != 0 {
		return 0, false
	}
	escaped := zeroBytes(w^(lsb*'"')) | zeroBytes(w^(lsb*'\\'))
	return 8 + bits.OnesCount64(escaped), true
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as encoding/json writes it with HTML escaping off.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// base64Len is the padded standard base64 length of n bytes.
func base64Len(n int64) int64 { return (n + 2) / 3 * 4 }

// itemEncodedSize is the exact encoded size of one content entry:
// {"uri":U,"mimeType":M,"text":T} or {"uri":U,"mimeType":M,"blob":B}, with
// ,"_meta":META before the closing brace when meta is set.
func itemEncodedSize(uri string, p ResourcePayload, meta []byte) int64 {
	var s sizer
	s.lit(`{"uri":`)
	s.str(uri)
	s.lit(`,"mimeType":`)
	s.str(p.mimeType)
	n := int64(0)
	if p.kind == payloadBlob {
		s.lit(`,"blob":""`)
		n = base64Len(int64(len(p.blob)))
	} else {
		s.lit(`,"text":`)
		s.str(p.text)
	}
	if meta != nil {
		s.lit(`,"_meta":`)
		s.n += len(meta)
	}
	s.lit(`}`)
	return int64(s.n) + n
}

// resultEnvelope is the fixed JSON around a read result's parts:
// {"_meta":META,"contents":[ITEMS]}
const resultEnvelope = `{"_meta":,"contents":[]}`
