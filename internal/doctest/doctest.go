// Package doctest finds the shell walkthroughs of the project's Markdown
// pages and checks their shown outputs, so that a page whose steps no longer
// work fails CI (internal/doctest's TestWalkthroughs runs them).
//
// A fenced block whose language is sh, bash, shell or console is a shell
// block, and its info string must say what to do with it:
//
//	```sh runnable        run it, in page order, in one shell per page
//	```sh norun           shown only (it needs Docker, sudo, a host's own data…)
//
// A runnable block may be followed (prose between is fine) by its expected
// standard output, in a block whose info string is "text output". In an
// output, "…" stands for any text within one line (an id, a port, a time),
// and a line that is only "…" for any number of lines, none included.
// Trailing spaces and trailing blank lines are ignored.
package doctest

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// Kind is what a block of a page is for.
type Kind int

// The kinds of block [Parse] returns.
const (
	// Runnable is a shell block to run.
	Runnable Kind = iota + 1
	// NoRun is a shell block shown only.
	NoRun
	// Output is the expected standard output of the runnable block before it.
	Output
)

// MaxPageBytes bounds the pages [Parse] reads.
const MaxPageBytes = 1 << 20

// Block is one fenced block of a page that [Parse] keeps.
type Block struct {
	// Kind says what the block is for.
	Kind Kind
	// Line is the 1-based line of the block's opening fence.
	Line int
	// Text is the block's content, each line ending in a newline.
	Text string
	// Expect is, for a runnable block, the text of the output block that
	// follows it; HasExpect says whether there is one.
	Expect    string
	HasExpect bool
}

var shellLanguages = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// Parse returns the runnable and norun blocks of one Markdown page, in page
// order, each runnable one with its expected output. An unmarked shell
// block, an output block that follows no runnable block, two outputs for
// one block and an unclosed fence are errors, named by page and line.
func Parse(page string, src []byte) ([]Block, error) {
	if len(src) > MaxPageBytes {
		return nil, fmt.Errorf("%s: over %d bytes", page, MaxPageBytes)
	}
	var (
		blocks  []Block
		fence   string // the open fence's backticks, "" outside a block
		indent  int    // the open fence's indentation, stripped from its lines
		info    []string
		start   int
		body    strings.Builder
		lastRun = -1 // index in blocks of the runnable block an output may follow
	)
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 64<<10), MaxPageBytes)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		trimmed := strings.TrimLeft(text, " ")
		if fence == "" {
			if !strings.HasPrefix(trimmed, "```") {
				continue
			}
			n := len(trimmed) - len(strings.TrimLeft(trimmed, "`"))
			fence = trimmed[:n]
			indent = len(text) - len(trimmed)
			info = strings.Fields(trimmed[n:])
			start = line
			body.Reset()
			continue
		}
		if closing := strings.TrimRight(trimmed, " "); !strings.HasPrefix(closing, fence) || strings.Trim(closing, "`") != "" {
			// Content: drop the indentation of an indented (list item) fence.
			cut := min(indent, len(text)-len(trimmed))
			body.WriteString(text[cut:])
			body.WriteByte('\n')
			continue
		}
		fence = ""
		lang := ""
		if len(info) > 0 {
			lang = info[0]
		}
		mark := ""
		if len(info) > 1 {
			mark = info[1]
		}
		switch {
		case shellLanguages[lang]:
			switch mark {
			case "runnable":
				blocks = append(blocks, Block{Kind: Runnable, Line: start, Text: body.String()})
				lastRun = len(blocks) - 1
			case "norun":
				blocks = append(blocks, Block{Kind: NoRun, Line: start, Text: body.String()})
				lastRun = -1
			default:
				return nil, fmt.Errorf("%s:%d: a %s block must be marked runnable or norun", page, start, lang)
			}
		case lang == "text" && mark == "output":
			if lastRun < 0 {
				return nil, fmt.Errorf("%s:%d: an output block must follow a runnable block", page, start)
			}
			blocks[lastRun].Expect, blocks[lastRun].HasExpect = body.String(), true
			lastRun = -1
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", page, err)
	}
	if fence != "" {
		return nil, fmt.Errorf("%s:%d: the block is never closed", page, start)
	}
	return blocks, nil
}

// Match reports whether got, a block's standard output, is what expect
// shows, with its "…" placeholders. An expect that is not UTF-8 matches
// nothing.
func Match(expect, got string) bool {
	re, err := pattern(expect)
	return err == nil && re.MatchString(normalize(got))
}

// normalize trims trailing spaces of every line and trailing blank lines,
// and ends a non-empty text with one newline.
func normalize(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	s = strings.TrimRight(strings.Join(lines, "\n"), "\n")
	if s == "" {
		return ""
	}
	return s + "\n"
}

// pattern is the anchored regular expression of an expected output.
func pattern(expect string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString(`\A`)
	expect = normalize(expect)
	for _, l := range strings.SplitAfter(expect, "\n") {
		if l == "" {
			continue
		}
		l = strings.TrimSuffix(l, "\n")
		if l == "…" {
			b.WriteString(`(?:[^\n]*\n)*?`)
			continue
		}
		parts := strings.Split(l, "…")
		for i, p := range parts {
			if i > 0 {
				b.WriteString(`[^\n]*?`)
			}
			b.WriteString(regexp.QuoteMeta(p))
		}
		b.WriteString(`\n`)
	}
	b.WriteString(`\z`)
	return regexp.Compile(b.String())
}
