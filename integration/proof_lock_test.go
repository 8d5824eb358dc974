package integration

import (
	"context"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// TestProofDoesNotWaitForAnUnrelatedLockedTable: the proof walks the
// catalog from the statements' own relations, so a table the statements
// never read, whose SELECT policy the walk used to deparse (taking a lock
// on it), does not hold the proof while a migration holds that table.
func TestProofDoesNotWaitForAnUnrelatedLockedTable(t *testing.T) {
	t.Parallel()
	url, admin := newDocsDB(t)
	for _, sql := range []string{
		`CREATE TABLE unrelated (id text PRIMARY KEY, owner text NOT NULL)`,
		`ALTER TABLE unrelated ENABLE ROW LEVEL SECURITY`,
		`CREATE POLICY unrelated_read ON unrelated FOR SELECT TO docs_reader USING (owner = current_setting('mcp.principal', true))`,
	} {
		if _, err := admin.Exec(t.Context(), sql); err != nil {
			t.Fatalf("exec %q: %v", sql, err)
		}
	}
	src, err := postgres.NewSource(newPool(t, url, nil), postgres.SourceOptions{Name: "docs", Role: "docs_reader"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Binding(postgres.SQLBinding{
		Definition: core.ResourceDefinition{URITemplate: "doc://tenants/{tenant}/documents/{id}", Name: "document"},
		Plan: `SELECT d.id AS key, d.xmin AS version, d.content_type AS mime
			FROM documents d WHERE d.tenant_id = $tenant AND d.id::text = $id`,
		Body: `SELECT d.body, d.xmin AS version FROM documents d WHERE d.id::text = $key`,
	}); err != nil {
		t.Fatal(err)
	}
	if err := src.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	lock, err := admin.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Rollback(context.Background()) }()
	if _, err := lock.Exec(t.Context(), `LOCK TABLE unrelated IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := src.Prove(ctx); err != nil {
		t.Fatalf("Prove while an unrelated table is locked: %v", err)
	}
}
