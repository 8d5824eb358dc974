package integration

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/integration/harness"
)

func connect(t *testing.T, dbURL string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func dbName(t *testing.T, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("parse %q: %v", dbURL, err)
	}
	return strings.TrimPrefix(u.Path, "/")
}

// TestPostgresSmoke proves the harness hands out a working database of the
// test's own: a table can be created, written with bind arguments and read
// back.
func TestPostgresSmoke(t *testing.T) {
	t.Parallel()
	dbURL := harness.Postgres(t)
	conn := connect(t, dbURL)
	ctx := t.Context()

	var current string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&current); err != nil {
		t.Fatalf("current_database: %v", err)
	}
	if want := dbName(t, dbURL); current != want {
		t.Fatalf("connected to database %q, want the harness's %q", current, want)
	}

	if _, err := conn.Exec(ctx, `CREATE TABLE smoke (id int PRIMARY KEY, body text NOT NULL)`); err != nil {
		t.Fatalf("create table: %v", err)
	}
	const body = "hello, \u00e9t\u00e9 \x01"
	if _, err := conn.Exec(ctx, `INSERT INTO smoke (id, body) VALUES ($1, $2)`, 7, body); err != nil {
		t.Fatalf("insert: %v", err)
	}
	var got string
	if err := conn.QueryRow(ctx, `SELECT body FROM smoke WHERE id = $1`, 7).Scan(&got); err != nil {
		t.Fatalf("select: %v", err)
	}
	if got != body {
		t.Fatalf("read back %q, want %q", got, body)
	}
}

// TestPostgresDatabaseDroppedAtCleanup proves a test's database is gone once
// the test ends, even while a connection to it is still open.
func TestPostgresDatabaseDroppedAtCleanup(t *testing.T) {
	t.Parallel()
	probe := harness.Postgres(t) // another fresh database on the same server; skips here when there is none
	var inner string
	var leaked *pgx.Conn
	t.Run("owner", func(t *testing.T) {
		dbURL := harness.Postgres(t)
		inner = dbName(t, dbURL)
		var err error
		leaked, err = pgx.Connect(t.Context(), dbURL) // deliberately left open
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if _, err := leaked.Exec(t.Context(), `CREATE TABLE left_behind (id int)`); err != nil {
			t.Fatalf("create table: %v", err)
		}
	})
	if leaked != nil {
		defer leaked.Close(context.Background())
	}
	if inner == "" {
		t.Fatal("subtest did not get a database")
	}

	conn := connect(t, probe)
	var exists bool
	if err := conn.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, inner).Scan(&exists); err != nil {
		t.Fatalf("query pg_database: %v", err)
	}
	if exists {
		t.Fatalf("database %q still exists after its test ended", inner)
	}
}
