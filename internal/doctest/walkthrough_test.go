package doctest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"
)

// PageTimeout bounds one page's walkthrough, its first compile included.
const PageTimeout = 10 * time.Minute

// repoRoot is the checkout whose pages are run: MCPRES_DOCTEST_ROOT when set
// (a copy with one step changed, to see the runner fail), else this one.
func repoRoot(t *testing.T) string {
	if r := os.Getenv("MCPRES_DOCTEST_ROOT"); r != "" {
		return r
	}
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pages are README.md then docs/*.md, in name order.
func pages(t *testing.T, root string) []string {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(docs)
	out := []string{"README.md"}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		out = append(out, rel)
	}
	// MCPRES_DOCTEST_PAGES=README.md,docs/audit.md runs those pages alone.
	if only := os.Getenv("MCPRES_DOCTEST_PAGES"); only != "" {
		want := strings.Split(only, ",")
		out = slices.DeleteFunc(out, func(p string) bool { return !slices.Contains(want, p) })
	}
	return out
}

func parsePage(t *testing.T, root, page string) []Block {
	src, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := Parse(page, src)
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

// Every shell block of every page says whether it runs, and every output
// block belongs to one: checked always, with no service.
func TestEveryShellBlockIsMarked(t *testing.T) {
	root := repoRoot(t)
	runnable := 0
	for _, p := range pages(t, root) {
		for _, b := range parsePage(t, root, p) {
			if b.Kind == Runnable {
				runnable++
			}
		}
	}
	if runnable == 0 {
		t.Fatal("no runnable block in README.md and docs/")
	}
}

// TestWalkthroughs runs every runnable block of README.md and docs/*.md, in
// page order, one bash (set -euo pipefail) per page so that a page's steps
// share its variables, functions and directory, from the checkout's root,
// with GOBIN a fresh directory first on PATH (so `go install` there builds
// this checkout's binaries) and TMPDIR one the test removes. A block that exits non-zero, or whose standard
// output is not the output block shown after it, fails the test. It needs
// the native services (scripts/services.sh up, as the pages call it) and
// runs only under MCPRES_DOCTEST=run, as .ci/run's docs stage sets it.
func TestWalkthroughs(t *testing.T) {
	if os.Getenv("MCPRES_DOCTEST") != "run" {
		t.Skip("set MCPRES_DOCTEST=run to run the walkthroughs of README.md and docs/ (they start scripts/services.sh)")
	}
	root := repoRoot(t)
	gobin := t.TempDir()
	var walkthroughs, runs, compared, shown int
	for _, page := range pages(t, root) {
		blocks := parsePage(t, root, page)
		var run []Block
		for _, b := range blocks {
			if b.Kind == Runnable {
				run = append(run, b)
			} else {
				shown++
			}
		}
		if len(run) == 0 {
			continue
		}
		walkthroughs++
		// The README's blocks are what a newcomer runs first, and runs again:
		// they run twice on the same services, outputs compared both times.
		passes := 1
		if page == "README.md" {
			passes = 2
		}
		for pass := 1; pass <= passes; pass++ {
			runs += runWalkthrough(t, root, gobin, page, run, pass, &compared)
		}
	}
	// One line for .ci/run to print.
	fmt.Printf("doctest: %d walkthroughs, %d runnable blocks executed, %d outputs compared, %d shell blocks shown only (norun)\n",
		walkthroughs, runs, compared, shown)
	if walkthroughs == 0 {
		t.Fatal("no walkthrough ran")
	}
}

// runWalkthrough runs one page's runnable blocks in one bash, compares
// each shown output, and returns how many blocks ran.
func runWalkthrough(t *testing.T, root, gobin, page string, run []Block, pass int, compared *int) (runs int) {
	t.Helper()
	start := time.Now()
	outs, errs, status := runPage(t, root, gobin, run)
	for i, b := range run {
		out, ran := outs[i]
		if !ran {
			t.Errorf("%s:%d: never reached (an earlier step failed)", page, b.Line)
			break
		}
		if _, ended := outs[-1-i]; !ended {
			t.Errorf("%s:%d: the step failed (bash exit %d)\n--- step\n%s--- stdout\n%s--- stderr\n%s",
				page, b.Line, status, b.Text, out, errs[i])
			break
		}
		runs++
		if b.HasExpect {
			*compared++
			if !Match(b.Expect, out) {
				t.Errorf("%s:%d (run %d): the output is not the one shown\n--- shown\n%s--- got\n%s--- stderr\n%s",
					page, b.Line, pass, b.Expect, out, errs[i])
			}
		}
	}
	t.Logf("%s (run %d): %d steps in %s", page, pass, len(run), time.Since(start).Round(time.Millisecond))
	return runs
}

// Markers that frame each step's output on both streams: \x1e (record
// separator) never appears in the pages' outputs.
const (
	beginMark = "\x1edoctest-begin "
	endMark   = "\x1edoctest-end "
)

// runPage runs one page's steps in one bash and returns each step's
// standard output and error by index (and -1-index when the step ended),
// and bash's exit status.
func runPage(t *testing.T, root, gobin string, steps []Block) (map[int]string, map[int]string, int) {
	var script strings.Builder
	// Background processes a page starts (a server) end with it.
	script.WriteString("set -euo pipefail\ntrap 'jobs -p | xargs -r kill 2>/dev/null || true' EXIT\n")
	for i, b := range steps {
		fmt.Fprintf(&script, "printf '\\036doctest-begin %d\\n'; printf '\\036doctest-begin %d\\n' >&2\n", i, i)
		script.WriteString(b.Text)
		fmt.Fprintf(&script, "\nprintf '\\036doctest-end %d\\n'; printf '\\036doctest-end %d\\n' >&2\n", i, i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), PageTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = root
	// TMPDIR: what the pages' mktemp makes is removed with the test.
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "PATH="+gobin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"TMPDIR="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	status := 0
	if err := cmd.Run(); err != nil {
		status = -1
		if ee, ok := err.(*exec.ExitError); ok {
			status = ee.ExitCode()
		}
		if ctx.Err() != nil {
			t.Errorf("the page's steps ran over %s", PageTimeout)
		}
	}
	// Whatever a step left running in the page's process group ends here.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return split(stdout.String()), split(stderr.String()), status
}

// split cuts a stream at the markers: index i for step i's text, -1-i
// present when step i ended.
func split(s string) map[int]string {
	out := map[int]string{}
	for _, chunk := range strings.Split(s, beginMark)[1:] {
		head, rest, _ := strings.Cut(chunk, "\n")
		i, err := strconv.Atoi(head)
		if err != nil {
			continue
		}
		text, after, ended := strings.Cut(rest, endMark)
		out[i] = text
		if ended && strings.HasPrefix(after, strconv.Itoa(i)+"\n") {
			out[-1-i] = ""
		}
	}
	return out
}

// linkRE finds the targets of inline Markdown links.
var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// slug is GitHub's anchor of a heading: lower case, punctuation dropped,
// spaces as hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ' || r == '-':
			b.WriteByte('-')
		case r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the heading anchors of a Markdown file.
func anchors(t *testing.T, path string) map[string]bool {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fence := false
	for _, l := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " "), "```") {
			fence = !fence
		}
		if !fence && strings.HasPrefix(l, "#") {
			out[slug(strings.TrimSpace(strings.TrimLeft(l, "#")))] = true
		}
	}
	return out
}

// Every relative link of README.md and docs/ names a file of the checkout
// and, with a #fragment, a heading of that file: a page moved or a section
// renamed breaks no link unnoticed.
func TestLinksResolve(t *testing.T) {
	root := repoRoot(t)
	links := 0
	for _, page := range append(pages(t, root), "BENCHMARKS.md") {
		src, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range linkRE.FindAllStringSubmatch(string(src), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			file, frag, _ := strings.Cut(target, "#")
			path := filepath.Join(root, filepath.Dir(page), file)
			if file == "" {
				path = filepath.Join(root, page)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %s: no such file", page, target)
				continue
			}
			if frag != "" && strings.HasSuffix(path, ".md") && !anchors(t, path)[frag] {
				t.Errorf("%s: link %s: no heading with that anchor", page, target)
			}
		}
	}
	if links == 0 {
		t.Fatal("no relative link found")
	}
}

// docs/layout.md has a row for every top-level directory of the checkout.
func TestLayoutNamesEveryDirectory(t *testing.T) {
	root := repoRoot(t)
	layout, err := os.ReadFile(filepath.Join(root, "docs", "layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || e.Name() == "bin" {
			continue
		}
		if !bytes.Contains(layout, []byte("| `"+e.Name()+"/")) && !bytes.Contains(layout, []byte("`"+e.Name()+"/`")) {
			t.Errorf("docs/layout.md has no row for %s/", e.Name())
		}
	}
}

// Every package of the module is named in docs/layout.md as `DIR/`, and
// every directory a row names as `DIR/` exists: a package added, moved or
// removed changes the page.
func TestLayoutNamesEveryPackage(t *testing.T) {
	root := repoRoot(t)
	layout, err := os.ReadFile(filepath.Join(root, "docs", "layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	list := exec.Command("go", "list", "-f", "{{.Dir}}", "./...")
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel)
		if !bytes.Contains(layout, []byte("`"+rel+"/`")) && !strings.HasPrefix(rel, "integration/") && !strings.Contains(rel, "/internal/") && !strings.HasPrefix(rel, "examples/") && !strings.HasPrefix(rel, "internal/benchpage/") {
			t.Errorf("docs/layout.md names no `%s/`", rel)
		}
	}
	for _, line := range strings.Split(string(layout), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for _, m := range regexp.MustCompile("`([a-z][a-z0-9_/-]*)/`").FindAllStringSubmatch(cells[1], -1) {
			if fi, err := os.Stat(filepath.Join(root, m[1])); err != nil || !fi.IsDir() {
				t.Errorf("docs/layout.md has a row for `%s/`, which is no directory", m[1])
			}
		}
	}
}

// The README's test command is what .ci/run runs: `go test -race` over
// every package, the integration suite included.
func TestReadmeTestCommandIsWhatCIRuns(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, test, ok := strings.Cut(string(readme), "\n## Test\n")
	if !ok || !strings.Contains(test, "```sh norun\ngo test -race ./...\n```") {
		t.Fatal("README.md's Test section does not start with the block `go test -race ./...`")
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`go test -race "${pkgs[@]}"`,                       // every package but the integration suite
		`go test -race -count=1 -v "$@" ./integration/...`, // and the suite
		`mapfile -t pkgs < <(go list ./... | grep -Ev '/integration(/|$)'`,
	} {
		if !bytes.Contains(ci, []byte(want)) {
			t.Errorf(".ci/run no longer runs %s", want)
		}
	}
}

// Every ```json block of README.md and docs/ (the MCP client snippets a
// reader pastes into a host's configuration) is valid JSON.
func TestJSONBlocksParse(t *testing.T) {
	root := repoRoot(t)
	n := 0
	for _, page := range pages(t, root) {
		src, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		rest := string(src)
		for {
			_, after, ok := strings.Cut(rest, "```json\n")
			if !ok {
				break
			}
			block, tail, _ := strings.Cut(after, "\n```")
			rest = tail
			n++
			if !json.Valid([]byte(block)) {
				t.Errorf("%s: a json block is not valid JSON:\n%s", page, block)
			}
		}
	}
	if n == 0 {
		t.Fatal("no json block found")
	}
}
