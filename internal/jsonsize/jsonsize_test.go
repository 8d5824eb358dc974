package jsonsize

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

func encodedLen(t testing.TB, s string) int {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return buf.Len() - 1 // Encode appends a newline
}

func check(t testing.TB, s string) {
	t.Helper()
	if got, want := StringLen(s), encodedLen(t, s); got != want {
		t.Fatalf("StringLen(%q) = %d, encoding/json writes %d", s, got, want)
	}
}

func TestStringLenMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "a", `"`, `\`, "\x00", "\x1f", "\x7f", "\b\f\n\r\t", "<>&", "é", "\u2028\u2029",
		"\xff", "\xe2\x80", "abcdefgh\xffabcdefgh", "0123456789abcdef\u00e9xyz", strings.Repeat("abcdefgh", 9) + `"`,
		strings.Repeat("é", 20), "abcdefg\u2028bcdefgh", "abcdefgh\xe2\x80\xa8"} {
		check(t, s)
	}
	// Random strings over an alphabet of every kind of byte, at every
	// alignment of a special byte and of a multi-byte sequence.
	alphabet := []string{"a", "Z", " ", `"`, `\`, "\n", "\x01", "\x7f", "é", "€", "𝄞", "\u2028", "\xff", "\xc3", "\xe2\x80"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(48) {
			if r.IntN(4) == 0 {
				b.WriteString(alphabet[r.IntN(len(alphabet))])
			} else {
				b.WriteByte('a' + byte(r.IntN(26)))
			}
		}
		check(t, b.String())
	}
}

func FuzzStringLen(f *testing.F) {
	f.Add("abcdefgh\"ijklmnop\xff\u2028é")
	f.Fuzz(func(t *testing.T, s string) { check(t, s) })
}

func BenchmarkStringLen(b *testing.B) {
	for name, s := range map[string]string{
		"ascii-1KiB": strings.Repeat("benchmark text ", 64),
		"prose-1KiB": strings.Repeat("The quick brown fox jumps over the lazy dog, again & again <3 and once more.\n", 13),
		"json-1KiB":  strings.Repeat(`{"id":42,"title":"Hello, world","tags":["a","b"]}`, 20),
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				StringLen(s)
			}
		})
	}
}
