package doctest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.phpboyscout.uk/mcp/resources/internal/benchpage"
)

// BENCHMARKS.md is one run's page (scripts/bench.sh): at most
// benchpage.MaxLines lines, no issue cited, and every commit it names is
// an ancestor of HEAD, so that its figures are of code in this history.
func TestBenchmarksPage(t *testing.T) {
	root := repoRoot(t)
	page, err := os.ReadFile(filepath.Join(root, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range benchpage.Lint(string(page)) {
		t.Errorf("BENCHMARKS.md: %s", p)
	}
	commits := benchpage.Commits(string(page))
	if len(commits) == 0 {
		t.Error("BENCHMARKS.md names no commit: it must name the one it was measured on")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git: the commits of BENCHMARKS.md are not checked")
	}
	if err := exec.Command("git", "-C", root, "rev-parse", "--verify", "-q", "HEAD").Run(); err != nil {
		t.Skipf("%s is not a git checkout with a HEAD: the commits of BENCHMARKS.md are not checked", root)
	}
	for _, c := range commits {
		err := exec.Command("git", "-C", root, "merge-base", "--is-ancestor", c, "HEAD").Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee) && ee.ExitCode() == 1:
			t.Errorf("BENCHMARKS.md names commit %s, which is not an ancestor of HEAD: regenerate it (scripts/bench.sh)", c)
		default:
			t.Errorf("BENCHMARKS.md names %s, which is no commit of this checkout (%v): regenerate it (scripts/bench.sh)", c, err)
		}
	}
}
