package memory

import (
	"mime"
	"strings"
	"unicode/utf8"
)

func validUTF8(b []byte) bool { return utf8.Valid(b) }

// validMediaType accepts what the gateway accepts as an item's MIME type: a
// type/subtype with optional parameters, at most 255 bytes.
func validMediaType(s string) bool {
	if s == "" || len(s) > 255 || !strings.Contains(s, "/") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] == 0x7f {
			return false
		}
	}
	_, _, err := mime.ParseMediaType(s)
	return err == nil
}
