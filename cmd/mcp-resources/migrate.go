package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/stdlib"

	"go.phpboyscout.uk/mcp/resources/internal/connerr"
	"go.phpboyscout.uk/mcp/resources/migrations"
)

// migrateCmd applies the reference schema's migrations.
type migrateCmd struct {
	Postgres string `name:"postgres" placeholder:"URL" env:"MCPRES_DATABASE_URL" required:"" help:"PostgreSQL URL whose role may create schemas and, the first time in a cluster, the mcpres_reader role (a superuser on a fresh server)."`
}

// Run applies what is missing and prints each version it applied, or that
// the schema was already current. Safe to repeat and to run concurrently.
func (c *migrateCmd) Run(ctx context.Context, e *env) error {
	f := storageFlags{Postgres: c.Postgres}
	pool, err := f.openPool(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	applied, err := migrations.Apply(ctx, db)
	if err != nil {
		if ctx.Err() != nil {
			return errors.New("migrate: interrupted")
		}
		return fmt.Errorf("migrate: %w", connerr.Innermost(err))
	}
	for _, v := range applied {
		fmt.Fprintf(e.stdout, "applied version %d\n", v)
	}
	fmt.Fprintf(e.stdout, "the reference schema is at version %d (%d applied now)\n", migrations.Version(), len(applied))
	return nil
}
