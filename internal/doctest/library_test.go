package doctest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// hostPackages are the directories, under the checkout's root, of the
// packages a Go host programs against; stores/* is every store, so that a
// new one is covered without a change here.
var hostPackages = []string{"config", "core", "stores/*", "mcpsdk", "mcpsdk/oauth", "mcpsdk/audit"}

// exportedTypes returns, for each host package, its name and the exported
// types its non-test files declare, as "pkg.Type".
func exportedTypes(t *testing.T, root string) []string {
	t.Helper()
	var dirs []string
	for _, pat := range hostPackages {
		m, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range m {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				dirs = append(dirs, d)
			}
		}
	}
	var out []string
	for _, dir := range dirs {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for name, pkg := range pkgs {
			for _, f := range pkg.Files {
				for _, d := range f.Decls {
					g, ok := d.(*ast.GenDecl)
					if !ok || g.Tok != token.TYPE {
						continue
					}
					for _, s := range g.Specs {
						if ts := s.(*ast.TypeSpec); ts.Name.IsExported() {
							out = append(out, name+"."+ts.Name.Name)
						}
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// unnamed returns the names of names that page never writes as pkg.Type.
func unnamed(page string, names []string) []string {
	var missing []string
	for _, n := range names {
		if !regexp.MustCompile(`(^|[^\w.])` + regexp.QuoteMeta(n) + `\b`).MatchString(page) {
			missing = append(missing, n)
		}
	}
	return missing
}

// docs/library.md is where a Go host learns the API: every exported type of
// the packages a host programs against must be named there, qualified by
// its package (`postgres.Source`), so that a type added to the code without
// a line of the page fails here rather than being found by `go doc` alone.
func TestLibraryPageNamesEveryExportedType(t *testing.T) {
	root := repoRoot(t)
	names := exportedTypes(t, root)
	if len(names) < 50 || !slices.Contains(names, "core.ResourceBinding") || !slices.Contains(names, "oauth.Verifier") {
		t.Fatalf("found %d exported types (%v): the package walk is broken", len(names), names)
	}
	page, err := os.ReadFile(filepath.Join(root, "docs", "library.md"))
	if err != nil {
		t.Fatal(err)
	}
	if missing := unnamed(string(page), names); len(missing) > 0 {
		t.Errorf("docs/library.md names %d of %d exported types; add a line for each of these %d (qualified, such as `postgres.Source`):\n  %s",
			len(names)-len(missing), len(names), len(missing), strings.Join(missing, "\n  "))
	}
}

func TestUnnamedTellsAQualifiedNameFromAPartOfAnother(t *testing.T) {
	page := "`core.ResourceBinding` and `s3store.KeyListing`, `config.Sourced`, x.postgres.Source"
	got := unnamed(page, []string{"core.ResourceBinding", "s3store.KeyListing", "config.Source", "postgres.Source", "core.Resource"})
	if want := []string{"config.Source", "postgres.Source", "core.Resource"}; !slices.Equal(got, want) {
		t.Fatalf("unnamed: %v, want %v", got, want)
	}
}
