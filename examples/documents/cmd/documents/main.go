// Command documents serves examples/documents over stdio. The caller is
// DOCS_PRINCIPAL (stdio has no authentication; over HTTP it would come from
// the bearer token).
//
//	DOCS_DATABASE_URL=postgres://... S3_ENDPOINT=http://... S3_ACCESS_KEY=... S3_SECRET_KEY=... \
//	DOCS_BUCKET=acme-docs DOCS_PRINCIPAL=alice documents
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/examples/documents"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

func main() {
	if err := serve(context.Background(), os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "documents:", err)
		os.Exit(1)
	}
}

func serve(ctx context.Context, env func(string) string) error {
	pool, err := pgxpool.New(ctx, env("DOCS_DATABASE_URL"))
	if err != nil {
		return err
	}
	defer pool.Close()
	client, err := s3store.NewClient(ctx, s3store.ClientConfig{Endpoint: env("S3_ENDPOINT"), UsePathStyle: true,
		AccessKeyID: env("S3_ACCESS_KEY"), SecretAccessKey: env("S3_SECRET_KEY")})
	if err != nil {
		return err
	}
	files, err := s3store.OpenBucket(ctx, client, env("DOCS_BUCKET"), nil)
	if err != nil {
		return err
	}
	res, err := documents.New(ctx, pool, files)
	if err != nil {
		return err
	}
	principal := env("DOCS_PRINCIPAL")
	a := mcpsdk.New(res, &mcpsdk.Options{Completions: true,
		Principal: func(context.Context, mcp.Request) string { return principal }})
	server := a.NewServer(&mcp.Implementation{Name: "documents", Version: "v0.1.0"}, nil)
	return server.Run(ctx, &mcp.StdioTransport{})
}
