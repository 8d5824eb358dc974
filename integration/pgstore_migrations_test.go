package integration

import (
	"database/sql"
	"slices"
	"sync"
	"testing"

	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/migrations"
)

// TestMigrationsApplyTwiceIsANoOp proves a second Apply changes nothing: it
// applies no version and leaves one record per version.
func TestMigrationsApplyTwiceIsANoOp(t *testing.T) {
	t.Parallel()
	dbURL := harness.Postgres(t)
	first := applyMigrations(t, dbURL)
	if want := migrations.Version(); len(first) == 0 || first[len(first)-1] != want {
		t.Fatalf("first apply applied %v, want up to version %d", first, want)
	}
	second := applyMigrations(t, dbURL)
	if len(second) != 0 {
		t.Fatalf("second apply applied %v, want nothing", second)
	}
	assertSchemaOnce(t, dbURL)
}

// TestMigrationsConcurrentAppliesDoNotCorrupt proves that applies racing on
// one database serialize on goose's lock (exactly one applies each version,
// the others find the schema current), and that applies racing in several
// databases of one cluster tolerate each other's CREATE ROLE.
func TestMigrationsConcurrentAppliesDoNotCorrupt(t *testing.T) {
	t.Parallel()
	const perDB = 4
	urls := []string{harness.Postgres(t), harness.Postgres(t), harness.Postgres(t)}
	dbs := make([]*sqlDBs, len(urls))
	for i, u := range urls {
		dbs[i] = &sqlDBs{url: u}
		for range perDB {
			dbs[i].dbs = append(dbs[i].dbs, openSQL(t, u))
		}
	}
	type outcome struct {
		db      int
		applied []int64
		err     error
	}
	results := make(chan outcome, len(urls)*perDB)
	var wg sync.WaitGroup
	for i, d := range dbs {
		for _, db := range d.dbs {
			wg.Go(func() {
				applied, err := migrations.Apply(t.Context(), db)
				results <- outcome{i, applied, err}
			})
		}
	}
	wg.Wait()
	close(results)
	appliedPerDB := make([][]int64, len(urls))
	for r := range results {
		if r.err != nil {
			t.Errorf("database %d: concurrent apply failed: %v", r.db, r.err)
			continue
		}
		appliedPerDB[r.db] = append(appliedPerDB[r.db], r.applied...)
	}
	for i, u := range urls {
		slices.Sort(appliedPerDB[i])
		want := make([]int64, 0, migrations.Version())
		for v := int64(1); v <= migrations.Version(); v++ {
			want = append(want, v)
		}
		if !slices.Equal(appliedPerDB[i], want) {
			t.Errorf("database %d: versions applied across %d racing applies = %v, want each of %v exactly once", i, perDB, appliedPerDB[i], want)
		}
		assertSchemaOnce(t, u)
	}
}

type sqlDBs struct {
	url string
	dbs []*sql.DB
}

// assertSchemaOnce checks that every version is recorded once and the
// reference tables, trigger and policies exist.
func assertSchemaOnce(t *testing.T, dbURL string) {
	t.Helper()
	conn := connect(t, dbURL)
	ctx := t.Context()
	var records, distinct int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT version_id) FROM `+migrations.VersionTable+` WHERE version_id > 0`).Scan(&records, &distinct); err != nil {
		t.Fatalf("read version table: %v", err)
	}
	if records != distinct || int64(distinct) != migrations.Version() {
		t.Fatalf("version table holds %d records of %d versions, want %d of each", records, distinct, migrations.Version())
	}
	var tables, policies, triggers int
	if err := conn.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM pg_tables WHERE schemaname = 'mcpres' AND rowsecurity),
		(SELECT count(*) FROM pg_policies WHERE schemaname = 'mcpres'),
		(SELECT count(*) FROM pg_trigger WHERE tgname = 'assets_bump_version')`).Scan(&tables, &policies, &triggers); err != nil {
		t.Fatalf("inspect schema: %v", err)
	}
	if tables != 3 || policies != 3 || triggers != 1 {
		t.Fatalf("schema has %d tables with RLS, %d policies, %d version triggers; want 3, 3, 1", tables, policies, triggers)
	}
}
