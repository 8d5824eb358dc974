package core

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreImportsOnlyStandardLibrary proves the dependency rule: core and
// everything it pulls in, tests excluded, is the standard library or this
// module's internal packages.
func TestCoreImportsOnlyStandardLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const internal = "go.phpboyscout.uk/mcp/resources/internal/"
	const self = "go.phpboyscout.uk/mcp/resources/core"
	n := 0
	for line := range strings.Lines(string(out)) {
		path, std, _ := strings.Cut(strings.TrimSpace(line), " ")
		n++
		if std == "true" || path == self || strings.HasPrefix(path, internal) {
			continue
		}
		t.Errorf("core depends on %s, which is neither the standard library nor internal/", path)
	}
	if n < 10 {
		t.Fatalf("go list returned only %d packages; the check did not run", n)
	}
}
