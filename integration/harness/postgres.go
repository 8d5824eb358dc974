package harness

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/testcontainers/testcontainers-go/modules/postgres"

	"go.phpboyscout.uk/mcp/resources/internal/serverproc"
)

var (
	pgOnce   sync.Once
	pgURL    string // server URL from testcontainers
	pgReason string // why no server is available, when it is not
	pgErr    error  // a server should have started and did not
)

// Postgres returns the URL of a fresh, empty database that belongs to t
// alone. The database is dropped (with FORCE, so open connections do not
// keep it alive) when t and its subtests have finished; close your pools in
// t.Cleanup or earlier anyway.
//
// The connecting role is the one in EnvPostgresURL (or the container's
// superuser), so tests may create roles, enable row-level security and so
// on. Without a server, t is skipped or fails as the package doc describes.
func Postgres(t testing.TB) string {
	t.Helper()
	server := postgresServer(t)
	name := uniqueName(t, "mcpres", '_', 63)
	ident := pgx.Identifier{name}.Sanitize()

	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := serverproc.PostgresExec(ctx, server, "CREATE DATABASE "+ident); err != nil {
		t.Fatalf("harness: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if err := serverproc.PostgresExec(ctx, server, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
			t.Errorf("harness: drop database %s: %v", name, err)
		}
	})

	u, err := url.Parse(server)
	if err != nil {
		t.Fatalf("harness: %v", err) // postgresServer already parsed it
	}
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}

// postgresServer returns the URL of the server that Postgres creates
// databases on, starting a container on first use when needed.
func postgresServer(t testing.TB) string {
	t.Helper()
	if raw := os.Getenv(EnvPostgresURL); raw != "" {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
			t.Fatalf("harness: %s must be a postgres://user@host:port/db URL", EnvPostgresURL)
		}
		return raw
	}
	pgOnce.Do(startPostgres)
	if pgReason != "" {
		Unavailable(t, pgReason)
	}
	if pgErr != nil {
		t.Fatalf("harness: %v", pgErr)
	}
	return pgURL
}

func startPostgres() {
	if err := dockerHealth(); err != nil {
		pgReason = fmt.Sprintf("no PostgreSQL: %s is unset and Docker is unavailable; run `eval \"$(scripts/services.sh up)\"` or start Docker (docker: %s)",
			EnvPostgresURL, oneLine(err))
		return
	}
	image := os.Getenv(EnvPostgresImage)
	if image == "" {
		image = DefaultPostgresImage
	}
	ctx, cancel := context.WithTimeout(context.Background(), containerStartTimeout)
	defer cancel()
	ctr, err := postgres.Run(ctx, image, postgres.BasicWaitStrategies())
	if ctr != nil {
		keepContainer(ctr)
	}
	if err != nil {
		pgErr = fmt.Errorf("start PostgreSQL container %s: %w", image, err)
		return
	}
	pgURL, err = ctr.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		pgErr = fmt.Errorf("PostgreSQL container address: %w", err)
	}
}
