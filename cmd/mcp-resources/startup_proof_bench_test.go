package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/internal/proofhook"
)

// BenchmarkStartupProof measures what the proof that storage enforces
// access (stores/postgres, from the catalog) adds to check and to a
// server's start-up, on the documents example's file and on the reference
// file, in one process: each iteration runs the step without the proof
// and with it, in turns (the order swapped every iteration), so that the
// machine's other work falls on both alike. The proof is switched off by
// internal/proofhook, which nothing but a benchmark sets.
//
//   - check is `mcp-resources check --config FILE`, run in-process: load
//     the file, open every source, the role, every statement, the proof,
//     the bucket, and print what it would serve.
//   - first-read is `mcp-resources serve` over stdio, run in-process, from
//     its start to the answer of a first resources/read sent after
//     initialize: the read waits for the start-up checks (the same as
//     check's, and for the reference server the schema's own check beside
//     them). The documents example is served with --config, the reference
//     file as the reference server is, with --postgres and --bucket.
//
// It reports each side's median in ms (ms-base without the proof,
// ms-proof with it) and proof/base, the ratio of the medians. The sources
// are the PostgreSQL server and the S3 server of scripts/services.sh; the
// S3 checks run on both sides alike.
//
//	eval "$(scripts/services.sh up)"
//	go test -run '^$' -bench BenchmarkStartupProof -benchtime 20x ./cmd/mcp-resources/
func BenchmarkStartupProof(b *testing.B) {
	pgURL, endpoint := os.Getenv("MCPRES_POSTGRES_URL"), os.Getenv("MCPRES_S3_ENDPOINT")
	if pgURL == "" || endpoint == "" {
		b.Skip("needs MCPRES_POSTGRES_URL and MCPRES_S3_* (eval \"$(scripts/services.sh up)\")")
	}
	ctx := context.Background()
	const bucket = "mcpres-bench-start"
	refDB := benchDatabase(b, pgURL, "mcpres_bench_start")
	s3Flags := []string{"--bucket=" + bucket, "--bucket-endpoint=" + endpoint, "--bucket-region=" + os.Getenv("MCPRES_S3_REGION"),
		"--bucket-access-key=" + os.Getenv("MCPRES_S3_ACCESS_KEY"), "--bucket-secret-key=" + os.Getenv("MCPRES_S3_SECRET_KEY"), "--bucket-path-style"}
	for _, args := range [][]string{{"migrate", "--postgres=" + refDB}, append([]string{"seed", "--postgres=" + refDB}, s3Flags...)} {
		if code, out := runOnce(ctx, args...); code != 0 {
			b.Fatalf("%s: exit %d\n%s", args[0], code, out)
		}
	}
	docsDB, docID := documentsDatabase(b, pgURL)
	docsEnv := map[string]string{"DOCS_DATABASE_URL": docsDB, "DOCS_BUCKET": bucket, "S3_ENDPOINT": endpoint,
		"S3_ACCESS_KEY": os.Getenv("MCPRES_S3_ACCESS_KEY"), "S3_SECRET_KEY": os.Getenv("MCPRES_S3_SECRET_KEY")}
	// The reference file's variables, for check --config; set only for its
	// steps (MCPRES_BUCKET is also --bucket's variable, which serve --config
	// refuses beside the file).
	refEnv := map[string]string{"MCPRES_DATABASE_URL": refDB, "MCPRES_BUCKET": bucket, "MCPRES_BUCKET_ENDPOINT": endpoint,
		"MCPRES_BUCKET_REGION": os.Getenv("MCPRES_S3_REGION"), "MCPRES_BUCKET_ACCESS_KEY": os.Getenv("MCPRES_S3_ACCESS_KEY"),
		"MCPRES_BUCKET_SECRET_KEY": os.Getenv("MCPRES_S3_SECRET_KEY")}
	const docsFile, refFile = "../../examples/documents/resources.yaml", "../../migrations/resources.yaml"
	files := []struct {
		name  string
		env   map[string]string
		check []string // the check command
		serve []string // the serve command
		read  string   // the URI of the first read
	}{
		{"documents", docsEnv, []string{"check", "--config=" + docsFile}, []string{"serve", "--principal=alice", "--config=" + docsFile},
			"doc://tenants/acme/documents/" + docID},
		{"reference", refEnv, []string{"check", "--config=" + refFile}, append([]string{"serve", "--principal=alice", "--postgres=" + refDB}, s3Flags...),
			"asset://project/handbook/asset/welcome/body"},
	}
	defer proofhook.Off.Store(false)
	for _, f := range files {
		b.Run(f.name+"/check", func(b *testing.B) {
			setenv(b, f.env)
			proofInTurns(b, func() time.Duration {
				start := time.Now()
				if code, out := runOnce(ctx, f.check...); code != 0 {
					b.Fatalf("check: exit %d\n%s", code, out)
				}
				return time.Since(start)
			})
		})
		b.Run(f.name+"/first-read", func(b *testing.B) {
			setenv(b, f.env)
			proofInTurns(b, func() time.Duration { return serveToFirstRead(b, f.serve, f.read) })
		})
	}
}

func setenv(b *testing.B, env map[string]string) {
	for k, v := range env {
		b.Setenv(k, v)
	}
}

// proofInTurns runs step (which returns how long it took) once without
// the proof and once with it per iteration, the order swapped every
// iteration, and reports the medians and their ratio.
func proofInTurns(b *testing.B, step func() time.Duration) {
	var base, proof []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		for _, on := range [][2]bool{{false, true}, {true, false}}[i%2] {
			proofhook.Off.Store(!on)
			took := step()
			if on {
				proof = append(proof, took)
			} else {
				base = append(base, took)
			}
		}
	}
	b.StopTimer()
	proofhook.Off.Store(false)
	mb, mp := medianMS(base), medianMS(proof)
	b.ReportMetric(mb, "ms-base")
	b.ReportMetric(mp, "ms-proof")
	b.ReportMetric(mp/mb, "proof/base")
}

func medianMS(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2].Microseconds()) / 1000
}

// runOnce runs the command in-process with empty stdin and returns its
// exit code and what it wrote.
func runOnce(ctx context.Context, args ...string) (int, string) {
	var out lockedBuffer
	code := run(ctx, args, strings.NewReader(""), &out, &out)
	return code, out.String()
}

// serveToFirstRead runs serve with args in-process over stdio, sends
// initialize, then a read of uri, and returns the time from the start to
// the read's answer; then it closes stdin and waits for serve to exit 0.
func serveToFirstRead(b *testing.B, args []string, uri string) time.Duration {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr lockedBuffer
	code := make(chan int, 1)
	start := time.Now()
	go func() {
		c := run(context.Background(), args, inR, outW, &stderr)
		inR.Close() // a serve that ended early fails the writes below, rather than blocking them
		outW.Close()
		code <- c
	}()
	lines := bufio.NewReader(outR)
	fail := func(format string, a ...any) {
		inW.Close()
		b.Fatalf("%s\n%s", fmt.Sprintf(format, a...), stderr.String())
	}
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	if line, err := lines.ReadString('\n'); err != nil || !strings.Contains(line, `"protocolVersion"`) {
		fail("initialize: %v %q", err, line)
	}
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":%q}}`+"\n", uri)
	if line, err := lines.ReadString('\n'); err != nil || !strings.Contains(line, `"contents"`) {
		fail("read %s: %v %q", uri, err, line)
	}
	took := time.Since(start)
	inW.Close()
	_, _ = io.Copy(io.Discard, lines)
	if c := <-code; c != 0 {
		b.Fatalf("serve: exit %d\n%s", c, stderr.String())
	}
	return took
}

// documentsDatabase creates the database mcpres_bench_docs afresh with
// the documents example's schema, a tenant acme of which alice is a
// member and one document of acme (a body, no file), and returns its URL
// and the document's id.
func documentsDatabase(b *testing.B, pgURL string) (string, string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, sql := range []string{"DROP DATABASE IF EXISTS mcpres_bench_docs WITH (FORCE)", "CREATE DATABASE mcpres_bench_docs"} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			b.Fatal(err)
		}
	}
	url := benchDatabase(b, pgURL, "mcpres_bench_docs")
	schema, err := os.ReadFile("../../examples/documents/schema.sql")
	if err != nil {
		b.Fatal(err)
	}
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close(ctx)
	if _, err := db.PgConn().Exec(ctx, string(schema)).ReadAll(); err != nil {
		b.Fatal(err)
	}
	var id string
	if err := db.QueryRow(ctx, `WITH t AS (INSERT INTO tenants (id, name) VALUES ('acme', 'Acme')),
		m AS (INSERT INTO memberships (user_id, tenant_id) SELECT 'alice', 'acme')
		INSERT INTO documents (tenant_id, title, body) VALUES ('acme', 'Plan', 'the plan') RETURNING id::text`).Scan(&id); err != nil {
		b.Fatal(err)
	}
	return url, id
}
