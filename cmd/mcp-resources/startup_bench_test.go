package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/internal/serverproc"
)

// BenchmarkExecToInitialize measures, for the reference server (serve
// --postgres --bucket over stdio, against the PostgreSQL and S3 server of
// MCPRES_POSTGRES_URL and MCPRES_S3_*), the time from exec to the answer
// of initialize, the first request a client sends. Each iteration starts
// every binary once, in turn, so that the binaries share the run's load;
// it reports each binary's median in ms. The binaries are this package's,
// built now, and those of MCPRES_BENCH_BINARIES (NAME=PATH,...; for
// example main's and an older commit's):
//
//	MCPRES_BENCH_BINARIES=main=/tmp/main,old=/tmp/old go test -run X -bench ExecToInitialize -benchtime 15x ./cmd/mcp-resources/
func BenchmarkExecToInitialize(b *testing.B) { benchmarkExec(b, false) }

// BenchmarkExecToFirstRead is [BenchmarkExecToInitialize] up to the
// answer of the first resources/read (an asset's body), which waits for
// the start-up checks of the storage: the role, every statement, and the
// proof from the catalog that the database enforces access. Against a
// binary built before the proof (MCPRES_BENCH_BINARIES) it gives what the
// proof adds to a server's start-up.
func BenchmarkExecToFirstRead(b *testing.B) { benchmarkExec(b, true) }

func benchmarkExec(b *testing.B, read bool) {
	pgURL, endpoint := os.Getenv("MCPRES_POSTGRES_URL"), os.Getenv("MCPRES_S3_ENDPOINT")
	if pgURL == "" || endpoint == "" {
		b.Skip("needs MCPRES_POSTGRES_URL and MCPRES_S3_* (eval \"$(scripts/services.sh up)\")")
	}
	bins := [][2]string{{"this", binary(b)}}
	for _, nb := range strings.Split(os.Getenv("MCPRES_BENCH_BINARIES"), ",") {
		if name, path, ok := strings.Cut(nb, "="); ok {
			bins = append(bins, [2]string{name, path})
		}
	}
	db := benchDatabase(b, pgURL, "mcpres_bench_start")
	flags := []string{"--postgres=" + db, "--bucket=mcpres-bench-start", "--bucket-endpoint=" + endpoint,
		"--bucket-region=" + os.Getenv("MCPRES_S3_REGION"), "--bucket-access-key=" + os.Getenv("MCPRES_S3_ACCESS_KEY"),
		"--bucket-secret-key=" + os.Getenv("MCPRES_S3_SECRET_KEY"), "--bucket-path-style"}
	for _, args := range [][]string{{"migrate", "--postgres=" + db}, append([]string{"seed"}, flags...)} {
		cmd := exec.Command(bins[0][1], args...)
		cmd.Env = serverproc.Env()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", args[0], err, out)
		}
	}
	samples := make([][]time.Duration, len(bins))
	b.ResetTimer()
	for range b.N {
		for i, bin := range bins {
			samples[i] = append(samples[i], execTo(b, bin[1], flags, read))
		}
	}
	b.StopTimer()
	for i, bin := range bins {
		s := slices.Clone(samples[i])
		slices.Sort(s)
		b.ReportMetric(float64(s[len(s)/2].Microseconds())/1000, "ms-median-"+bin[0])
	}
}

// benchDatabase returns the URL of database name on the server of pgURL,
// created if missing.
func benchDatabase(b *testing.B, pgURL, name string) string {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		b.Fatal(err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			b.Fatal(err)
		}
	}
	u, err := url.Parse(pgURL)
	if err != nil {
		b.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// execTo starts bin serve with flags over stdio, sends initialize and
// returns the time until its answer's line, or with read until the answer
// of a read of the seed's welcome asset sent after it; then it closes
// stdin and waits for the process to exit 0.
func execTo(b *testing.B, bin string, flags []string, read bool) time.Duration {
	cmd := exec.Command(bin, append([]string{"serve", "--principal=alice"}, flags...)...)
	cmd.Env = serverproc.Env()
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	lines := bufio.NewReader(out)
	line, err := lines.ReadString('\n')
	if err != nil || !strings.Contains(line, `"protocolVersion"`) {
		b.Fatalf("%s: initialize: %v %q\n%s", bin, err, line, stderr.String())
	}
	if read {
		fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		fmt.Fprintln(in, `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"asset://project/handbook/asset/welcome/body"}}`)
		if line, err = lines.ReadString('\n'); err != nil || !strings.Contains(line, `"contents"`) {
			b.Fatalf("%s: read: %v %q\n%s", bin, err, line, stderr.String())
		}
	}
	took := time.Since(start)
	in.Close()
	_, _ = io.Copy(io.Discard, lines)
	if err := cmd.Wait(); err != nil {
		b.Fatalf("%s: %v\n%s", bin, err, stderr.String())
	}
	return took
}
