package doctest

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseKeepsMarkedBlocksWithTheirOutputs(t *testing.T) {
	page := "# t\n\n```sh runnable\necho hi\n```\n\nprose\n\n```text output\nhi\n```\n\n" +
		"```go\nfunc f() {}\n```\n\n  ```sh norun\n  docker compose up\n  ```\n\n```sh runnable\ntrue\n```\n"
	blocks, err := Parse("p.md", []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 3 {
		t.Fatalf("got %d blocks, want 3: %+v", len(blocks), blocks)
	}
	if b := blocks[0]; b.Kind != Runnable || b.Line != 3 || b.Text != "echo hi\n" || !b.HasExpect || b.Expect != "hi\n" {
		t.Errorf("first block: %+v", b)
	}
	if b := blocks[1]; b.Kind != NoRun || b.Text != "docker compose up\n" {
		t.Errorf("second block: %+v", b)
	}
	if b := blocks[2]; b.Kind != Runnable || b.HasExpect {
		t.Errorf("third block: %+v", b)
	}
}

func TestParseRefusesWhatCannotBeChecked(t *testing.T) {
	for name, page := range map[string]string{
		"unmarked shell block":         "```sh\necho hi\n```\n",
		"unmarked console block":       "```console\n$ echo hi\n```\n",
		"output after nothing":         "```text output\nhi\n```\n",
		"output after a norun block":   "```sh norun\nx\n```\n```text output\nhi\n```\n",
		"two outputs for one block":    "```sh runnable\nx\n```\n```text output\na\n```\n```text output\nb\n```\n",
		"a block that is never closed": "```sh runnable\necho hi\n",
	} {
		if _, err := Parse("p.md", []byte(page)); err == nil {
			t.Errorf("%s: no error", name)
		} else if !strings.HasPrefix(err.Error(), "p.md:") {
			t.Errorf("%s: %v does not name the page", name, err)
		}
	}
}

func TestMatchPlaceholders(t *testing.T) {
	for _, c := range []struct {
		expect, got string
		want        bool
	}{
		{"a\nb\n", "a\nb\n", true},
		{"a\nb\n", "a\nb  \n\n\n", true},
		{"a\nb\n", "a\nc\n", false},
		{"a\n", "a\nb\n", false},
		{"port 127.0.0.1:…\n", "port 127.0.0.1:38080\n", true},
		{"port 127.0.0.1:…\n", "port 127.0.0.1:38080\nmore\n", false},
		{"revision …, 9 definitions\n", "revision a3160b51, 9 definitions\n", true},
		{"first\n…\nlast\n", "first\nlast\n", true},
		{"first\n…\nlast\n", "first\n1\n2\nlast\n", true},
		{"first\n…\nlast\n", "first\n1\n2\n", false},
		{"a.b*c\n", "aXb*c\n", false},
		{"", "", true},
		{"", "x\n", false},
	} {
		if got := Match(c.expect, c.got); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.expect, c.got, got, c.want)
		}
	}
}

// FuzzParse: no page makes Parse panic, and every block it keeps starts
// within the page.
func FuzzParse(f *testing.F) {
	f.Add("```sh runnable\necho hi\n```\n```text output\nhi\n```\n")
	f.Add("  ````console norun\n$ x\n  ````\n")
	f.Add("```\n```sh\n")
	f.Fuzz(func(t *testing.T, page string) {
		blocks, err := Parse("f.md", []byte(page))
		if err != nil {
			return
		}
		lines := strings.Count(page, "\n") + 1
		for _, b := range blocks {
			if b.Line < 1 || b.Line > lines {
				t.Fatalf("block at line %d of a %d-line page", b.Line, lines)
			}
		}
	})
}

// FuzzMatch: every output matches itself with no placeholder in it.
func FuzzMatch(f *testing.F) {
	f.Add("a\nb\n")
	f.Add("x … y\n")
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Contains(s, "…") || strings.ContainsAny(s, "\r\t") || !utf8.ValidString(s) {
			return
		}
		if !Match(s, s) {
			t.Fatalf("%q does not match itself", s)
		}
	})
}
