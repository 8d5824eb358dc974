package live

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLiveImportsOnlyStandardLibraryAndCore proves that the hub, like
// core, needs no SDK, driver or framework: the standard library, core and
// the module's internal packages only.
func TestLiveImportsOnlyStandardLibraryAndCore(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const module = "go.phpboyscout.uk/mcp/resources/"
	allowed := func(p string) bool {
		return p == module+"live" || p == module+"core" || strings.HasPrefix(p, module+"internal/")
	}
	n := 0
	for line := range strings.Lines(string(out)) {
		path, std, _ := strings.Cut(strings.TrimSpace(line), " ")
		n++
		if std != "true" && !allowed(path) {
			t.Errorf("live depends on %s", path)
		}
	}
	if n < 10 {
		t.Fatalf("go list returned only %d packages; the check did not run", n)
	}
}
