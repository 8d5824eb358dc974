package postgres_test

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"

	"go.phpboyscout.uk/mcp/resources/config"
	"go.phpboyscout.uk/mcp/resources/examples/documents"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/internal/benchutil"
	"go.phpboyscout.uk/mcp/resources/migrations"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// BenchmarkSourceCheckProof measures what the proof that storage enforces
// access adds to a file's start-up check (config File.Open, which opens
// the pool and runs Source.Check on every PostgreSQL source), on the
// documents example and on the reference file, each with the proof and
// without it, in one run, and the proof again on a checked source (what a
// server runs on a schedule, Ready.Prove). The S3 sources are left out,
// as optional sources without a bucket: they are checked alike either way.
func BenchmarkSourceCheckProof(b *testing.B) {
	ctx := context.Background()
	docsURL := harness.Postgres(b)
	conn, err := pgx.Connect(ctx, docsURL)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := conn.PgConn().Exec(ctx, documents.Schema).ReadAll(); err != nil {
		b.Fatal(err)
	}
	_ = conn.Close(ctx)
	refURL := harness.Postgres(b)
	sqldb, err := sql.Open("pgx", refURL)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := migrations.Apply(ctx, sqldb); err != nil {
		b.Fatal(err)
	}
	_ = sqldb.Close()
	docsFile, err := os.ReadFile("../../examples/documents/resources.yaml")
	if err != nil {
		b.Fatal(err)
	}
	docsFile = bytes.Replace(docsFile, []byte("bucket: ${DOCS_BUCKET}\n"), []byte("bucket: ${DOCS_BUCKET}\n      optional: true\n"), 1)
	env := map[string]string{"DOCS_DATABASE_URL": docsURL, "DOCS_BUCKET": "", "S3_ENDPOINT": "http://127.0.0.1:1",
		"S3_ACCESS_KEY": "bench", "S3_SECRET_KEY": "bench-secret", "MCPRES_DATABASE_URL": refURL}
	lookup := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	for _, file := range []struct {
		name string
		data []byte
	}{{"documents", docsFile}, {"reference", migrations.ResourcesFile}} {
		f, err := config.Parse(file.name+".yaml", file.data, &config.Options{LookupEnv: lookup})
		if err != nil {
			b.Fatal(err)
		}
		for _, mode := range []struct {
			name string
			on   bool
		}{{"without-proof", false}, {"proof", true}} {
			b.Run(file.name+"/"+mode.name, func(b *testing.B) {
				postgres.SetProof(mode.on)
				defer postgres.SetProof(true)
				b.ReportAllocs()
				for b.Loop() {
					served, err := f.Open(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					served.Close()
				}
			})
		}
		// Both in turns within one loop (benchutil.Ratio): the ratio that
		// holds on a machine shared with other work.
		b.Run(file.name+"/proof-vs-without", func(b *testing.B) {
			defer postgres.SetProof(true)
			open := func(on bool) func() {
				return func() {
					postgres.SetProof(on)
					served, err := f.Open(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					served.Close()
				}
			}
			benchutil.Ratio(b, "proof", open(false), open(true))
		})
		// The proof again on a checked source, as a server runs it while
		// serving (Ready.Prove, postgres Source.Prove).
		b.Run(file.name+"/prove", func(b *testing.B) {
			served, err := f.Open(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer served.Close()
			b.ReportAllocs()
			for b.Loop() {
				for _, r := range served.Ready {
					if r.Prove == nil {
						continue
					}
					if err := r.Prove(ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
