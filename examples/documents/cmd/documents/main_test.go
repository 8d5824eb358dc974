package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/examples/documents"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/mcpsdk/oauth"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestServesOverHTTPBehindATokensFile: with DOCS_HTTP and DOCS_TOKENS the
// host serves streamable HTTP behind the tokens file's verifier: a token
// of the file reads as its principal (alice, a member of acme, completes
// acme), another is refused with 401 before any MCP request runs.
func TestServesOverHTTPBehindATokensFile(t *testing.T) {
	url := harness.Postgres(t)
	s3env := harness.S3(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	if _, err := db.Exec(ctx, documents.Schema); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `WITH t AS (INSERT INTO tenants VALUES ('acme', 'Acme'))
		INSERT INTO memberships VALUES ('alice', 'acme', 'reader')`); err != nil {
		t.Fatal(err)
	}
	line, err := oauth.TokensLine("alice", "alice-token")
	if err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(t.TempDir(), "tokens.txt")
	if err := os.WriteFile(tokens, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	env := map[string]string{"DOCS_DATABASE_URL": url, "DOCS_BUCKET": s3env.Bucket, "S3_ENDPOINT": s3env.Endpoint,
		"S3_ACCESS_KEY": s3env.AccessKey, "S3_SECRET_KEY": s3env.SecretKey, "DOCS_HTTP": addr, "DOCS_TOKENS": tokens}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- serve(sctx, func(k string) string { return env[k] }) }()
	defer func() {
		stop()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("serve: %v", err)
		}
	}()

	endpoint := "http://" + addr + "/mcp"
	for {
		resp, err := http.Post(endpoint, "application/json", nil)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("no token: HTTP %d, want 401", resp.StatusCode)
			}
			break
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended: %v", err)
		case <-ctx.Done():
			t.Fatal("the server never listened")
		case <-time.After(50 * time.Millisecond):
		}
	}
	connect := func(token string) (*mcp.ClientSession, error) {
		c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v0"}, nil)
		return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint,
			HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}, nil)
	}
	if cs, err := connect("wrong-token"); err == nil {
		cs.Close()
		t.Fatal("a token not in the file connected")
	}
	cs, err := connect("alice-token")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	got, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "doc://tenants/{tenant}/documents/{id}"},
		Argument: mcp.CompleteParamsArgument{Name: "tenant", Value: "a"}})
	if err != nil || len(got.Completion.Values) != 1 || got.Completion.Values[0] != "acme" {
		t.Fatalf("alice's completion of tenants: %+v %v, want acme", got, err)
	}
}
