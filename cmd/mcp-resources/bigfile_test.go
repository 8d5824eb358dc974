package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/internal/bigfile"
	"go.phpboyscout.uk/mcp/resources/internal/serverproc"
)

// TestServeBigFileFirstRead starts the built server over stdio with a
// generated resources file of 10,000 templates (internal/bigfile, over
// 4 MiB, 10 shapes of statements) against the real PostgreSQL of
// MCPRES_POSTGRES_URL, and reads through the last template: its
// statements are checked and proven ahead of the file's, which is checked
// (every statement, the proof) and served. It logs the time from exec to
// the read's answer and to the check's end; it asserts none.
func TestServeBigFileFirstRead(t *testing.T) {
	pgURL := os.Getenv("MCPRES_POSTGRES_URL")
	if pgURL == "" {
		if os.Getenv("MCPRES_INTEGRATION") == "require" {
			t.Fatal("MCPRES_INTEGRATION=require and MCPRES_POSTGRES_URL is unset")
		}
		t.Skip("needs MCPRES_POSTGRES_URL (eval \"$(scripts/services.sh up)\")")
	}
	const n = 10000
	file, env := bigServeFile(t, pgURL, n, 10)
	r := execToBigRead(t, binary(t), file, env, n, 10)
	t.Logf("%d templates: exec to the first read's answer %s, to the check's end %s; resident memory then %.1f MiB, peak %.1f MiB",
		n, r.read.Round(time.Millisecond), r.checked.Round(time.Millisecond), r.mem.NowMiB(), r.mem.PeakMiB())
}

// BenchmarkExecToFirstReadBigFile measures, for a generated file of each
// of MCPRES_BENCH_TEMPLATES templates (comma-separated, default 10,000;
// internal/bigfile, MCPRES_BENCH_SHAPES shapes of statements, default 10,
// 0 for every template its own), the time from exec of serve --config
// over stdio to the answer of a read through its last template, whose
// statements are checked ahead of the rest of the file, and to the end of
// the file's check, and the server process's resident memory then (/proc:
// VmRSS then, VmHWM its peak so far). Each iteration starts every binary
// once, in turn (this package's, built now, and those of
// MCPRES_BENCH_BINARIES, NAME=PATH,...), and it reports each binary's
// medians: ms-median-NAME (the read), ms-checked-NAME, rss-MiB-NAME and
// peak-MiB-NAME:
//
//	MCPRES_BENCH_TEMPLATES=1000,2000 MCPRES_BENCH_BINARIES=base=/tmp/old go test -run X -bench ExecToFirstReadBigFile -benchtime 3x ./cmd/mcp-resources/
func BenchmarkExecToFirstReadBigFile(b *testing.B) {
	pgURL := os.Getenv("MCPRES_POSTGRES_URL")
	if pgURL == "" {
		b.Skip("needs MCPRES_POSTGRES_URL (eval \"$(scripts/services.sh up)\")")
	}
	sizes := []int{10000}
	if v := os.Getenv("MCPRES_BENCH_TEMPLATES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("MCPRES_BENCH_TEMPLATES: %q is not a positive number", f)
			}
			sizes = append(sizes, n)
		}
	}
	shapes := 10
	if v := os.Getenv("MCPRES_BENCH_SHAPES"); v != "" {
		var err error
		if shapes, err = strconv.Atoi(v); err != nil || shapes < 0 {
			b.Fatalf("MCPRES_BENCH_SHAPES: %q is not a number of shapes (0: every template its own)", v)
		}
	}
	bins := [][2]string{{"this", binary(b)}}
	for _, nb := range strings.Split(os.Getenv("MCPRES_BENCH_BINARIES"), ",") {
		if name, path, ok := strings.Cut(nb, "="); ok {
			bins = append(bins, [2]string{name, path})
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("templates=%d/shapes=%d", n, shapes), func(b *testing.B) {
			file, env := bigServeFile(b, pgURL, n, shapes)
			took := make([][]float64, len(bins))
			checked := make([][]float64, len(bins))
			rss := make([][]float64, len(bins))
			peak := make([][]float64, len(bins))
			b.ResetTimer()
			for range b.N {
				for i, bin := range bins {
					r := execToBigRead(b, bin[1], file, env, n, shapes)
					took[i] = append(took[i], float64(r.read.Microseconds())/1000)
					checked[i] = append(checked[i], float64(r.checked.Microseconds())/1000)
					rss[i] = append(rss[i], r.mem.NowMiB())
					peak[i] = append(peak[i], r.mem.PeakMiB())
				}
			}
			b.StopTimer()
			for i, bin := range bins {
				b.ReportMetric(medianOf(took[i]), "ms-median-"+bin[0])
				b.ReportMetric(medianOf(checked[i]), "ms-checked-"+bin[0])
				b.ReportMetric(medianOf(rss[i]), "rss-MiB-"+bin[0])
				b.ReportMetric(medianOf(peak[i]), "peak-MiB-"+bin[0])
			}
		})
	}
}

// medianOf is the median of vs (the upper one of an even count).
func medianOf(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[len(s)/2]
}

// bigServeFile writes the file of n templates of shapes shapes (0: each
// its own) and a fresh database of its schema on the server of pgURL, and
// returns the file's path and the environment that names the database.
func bigServeFile(tb testing.TB, pgURL string, n, shapes int) (string, []string) {
	tb.Helper()
	ctx := context.Background()
	const db, role = "mcpres_bench_bigfile", "mcpres_bigfile"
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		tb.Fatal(err)
	}
	for _, sql := range []string{"DROP DATABASE IF EXISTS " + db + " WITH (FORCE)", "CREATE DATABASE " + db} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			tb.Fatal(err)
		}
	}
	_ = conn.Close(ctx)
	u, err := url.Parse(pgURL)
	if err != nil {
		tb.Fatal(err)
	}
	u.Path = "/" + db
	if conn, err = pgx.Connect(ctx, u.String()); err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.PgConn().Exec(ctx, bigfile.Schema(role, cmp.Or(shapes, n))).ReadAll(); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "big.yaml")
	if err := os.WriteFile(path, bigfile.File(n, shapes, role), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path, append(serverproc.Env(), "BIG_DATABASE_URL="+u.String())
}

// bigRun is what execToBigRead measured of one server.
type bigRun struct {
	read, checked time.Duration       // from exec to the first read's answer, and to the end of the check
	mem           serverproc.Resident // once the check passed
}

// execToBigRead starts bin serve --config file over stdio, sends
// initialize, then a read through the last of the file's n templates (of
// shapes shapes), and returns the time from exec to that read's answer,
// which must hold the row's body; then it waits for the line that says the
// start-up check passed (serving MCP over stdio) and returns that time and
// the process's resident memory then. Then it closes stdin and waits for
// exit 0.
func execToBigRead(tb testing.TB, bin, file string, env []string, n, shapes int) bigRun {
	tb.Helper()
	cmd := exec.Command(bin, "serve", "--principal=alice", "--config="+file)
	cmd.Env = env
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bigfile","version":"1"}}}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintf(in, `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":%q}}`+"\n", bigfile.URI(n-1))
	lines := bufio.NewReader(out)
	var line string
	for !strings.Contains(line, `"id":2`) {
		if line, err = lines.ReadString('\n'); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			tb.Fatalf("%s: %v\n%s", bin, err, stderr.String())
		}
	}
	run := bigRun{read: time.Since(start)}
	if want := fmt.Sprintf("body of shape %d", (n-1)%cmp.Or(shapes, n)); !strings.Contains(line, want) {
		tb.Errorf("%s: the read answered %.300q, not the row's body %q\n%s", bin, line, want, stderr.String())
	}
	for deadline := time.Now().Add(5 * time.Minute); !strings.Contains(stderr.String(), `msg="serving MCP over stdio"`); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			tb.Fatalf("%s: the check did not pass within 5 minutes\n%s", bin, stderr.String())
		}
	}
	run.checked = time.Since(start)
	if run.mem, err = serverproc.Memory(cmd.Process.Pid); err != nil {
		tb.Errorf("%s: %v", bin, err)
	}
	in.Close()
	_, _ = io.Copy(io.Discard, lines)
	if err := cmd.Wait(); err != nil {
		tb.Fatalf("%s: %v\n%s", bin, err, stderr.String())
	}
	return run
}
