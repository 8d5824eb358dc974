package postgres_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/config"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/internal/bigfile"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// BenchmarkBigFileCheck measures the start-up check of a generated file
// (internal/bigfile) of 100, 1,000 and 10,000 templates, each a plan and
// a body statement, whose statements repeat 10 shapes or are every one
// distinct: config File.Open, which runs postgres Source.Check (the role,
// every statement prepared and run once, the proof). It reports the
// check's time per template; the sequential check (one statement after
// another, a round trip each) is the baseline in the same run:
//
//	go test -run '^$' -bench BigFileCheck -benchtime 1x ./stores/postgres/
func BenchmarkBigFileCheck(b *testing.B) {
	ctx := context.Background()
	for _, n := range benchSizes() {
		for _, shapes := range []int{10, 0} {
			url := bigDatabase(b, "mcpres_bigfile", max(shapes, n))
			env := map[string]string{"BIG_DATABASE_URL": url}
			f, err := config.Parse("big.yaml", bigfile.File(n, shapes, "mcpres_bigfile"), &config.Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
			if err != nil {
				b.Fatal(err)
			}
			kind := "shapes=10"
			if shapes == 0 {
				kind = "distinct"
			}
			for _, mode := range []struct {
				name      string
				pipelined bool
			}{{"sequential", false}, {"pipelined", true}} {
				b.Run(fmt.Sprintf("templates=%d/%s/%s", n, kind, mode.name), func(b *testing.B) {
					postgres.SetPipelined(mode.pipelined)
					defer postgres.SetPipelined(true)
					b.ReportAllocs()
					for b.Loop() {
						served, err := f.Open(ctx, nil)
						if err != nil {
							b.Fatal(err)
						}
						served.Close()
					}
					b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "µs/template")
				})
			}
		}
	}
}

// bigDatabase returns the URL of a new database holding the schema of
// bigfile.Schema for shapes shapes, with role its role.
func bigDatabase(tb testing.TB, role string, shapes int) string {
	tb.Helper()
	url := harness.Postgres(tb)
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.PgConn().Exec(context.Background(), bigfile.Schema(role, shapes)).ReadAll(); err != nil {
		tb.Fatal(err)
	}
	return url
}

// benchSizes are the file sizes of BenchmarkBigFileCheck:
// MCPRES_BENCH_TEMPLATES (a comma-separated list), else 100, 1,000 and
// 10,000.
func benchSizes() []int {
	var out []int
	for _, f := range strings.Split(os.Getenv("MCPRES_BENCH_TEMPLATES"), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return []int{100, 1000, 10000}
	}
	return out
}
