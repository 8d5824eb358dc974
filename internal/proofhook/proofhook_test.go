package proofhook_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Nothing but the store reads the switch, and nothing but tests set it:
// the proof cannot be turned off in a server or a host.
func TestOnlyTheStoreAndTestsNameTheSwitch(t *testing.T) {
	root := filepath.Join("..", "..")
	const path = `"go.phpboyscout.uk/mcp/resources/internal/proofhook"`
	var importers []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(src), path) {
			importers = append(importers, filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator))))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(importers) != 1 || importers[0] != "stores/postgres/proof.go" {
		t.Errorf("non-test files importing internal/proofhook: %q; want only stores/postgres/proof.go", importers)
	}
}
