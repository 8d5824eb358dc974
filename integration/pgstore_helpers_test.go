package integration

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/migrations"
)

// pgDB is one test's database with the reference schema applied: admin is a
// pool of the harness's (superuser) role for setting up rows, url its address.
type pgDB struct {
	url   string
	admin *pgxpool.Pool
}

// newPGDB returns a fresh database of t's own with the reference schema.
func newPGDB(t testing.TB) *pgDB {
	t.Helper()
	dbURL := harness.Postgres(t)
	applyMigrations(t, dbURL)
	return &pgDB{url: dbURL, admin: newPool(t, dbURL, nil)}
}

// applyMigrations applies the reference schema to the database at dbURL.
func applyMigrations(t testing.TB, dbURL string) []int64 {
	t.Helper()
	db := openSQL(t, dbURL)
	applied, err := migrations.Apply(t.Context(), db)
	if err != nil {
		t.Fatalf("apply migrations: %v", err)
	}
	return applied
}

func openSQL(t testing.TB, dbURL string) *sql.DB {
	t.Helper()
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatalf("parse %s: %v", dbURL, err)
	}
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// newPool opens a pool on dbURL; configure, when not nil, adjusts its config.
func newPool(t testing.TB, dbURL string, configure func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatalf("parse %s: %v", dbURL, err)
	}
	if configure != nil {
		configure(cfg)
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// exec runs one statement as the admin role.
func (d *pgDB) exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	if _, err := d.admin.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("exec %q: %v", sql, err)
	}
}

// project creates a project.
func (d *pgDB) project(t testing.TB, id string) {
	t.Helper()
	d.exec(t, `INSERT INTO mcpres.projects (id, title) VALUES ($1, $2)`, id, "Project "+id)
}

// textAsset creates a text asset with an inline body.
func (d *pgDB) textAsset(t testing.TB, project, id, body string) {
	t.Helper()
	d.exec(t, `INSERT INTO mcpres.assets (project_id, id, name, title, mime_type, body, body_is_text)
		VALUES ($1, $2, $3, $4, 'text/plain', $5, true)`, project, id, id+".txt", "Asset "+id, []byte(body))
}

// grant gives principal discover and read on a project (asset "") or one asset.
func (d *pgDB) grant(t testing.TB, principal, project, asset string) {
	t.Helper()
	var a any
	if asset != "" {
		a = asset
	}
	d.exec(t, `INSERT INTO mcpres.grants (principal, project_id, asset_id, can_discover, can_read, disclose_issue_uri)
		VALUES ($1, $2, $3, true, true, true)`, principal, project, a)
}

// revoke deletes principal's grants in project (on asset, or the project's own when asset is "").
func (d *pgDB) revoke(t testing.TB, principal, project, asset string) {
	t.Helper()
	d.exec(t, `DELETE FROM mcpres.grants WHERE principal = $1 AND project_id = $2 AND asset_id IS NOT DISTINCT FROM NULLIF($3, '')`,
		principal, project, asset)
}
