package postgres_test

import (
	"context"
	"fmt"
	"log"

	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// Serve the reference schema (apply package migrations first) with the
// grants table as the policy. The pool logs in as a role that is a member of
// mcpres_reader; each read switches to that role and sets the principal for
// its own transaction.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@127.0.0.1:5432/assets")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	store, err := postgres.NewStore(pool, nil) // principal from core.WithPrincipal
	if err != nil {
		log.Fatal(err)
	}
	// Optional: check the statements now (migrations applied, the login a
	// member of mcpres_reader) rather than at the first request.
	if err := store.Check(ctx); err != nil {
		log.Fatal(err)
	}
	res, err := core.NewResources(store.Bindings(), store.Policy())
	if err != nil {
		log.Fatal(err)
	}

	// The host authenticated alice; the adapter does this from the token.
	ctx = core.WithPrincipal(ctx, "alice")
	result, err := res.Read(ctx, "asset://project/handbook/asset/intro/body")
	if err != nil {
		log.Fatal(err) // a *core.Failure: its text is safe to show
	}
	for _, it := range result.Items() {
		fmt.Println(it.URI(), it.MIMEType(), len(it.Text()))
	}
}

// A host with its own table of notes, protected by its own row-level
// security on current_setting('mcp.principal', true), serves each note at
// note://all/{key} with the same guarantees as the reference schema.
func ExampleSource_Binding() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@127.0.0.1:5432/notes")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	src, err := postgres.NewSource(pool, postgres.SourceOptions{Name: "notes", Role: "notes_reader"})
	if err != nil {
		log.Fatal(err)
	}
	binding, err := src.Binding(postgres.SQLBinding{
		Definition: core.ResourceDefinition{URITemplate: "note://all/{key}", Name: "note"},
		// Identity only: key, version, MIME type, text or not.
		Plan: `SELECT id AS key, revision AS version, 'text/markdown' AS mime, true AS text FROM notes WHERE id::text = $key`,
		Body: `SELECT markdown AS body, revision AS version FROM notes WHERE id::text = $key`,
	})
	if err != nil {
		log.Fatal(err)
	}
	// Prepare and check every statement before serving.
	if err := src.Check(ctx); err != nil {
		log.Fatal(err) // one line naming the binding, the statement and the column
	}
	_ = binding // register it with core.NewResources
}
