// Command documents serves examples/documents over stdio, the caller being
// DOCS_PRINCIPAL (stdio has no authentication), or, when DOCS_HTTP names an
// address, over streamable HTTP at /mcp, the caller being the principal
// of the bearer token in the tokens file DOCS_TOKENS (lines of
// "PRINCIPAL sha256:HEX", as mcp-resources hash-token prints them).
//
//	DOCS_DATABASE_URL=postgres://... S3_ENDPOINT=http://... S3_ACCESS_KEY=... S3_SECRET_KEY=... \
//	DOCS_BUCKET=acme-docs DOCS_PRINCIPAL=alice documents
//	DOCS_HTTP=127.0.0.1:8080 DOCS_TOKENS=tokens.txt DOCS_DATABASE_URL=... documents
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/examples/documents"
	"go.phpboyscout.uk/mcp/resources/live"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
	"go.phpboyscout.uk/mcp/resources/mcpsdk/oauth"
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
	files, err := s3store.OpenBucket(ctx, client, env("DOCS_BUCKET"), &s3store.Options{TypeByKey: true})
	if err != nil {
		return err
	}
	host, err := documents.Open(ctx, pool, files)
	if err != nil {
		return err
	}
	res, err := host.Resources()
	if err != nil {
		return err
	}
	opts := &mcpsdk.Options{Completions: true, Live: &live.Options{}, Sources: host.Changes} // subscriptions
	if env("DOCS_HTTP") == "" {
		principal := env("DOCS_PRINCIPAL")
		opts.Principal = func(context.Context, mcp.Request) string { return principal }
	} // else the default: the bearer token's principal
	a := mcpsdk.New(res, opts)
	server := a.NewServer(&mcp.Implementation{Name: "documents", Version: "v0.1.0"}, nil)
	go a.Run(ctx)
	if env("DOCS_HTTP") == "" {
		return server.Run(ctx, &mcp.StdioTransport{})
	}
	f, err := os.Open(env("DOCS_TOKENS"))
	if err != nil {
		return err
	}
	tokens, err := oauth.ParseTokens(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("tokens file: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", oauth.RequireStaticToken(tokens.Verify, "documents")(
		mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)))
	hs := &http.Server{Addr: env("DOCS_HTTP"), Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); hs.Close() }()
	if err := hs.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return ctx.Err()
}
