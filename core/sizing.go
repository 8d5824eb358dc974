package core

import (
	"unicode/utf8"

	"go.phpboyscout.uk/mcp/resources/internal/itemsize"
	"go.phpboyscout.uk/mcp/resources/internal/jsonsize"
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

// jsonStringLen returns the encoded length of s as a JSON string, quotes
// included, exactly as encoding/json writes it with SetEscapeHTML(false).
func jsonStringLen(s string) int { return jsonsize.StringLen(s) }

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

// itemEncodedSize is the exact encoded size of one content entry:
// {"uri":U,"mimeType":M,"text":T} or {"uri":U,"mimeType":M,"blob":B}, with
// ,"_meta":META before the closing brace when meta is set. The formula is
// [itemsize.Exact], which the go-sdk adapter's sizer is too.
func itemEncodedSize(uri string, p ResourcePayload, meta []byte) int64 {
	return itemsize.Exact(itemsize.Item{URI: uri, MIMEType: p.mimeType, Text: p.text, Blob: p.blob, IsBlob: p.kind == payloadBlob, Meta: meta})
}

// resultEnvelope is the fixed JSON around a read result's parts:
// {"_meta":META,"contents":[ITEMS]}
const resultEnvelope = `{"_meta":,"contents":[]}`
