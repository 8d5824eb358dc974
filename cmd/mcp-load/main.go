// Command mcp-load is the load and fault driver of
// go.phpboyscout.uk/mcp/resources. It runs the reference server
// (mcp-resources serve --http) against a database and an S3 server of its
// own on this machine, writes a dataset whose every body names its asset
// and generation, and drives N concurrent MCP clients (the go-sdk client
// over streamable HTTP) that mix list pages, single reads and multi-item
// bundle reads for a bounded time. Every response is checked against what
// the driver knows was current and granted while the request was in
// flight.
//
//	mcp-load --clients 64 --duration 60s              # load
//	mcp-load --clients 16 --duration 20s --faults     # load with faults, then a recovery phase
//	mcp-load --sweep 1,2,4,8,16,32,64 --duration 5s --csv latency.csv
//	mcp-load --sessions 1000 --server /tmp/old/mcp-resources   # the server's memory with 1,000 sessions
//
// It reports throughput, latency percentiles (p50, p95, p99), responses by
// kind, unexpected outcomes and wrong answers, and the server's goroutines,
// PostgreSQL connections, HTTP connections and MCP sessions before and
// after the load. It exits 0 when every response was allowed and correct
// and the server is back at its baseline; 1 otherwise; 2 when it could not
// set up.
//
// With --sessions N it runs no load: it opens N stateful sessions, each
// subscribed to one body, and prints the server process's resident memory
// (VmRSS and VmHWM from /proc) before them and with them open, and the
// growth per session; then it closes them, and the server must be back at
// its baseline. The server's caps on sessions and subscriptions are
// raised to N, as far as the binary has those flags.
//
// With --faults, while the clients run it terminates the server's
// PostgreSQL backends (pg_terminate_backend), kills and restarts its own
// S3 server (versitygw), revokes and restores grants, and overwrites rows
// and objects. A response may then be a complete bundle, a partial bundle
// or a typed failure, but never a body that was replaced or revoked before
// the request was sent; after the faults a recovery phase must be complete
// and correct again, with the same server process.
//
// Traffic goes to loopback only: --postgres must name a loopback host,
// versitygw and the server listen on 127.0.0.1.
//
// With --config FILE it drives a server started as serve --config FILE
// instead, against the operator's own database and bucket (the file's
// ${NAME} references come from the driver's environment): the clients
// read the URIs of --uris (by weight) with the tokens of --tokens, and
// every answer is compared, by SHA-256, with what --expect says that
// principal gets for that URI (or what a quiet first pass recorded, with
// --record). A wrong body fails the run; so do failed reads and partial
// bundles, unless --tolerate-failures (while you inject faults):
//
//	mcp-load --config resources.yaml --uris uris.txt --tokens tokens.txt --record answers.txt --duration 10s
//	mcp-load --config resources.yaml --uris uris.txt --tokens tokens.txt --expect answers.txt --clients 32 --duration 60s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	// The driver shares the machine with the server it measures, and its
	// heap is small: collected at Go's default pace it spent a sixth of
	// its CPU in the collector under the 64-client load. Its children
	// (the server, versitygw) keep their own settings.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is the command line.
type config struct {
	postgres    string
	versitygw   string
	s3KeepAlive bool
	serverBin   string
	clients     int
	duration    time.Duration
	warmup      time.Duration
	recovery    time.Duration
	faults      bool
	faultEvery  time.Duration
	sweep       []int
	csv         string
	progress    time.Duration
	maxRequests int64
	settle      time.Duration
	projects    int
	assets      int
	seed        uint64
	keep        bool
	stateless   bool
	poolMax     int
	repeat      int
	standby     string    // a hot standby of --postgres: the server reads bodies there
	sessions    int       // hold this many subscribed sessions instead of running load
	file        fileFlags // a run against --config FILE
}

// Limits on the flags, so that every run is bounded.
const (
	maxClients  = 256
	maxDuration = 10 * time.Minute
)

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("mcp-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.postgres, "postgres", os.Getenv("MCPRES_POSTGRES_URL"), "PostgreSQL server URL of a role that may create databases, on a loopback host (default $MCPRES_POSTGRES_URL)")
	fs.StringVar(&c.versitygw, "versitygw", os.Getenv("MCPRES_VERSITYGW"), "versitygw binary, run as the driver's own S3 server (default $MCPRES_VERSITYGW, else versitygw on PATH)")
	fs.BoolVar(&c.s3KeepAlive, "s3-keep-alive", false, "run versitygw with --keep-alive: it closes every connection after one response otherwise, which AWS S3 and MinIO do not (versitygw is restarted before each baseline snapshot, which then counts none of the idle connections the server keeps)")
	fs.StringVar(&c.serverBin, "server", "", "mcp-resources binary (default: go build ./cmd/mcp-resources into a temporary directory)")
	fs.IntVar(&c.clients, "clients", 16, "concurrent MCP clients")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "length of the load phase (of each step with --sweep)")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "warm-up at the same concurrency before the baseline is taken")
	fs.DurationVar(&c.recovery, "recovery", 3*time.Second, "with --faults: the fault-free phase after the faults, which must be complete and correct")
	fs.BoolVar(&c.faults, "faults", false, "inject faults during the load phase")
	fs.DurationVar(&c.faultEvery, "fault-every", 150*time.Millisecond, "with --faults: time between two faults")
	sweep := fs.String("sweep", "", "comma-separated concurrencies: run one fault-free phase of --duration at each (for the plot)")
	fs.IntVar(&c.repeat, "repeat", 1, "with --sweep: phases per concurrency; the CSV holds the median of each figure")
	fs.StringVar(&c.csv, "csv", "", "with --sweep: write one line per concurrency to this CSV file")
	fs.DurationVar(&c.progress, "progress", time.Second, "interval of the progress line on stderr")
	fs.Int64Var(&c.maxRequests, "max-requests", 10_000_000, "most requests of one phase")
	fs.DurationVar(&c.settle, "settle", 20*time.Second, "how long to wait for the server to return to its baseline after the load")
	fs.IntVar(&c.projects, "projects", 4, "projects in the dataset")
	fs.IntVar(&c.assets, "assets", 8, "assets per project (2 to 10)")
	fs.Uint64Var(&c.seed, "seed", 0, "random seed (0: from the clock); the seed is printed")
	fs.BoolVar(&c.stateless, "stateless", false, "serve without sessions (serve --stateless with a cursor key), as replicas behind a load balancer do")
	fs.IntVar(&c.poolMax, "pool-max-conns", 0, "the server's PostgreSQL pool size (pool_max_conns in its --postgres URL); 0 keeps pgx's default, max(4, cores)")
	fs.StringVar(&c.standby, "standby", "", "PostgreSQL URL of a streaming hot standby of --postgres, on a loopback host (services.sh up --standby prints it as $MCPRES_POSTGRES_STANDBY_URL): the server reads bodies there (serve --postgres-standby), every answer still checked, and the run ends with the server's standby metrics; bodies are 16 KiB larger, so that none comes inline with its plan")
	fs.IntVar(&c.sessions, "sessions", 0, fmt.Sprintf("run no load: open this many stateful sessions (1 to %d), each subscribed to one body, and print the server's resident memory before and with them", maxSessions))
	fs.BoolVar(&c.keep, "keep", false, "keep the temporary directory (server and versitygw logs)")
	fs.StringVar(&c.file.config, "config", "", "drive a server started as serve --config FILE (your own resources file and services) instead of the reference schema; needs --uris, --tokens and --expect or --record")
	fs.StringVar(&c.file.uris, "uris", "", "with --config: the URIs to read, one a line, each optionally followed by its weight (1 to 1000)")
	fs.StringVar(&c.file.tokens, "tokens", "", "with --config: PRINCIPAL TOKEN a line, the bearer tokens the clients read with (alternating)")
	fs.StringVar(&c.file.serverTokens, "server-tokens", "", "with --config: the server's tokens file (hash-token lines) for the --tokens; default: built from --tokens with hash-token")
	fs.StringVar(&c.file.expect, "expect", "", "with --config: PRINCIPAL URI ANSWER-SHA256 [ITEM-SHA256 ...] a line, each principal's answer for each URI, as --record writes them")
	fs.StringVar(&c.file.record, "record", "", "with --config: read every URI as every principal twice, one request at a time, write the answers to this file as --expect reads them, then load")
	fs.BoolVar(&c.file.tolerate, "tolerate-failures", false, "with --config: count failed reads and partial bundles without failing the run (while you inject faults); a wrong body still fails it")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *sweep != "" {
		for _, f := range strings.Split(*sweep, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return nil, fmt.Errorf("--sweep: %q is not a positive number", f)
			}
			c.sweep = append(c.sweep, n)
		}
	}
	if c.seed == 0 {
		c.seed = uint64(time.Now().UnixNano())
	}
	if c.file.config != "" {
		return c, c.checkFile()
	}
	if c.file != (fileFlags{}) {
		return nil, errors.New("--uris, --tokens, --server-tokens, --expect, --record and --tolerate-failures are for a run against --config")
	}
	if c.standby != "" {
		if _, err := loopbackPostgres("--standby", c.standby); err != nil {
			return nil, err
		}
	}
	switch {
	case c.postgres == "":
		return nil, errors.New("--postgres (or MCPRES_POSTGRES_URL) is required: eval \"$(scripts/services.sh up)\"")
	case c.clients < 1 || c.clients > maxClients:
		return nil, fmt.Errorf("--clients must be 1 to %d", maxClients)
	case c.duration <= 0 || c.duration > maxDuration || c.warmup < 0 || c.warmup > maxDuration || c.recovery < 0 || c.recovery > maxDuration:
		return nil, fmt.Errorf("--duration, --warmup and --recovery must be at most %s (and --duration positive)", maxDuration)
	case c.faults && c.sweep != nil:
		return nil, errors.New("--faults and --sweep do not mix: the sweep measures latency without faults")
	case c.faultEvery < 10*time.Millisecond:
		return nil, errors.New("--fault-every must be at least 10ms")
	case c.projects < 1 || c.projects > 20 || c.assets < 2 || c.assets > 10:
		return nil, errors.New("--projects must be 1 to 20 and --assets 2 to 10")
	case c.repeat < 1 || c.repeat > 9:
		return nil, errors.New("--repeat must be 1 to 9")
	case c.poolMax < 0 || c.poolMax > 100:
		return nil, errors.New("--pool-max-conns must be 0 to 100")
	case c.maxRequests < 1:
		return nil, errors.New("--max-requests must be positive")
	case c.sessions < 0 || c.sessions > maxSessions:
		return nil, fmt.Errorf("--sessions must be 1 to %d", maxSessions)
	case c.sessions > 0 && (c.faults || c.sweep != nil || c.stateless):
		return nil, errors.New("--sessions runs no load: it does not mix with --faults, --sweep or --stateless")
	}
	for _, n := range c.sweep {
		if n > maxClients {
			return nil, fmt.Errorf("--sweep: at most %d clients", maxClients)
		}
	}
	if c.versitygw == "" {
		if p, err := exec.LookPath("versitygw"); err == nil {
			c.versitygw = p
		} else {
			return nil, errors.New("--versitygw (or MCPRES_VERSITYGW) is required: the driver runs its own S3 server")
		}
	}
	return c, nil
}

// checkFile checks the flags of a run against --config.
func (c *config) checkFile() error {
	f := c.file
	switch {
	case f.uris == "" || f.tokens == "":
		return errors.New("--config needs --uris and --tokens")
	case (f.expect == "") == (f.record == ""):
		return errors.New("--config needs one of --expect (the answers to check) and --record (write them from a quiet first pass)")
	case c.clients < 1 || c.clients > maxClients:
		return fmt.Errorf("--clients must be 1 to %d", maxClients)
	case c.duration <= 0 || c.duration > maxDuration || c.warmup < 0 || c.warmup > maxDuration:
		return fmt.Errorf("--duration and --warmup must be at most %s (and --duration positive)", maxDuration)
	case c.faults || c.sweep != nil || c.sessions != 0:
		return errors.New("--faults, --sweep and --sessions are for the reference schema: with --config, inject your own faults and pass --tolerate-failures")
	case c.maxRequests < 1:
		return errors.New("--max-requests must be positive")
	}
	return nil
}

// run parses args, runs the load and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcp-load: %v\n", err)
		return 2
	}
	d := &driver{c: c, out: stdout, log: stderr}
	if c.file.config != "" {
		return (&fileDriver{c: c, d: d}).run(ctx)
	}
	return d.run(ctx)
}

// driver is one run of the command.
type driver struct {
	c        *config
	out, log io.Writer

	dir    string
	db     *database
	s3     *s3server
	w      *writer
	srv    *server
	tokens map[string]string // principal -> bearer token
	failed bool              // a check failed: exit 1
}

func (d *driver) run(ctx context.Context) int {
	defer d.teardown()
	if err := d.setup(ctx); err != nil {
		fmt.Fprintf(d.log, "mcp-load: setup: %v\n", err)
		return 2
	}
	load := d.load
	if d.c.sessions > 0 {
		load = d.holdSessions
	}
	if err := load(ctx); err != nil {
		fmt.Fprintf(d.log, "mcp-load: %v\n", err)
		d.failed = true
	}
	srv := d.srv
	d.srv = nil
	if d.c.standby != "" {
		d.reportStandby(srv)
	}
	return d.conclude(srv)
}

// reportStandby prints the server's standby metrics: the bodies and bytes
// the standby served, the primary's, and the fallbacks by reason. A run
// in which the standby served no body fails: it proved nothing of it.
func (d *driver) reportStandby(srv *server) {
	body, err := srv.metrics()
	if err != nil {
		fmt.Fprintf(d.out, "FAIL standby: no metrics: %v\n", err)
		d.failed = true
		return
	}
	var bodies float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "mcpres_standby_") {
			continue
		}
		fmt.Fprintf(d.out, "standby: %s\n", line)
		if strings.HasPrefix(line, "mcpres_standby_bodies_total{") {
			if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
				bodies += v
			}
		}
	}
	if bodies == 0 {
		fmt.Fprintln(d.out, "FAIL standby: it served no body")
		d.failed = true
	}
}

// conclude stops srv and prints the run's result: RESULT: FAIL with the
// tail of the server's log (exit status 1) when anything failed or the
// server did not exit cleanly on SIGTERM, else RESULT: PASS (0).
func (d *driver) conclude(srv *server) int {
	if err := srv.stop(); err != nil {
		// A race-built server exits 66 after reporting a data race.
		fmt.Fprintf(d.out, "FAIL the server did not exit cleanly on SIGTERM: %v\n", err)
		d.failed = true
	}
	if d.failed {
		d.logTail(filepath.Join(d.dir, "server.log"), 40)
		fmt.Fprintln(d.out, "RESULT: FAIL")
		return 1
	}
	fmt.Fprintln(d.out, "RESULT: PASS")
	return 0
}

func (d *driver) setup(ctx context.Context) error {
	c := d.c
	var err error
	if d.dir, err = os.MkdirTemp("", "mcp-load-"); err != nil {
		return err
	}
	if c.serverBin == "" {
		c.serverBin = filepath.Join(d.dir, "mcp-resources")
		fmt.Fprintln(d.log, "mcp-load: building cmd/mcp-resources")
		out, err := exec.CommandContext(ctx, "go", "build", "-o", c.serverBin, "go.phpboyscout.uk/mcp/resources/cmd/mcp-resources").CombinedOutput()
		if err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	if d.db, err = createDatabase(sctx, c.postgres); err != nil {
		return err
	}
	if _, err := runTool(sctx, c.serverBin, "", "migrate", "--postgres="+d.db.url); err != nil {
		return err
	}
	if err := d.db.open(sctx); err != nil {
		return err
	}
	if d.s3, err = startS3(c.versitygw, filepath.Join(d.dir, "s3"), c.s3KeepAlive); err != nil {
		return err
	}
	s3c, err := d.s3.client()
	if err != nil {
		return err
	}
	bucket := "mcpload-" + randomHex(6)
	if err := createBucket(sctx, s3c, bucket); err != nil {
		return fmt.Errorf("create bucket: %w", err)
	}
	ds := newDataset(c.projects, c.assets, []string{"load-a", "load-b"})
	if c.standby != "" {
		ds.minBody = 16 << 10 // read by the body statement, which goes to the standby
	}
	d.w = &writer{d: ds, db: d.db, s3: s3c, bucket: bucket}
	if _, err := d.w.load(sctx); err != nil {
		return err
	}
	d.tokens = map[string]string{}
	var lines strings.Builder
	for _, p := range ds.principals {
		d.tokens[p] = randomHex(16)
		line, err := runTool(sctx, c.serverBin, d.tokens[p]+"\n", "hash-token", p)
		if err != nil {
			return err
		}
		lines.WriteString(line)
	}
	tokens := filepath.Join(d.dir, "tokens")
	if err := os.WriteFile(tokens, []byte(lines.String()), 0o600); err != nil {
		return err
	}
	serverDB := d.db.url
	if c.poolMax > 0 {
		serverDB += "&pool_max_conns=" + strconv.Itoa(c.poolMax)
		if !strings.Contains(d.db.url, "?") {
			serverDB = d.db.url + "?pool_max_conns=" + strconv.Itoa(c.poolMax)
		}
	}
	args := []string{"--tokens=" + tokens,
		"--postgres=" + serverDB, "--bucket=" + bucket, "--bucket-endpoint=" + d.s3.endpoint(), "--bucket-region=us-east-1",
		"--bucket-access-key=" + d.s3.access, "--bucket-secret-key=" + d.s3.secret, "--bucket-path-style",
		"--list-page-size=2"}
	if c.standby != "" {
		standby, err := d.db.on(sctx, c.standby)
		if err != nil {
			return err
		}
		args = append(args, "--postgres-standby="+standby)
	}
	if c.sessions > 0 {
		more, err := sessionArgs(sctx, c.serverBin, c.sessions)
		if err != nil {
			return err
		}
		args = append(args, more...)
	}
	if c.stateless {
		key := filepath.Join(d.dir, "cursor.key")
		if err := os.WriteFile(key, []byte(randomHex(32)), 0o600); err != nil {
			return err
		}
		args = append(args, "--stateless", "--cursor-key-file="+key)
	}
	if d.srv, err = startServer(c.serverBin, filepath.Join(d.dir, "server.log"), args...); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "mcp-load: server %s (pid %d, stateless %v), %d projects x %d assets, principals %v, seed %d\n",
		d.srv.Addr, d.srv.Cmd.Process.Pid, c.stateless, c.projects, c.assets, ds.principals, c.seed)
	return nil
}

func (d *driver) teardown() {
	if d.srv != nil {
		_ = d.srv.stop()
	}
	if d.s3 != nil {
		d.s3.kill()
		d.s3.log.Close()
	}
	if d.db != nil {
		if err := d.db.drop(); err != nil {
			fmt.Fprintf(d.log, "mcp-load: drop database %s: %v\n", d.db.name, err)
		}
	}
	if d.dir != "" {
		if d.c.keep || d.failed {
			fmt.Fprintf(d.log, "mcp-load: logs kept in %s\n", d.dir)
		} else {
			os.RemoveAll(d.dir)
		}
	}
}

// logTail prints the last n lines of a log file.
func (d *driver) logTail(path string, n int) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	lines = lines[max(0, len(lines)-n):]
	fmt.Fprintf(d.out, "--- last %d lines of %s\n%s\n---\n", len(lines), path, strings.Join(lines, "\n"))
}

// fail records a failed check.
func (d *driver) fail(format string, args ...any) {
	d.failed = true
	fmt.Fprintf(d.out, "FAIL "+format+"\n", args...)
}

// load runs the phases: warm-up, baseline, load (with faults), recovery,
// then the comparison with the baseline; or the sweep.
func (d *driver) load(ctx context.Context) error {
	c := d.c
	cold, err := d.srv.take(ctx, d.db)
	if err != nil {
		return err
	}
	chk := &checker{d: d.w.d, o: d.w.o, strict: true}
	if c.sweep != nil {
		return d.sweep(ctx, chk, cold)
	}
	if c.warmup > 0 {
		if _, err := d.phase(ctx, "warm-up", c.clients, c.warmup, chk, nil); err != nil {
			return err
		}
	}
	base, err := d.settle(ctx, snapshot{goroutines: -1})
	if err != nil {
		return err
	}

	clients, err := d.connect(ctx, c.clients)
	if err != nil {
		return err
	}
	defer func() { closeAll(clients) }()
	name := "load"
	var f *faulter
	if c.faults {
		name = "load+faults"
		f = &faulter{w: d.w, s3: d.s3, rng: rand.New(rand.NewPCG(c.seed, 1)), counts: map[string]int{}}
		chk = &checker{d: d.w.d, o: d.w.o, strict: false}
	}
	if _, err := d.runPhase(ctx, name, clients, c.duration, chk, f); err != nil {
		return err
	}
	if c.faults {
		fmt.Fprintf(d.out, "faults injected: %s\n", formatCounts(f.tally()))
		if c.recovery > 0 {
			chk = &checker{d: d.w.d, o: d.w.o, strict: true}
			if _, err := d.runPhase(ctx, "recovery", clients, c.recovery, chk, nil); err != nil {
				return err
			}
		}
	}
	closeAll(clients)
	clients = nil
	after, err := d.settle(ctx, base)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "resources   %10s %10s %10s\n", "cold", "baseline", "after")
	for _, row := range []struct {
		name string
		f    func(snapshot) int
	}{
		{"goroutines", func(s snapshot) int { return s.goroutines }},
		{"pg conns", func(s snapshot) int { return s.pgConns }},
		{"http conns", func(s snapshot) int { return s.httpConns }},
		{"sessions", func(s snapshot) int { return s.sessions }},
	} {
		fmt.Fprintf(d.out, "  %-10s %10d %10d %10d\n", row.name, row.f(cold), row.f(base), row.f(after))
	}
	if !after.atBaseline(base) {
		d.fail("not back at baseline within %s: %s, baseline %s", c.settle, after, base)
	}
	if !d.srv.Alive() {
		d.fail("the server process exited during the run")
	}
	return nil
}

// sweep runs one fault-free phase per concurrency and writes the CSV.
func (d *driver) sweep(ctx context.Context, chk *checker, cold snapshot) error {
	var csv strings.Builder
	csv.WriteString(csvHeader)
	for _, n := range d.c.sweep {
		if d.c.warmup > 0 {
			if _, err := d.phase(ctx, fmt.Sprintf("warm-up %d", n), n, d.c.warmup, chk, nil); err != nil {
				return err
			}
		}
		var runs []summary
		for i := range d.c.repeat {
			s, err := d.phase(ctx, fmt.Sprintf("sweep %d (%d/%d)", n, i+1, d.c.repeat), n, d.c.duration, chk, nil)
			if err != nil {
				return err
			}
			runs = append(runs, s)
		}
		csv.WriteString(medianOf(runs).csvRow())
	}
	after, err := d.settle(ctx, cold)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "after the sweep: %s (cold: %s)\n", after, cold)
	if d.c.csv != "" {
		if err := os.WriteFile(d.c.csv, []byte(csv.String()), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(d.out, "wrote %s\n", d.c.csv)
	} else {
		fmt.Fprint(d.out, csv.String())
	}
	return nil
}

// connect opens n client sessions, alternating principals.
func (d *driver) connect(ctx context.Context, n int) ([]*client, error) {
	endpoint := "http://" + d.srv.Addr + "/mcp"
	var clients []*client
	for i := range n {
		p := d.w.d.principals[i%len(d.w.d.principals)]
		cl, err := connect(ctx, endpoint, p, d.tokens[p])
		if err != nil {
			closeAll(clients)
			return nil, fmt.Errorf("connect client %d: %w", i, err)
		}
		clients = append(clients, cl)
	}
	return clients, nil
}

func closeAll(clients []*client) {
	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Go(cl.close)
	}
	wg.Wait()
}

// phase connects n clients, runs one phase and closes them.
func (d *driver) phase(ctx context.Context, name string, n int, dur time.Duration, chk *checker, f *faulter) (summary, error) {
	clients, err := d.connect(ctx, n)
	if err != nil {
		return summary{}, err
	}
	defer closeAll(clients)
	return d.runPhase(ctx, name, clients, dur, chk, f)
}

// runPhase runs the clients for dur (and the faulter, if any, for the
// first 80% of it), prints progress and the summary, and records failed
// checks.
func (d *driver) runPhase(ctx context.Context, name string, clients []*client, dur time.Duration, chk *checker, f *faulter) (summary, error) {
	before, err := d.srv.take(ctx, d.db)
	if err != nil {
		return summary{}, err
	}
	peak := before
	p := &phase{chk: chk, st: newStats(), deadline: time.Now().Add(dur)}
	p.budget.Store(d.c.maxRequests)
	start := time.Now()
	var wg sync.WaitGroup
	for i, cl := range clients {
		rng := rand.New(rand.NewPCG(d.c.seed, uint64(i)+2+uint64(start.UnixNano())))
		wg.Go(func() { cl.loop(ctx, p, rng) })
	}
	var faultErr error
	if f != nil {
		wg.Go(func() {
			faultErr = f.run(ctx, start.Add(dur*8/10), d.c.faultEvery)
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(d.c.progress)
	defer tick.Stop()
	last, lastN := start, 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		case now := <-tick.C:
			n, unexpected, wrong := p.st.counts()
			line := fmt.Sprintf("[%s] %5.1fs/%.0fs %8d requests %7.1f req/s  unexpected %d  wrong %d",
				name, now.Sub(start).Seconds(), dur.Seconds(), n, float64(n-lastN)/now.Sub(last).Seconds(), unexpected, wrong)
			if f != nil {
				t := f.tally()
				line += fmt.Sprintf("  faults: %d overwrites, %d revokes, %d terminations, %d S3 restarts",
					t[faultOverwrite], t[faultRevoke], t[faultTerminate], t[faultS3])
			}
			fmt.Fprintln(d.log, line)
			last, lastN = now, n
			if now, err := d.srv.take(ctx, d.db); err == nil {
				peak = peak.peak(now)
			}
		}
	}
	s := p.st.summarize(name, len(clients), time.Since(start))
	s.print(d.out)
	after, err := d.srv.take(ctx, d.db)
	if err != nil {
		return s, err
	}
	fmt.Fprintf(d.out, "  peak during the phase: %s\n", peak.peak(after))
	served, by := after.served(before)
	fmt.Fprintf(d.out, "  the server counted %d requests: %s\n", served, formatCounts(by))
	fmt.Fprintf(d.out, "  the server's own time per request, mean ms (requests): %s\n", after.handledSince(before))
	if served != s.requests {
		d.fail("phase %s: the driver saw %d responses and the server counted %d requests", name, s.requests, served)
	}
	if faultErr != nil {
		return s, fmt.Errorf("fault injection: %w", faultErr)
	}
	if ctx.Err() != nil {
		return s, ctx.Err()
	}
	n, unexpected, wrong := p.st.counts()
	if unexpected > 0 || wrong > 0 {
		d.fail("phase %s: %d unexpected responses and %d wrong answers in %d requests", name, unexpected, wrong, n)
	}
	if n == 0 {
		d.fail("phase %s: no request completed", name)
	}
	return s, nil
}

// settle waits until the server uses no more than base (every measure at
// or under it, goroutines within goroutineSlack), or until --settle has
// passed, and returns the last snapshot. A base with negative goroutines
// takes the first snapshot whose measures stop falling. With
// --s3-keep-alive it restarts versitygw first.
func (d *driver) settle(ctx context.Context, base snapshot) (snapshot, error) {
	if d.c.s3KeepAlive {
		// The server keeps idle connections to a versitygw that keeps them
		// alive, each a goroutine or two until its idle timeout: restart
		// versitygw so that no snapshot counts any.
		d.s3.kill()
		if err := d.s3.start(); err != nil {
			return snapshot{}, err
		}
	}
	deadline := time.Now().Add(d.c.settle)
	var prev snapshot
	for i := 0; ; i++ {
		s, err := d.srv.take(ctx, d.db)
		if err != nil {
			return s, err
		}
		switch {
		case base.goroutines >= 0 && s.atBaseline(base):
			return s, nil
		case base.goroutines < 0 && i > 0 && s.httpConns == 0 && s.sessions == 0 && s.goroutines >= prev.goroutines:
			return s, nil
		case time.Now().After(deadline):
			return s, nil
		}
		prev = s
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
