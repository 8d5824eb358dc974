package migrations

import (
	"io/fs"
	"strings"
	"testing"
)

// TestEveryMigrationHasUpAndDown proves each embedded file is a goose SQL
// migration with both directions, so goose never applies a file it cannot
// parse or roll back.
func TestEveryMigrationHasUpAndDown(t *testing.T) {
	names, err := fs.Glob(FS(), "*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("embedded migrations: %v, %d files", err, len(names))
	}
	for _, name := range names {
		b, err := fs.ReadFile(FS(), name)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if !strings.Contains(s, "-- +goose Up") || !strings.Contains(s, "-- +goose Down") {
			t.Errorf("%s lacks a goose Up or Down section", name)
		}
		if strings.Count(s, "-- +goose StatementBegin") != strings.Count(s, "-- +goose StatementEnd") {
			t.Errorf("%s has unbalanced StatementBegin/StatementEnd", name)
		}
	}
}

// TestVersionIsTheNewestFile proves Version reads the newest embedded version.
func TestVersionIsTheNewestFile(t *testing.T) {
	if got := Version(); got != 5 {
		t.Fatalf("Version() = %d, want 5 (00005_audit_removed.sql is the newest)", got)
	}
}
