package postgres_test

import (
	"context"
	"log"

	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

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
