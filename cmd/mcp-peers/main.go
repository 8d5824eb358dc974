// Command mcp-peers compares one same-row read through the reference
// server (mcp-resources serve --postgres, over stdio) with the same row
// read through two peers' unauthorized SQL tools over stdio: the query tool
// of @modelcontextprotocol/server-postgres and the execute_sql tool of
// @bytebase/dbhub. One go-sdk client process starts every server as a
// child process against one PostgreSQL database of the reference schema
// with the seed data (mcp-resources migrate, then seed), and reads:
//
//   - ours: resources/read of asset://project/P/asset/A (the asset's
//     fields resource) as a principal that may read it (--principal);
//   - server-postgres: tools/call query with the statement of the same
//     row's fields, as the --postgres role (the peers' own way: one
//     connection string, no per-caller access);
//   - dbhub: tools/call execute_sql with the same statement.
//
// After a warm-up, the calls run one at a time, round-robin across the
// servers (the first server of each round rotates), --calls per server.
// Every answer is checked against the row as the harness reads it itself
// with pgx: a wrong or failed answer is counted and fails the run. It
// prints p50, p90 and p99 per server and the ratio ours / peer of each,
// and each server process's resident memory after its calls (VmHWM, the
// peak, and VmRSS, from /proc/PID/status; a peer's is its Node process's).
// With --starts N it also times exec to initialize answered, N times per
// server (median, interleaved the same way).
//
//	scripts/peers.sh                  # prepares the database and the peers, then runs this
//	mcp-peers --postgres URL --bucket B --peers .cache/peers --calls 2000
//
// Traffic goes to loopback only: --postgres must name a loopback host, and
// every server is a child process on stdio. It exits 0 when every answer
// was right, 1 otherwise, 2 when it could not set up.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/internal/serverproc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Limits on the flags, so that every run is bounded.
const (
	maxCalls  = 100_000
	maxStarts = 200
	maxTime   = 30 * time.Minute
)

// config is the command line.
type config struct {
	postgres    string
	server      string
	baseline    string
	bucket      string
	endpoint    string
	peers       string
	node        string
	principal   string
	project     string
	asset       string
	calls       int
	warmup      int
	starts      int
	callTimeout time.Duration
	maxTime     time.Duration
	only        []string
	logs        string
	show        bool
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("mcp-peers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.postgres, "postgres", os.Getenv("MCPRES_DATABASE_URL"), "PostgreSQL URL of a database of the reference schema with the seed data, on a loopback host; every server connects with it (default $MCPRES_DATABASE_URL)")
	fs.StringVar(&c.server, "server", "", "mcp-resources binary (required)")
	fs.StringVar(&c.baseline, "baseline", "", "a second mcp-resources binary (an older build) read the same way as ours, as one more server of the run")
	fs.StringVar(&c.bucket, "bucket", os.Getenv("MCPRES_BUCKET"), "the seed's bucket, passed to our server (default $MCPRES_BUCKET)")
	fs.StringVar(&c.endpoint, "bucket-endpoint", os.Getenv("MCPRES_S3_ENDPOINT"), "the bucket's S3 endpoint, on loopback (default $MCPRES_S3_ENDPOINT); keys from $MCPRES_S3_ACCESS_KEY and $MCPRES_S3_SECRET_KEY")
	fs.StringVar(&c.peers, "peers", ".cache/peers", "directory whose node_modules holds @modelcontextprotocol/server-postgres and @bytebase/dbhub")
	fs.StringVar(&c.node, "node", "node", "Node.js binary for the peers (dbhub 1.4.0 needs >= 22.5)")
	fs.StringVar(&c.principal, "principal", "alice", "the principal our server serves over stdio; it must be allowed to read the asset")
	fs.StringVar(&c.project, "project", "handbook", "project of the asset read")
	fs.StringVar(&c.asset, "asset", "welcome", "the asset read (its fields resource; pick one without an object, so the read is one row)")
	fs.IntVar(&c.calls, "calls", 2000, "measured calls per server")
	fs.IntVar(&c.warmup, "warmup", 200, "warm-up calls per server, not measured")
	fs.IntVar(&c.starts, "starts", 0, "also time exec to initialize answered this many times per server (0: not)")
	fs.DurationVar(&c.callTimeout, "call-timeout", 10*time.Second, "bound of one call or one start")
	fs.DurationVar(&c.maxTime, "max-time", 10*time.Minute, "bound of the whole run")
	only := fs.String("only", "", "comma-separated servers to run (ours, baseline, server-postgres, dbhub); default all that are configured")
	fs.StringVar(&c.logs, "logs", "", "directory for the servers' stderr (default: a temporary directory, removed)")
	fs.BoolVar(&c.show, "show", false, "print each server's first answer (up to 400 bytes)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *only != "" {
		c.only = strings.Split(*only, ",")
	}
	switch {
	case c.server == "":
		return nil, errors.New("--server is required")
	case c.calls < 1 || c.calls > maxCalls:
		return nil, fmt.Errorf("--calls must be 1 to %d", maxCalls)
	case c.warmup < 0 || c.warmup > maxCalls:
		return nil, fmt.Errorf("--warmup must be 0 to %d", maxCalls)
	case c.starts < 0 || c.starts > maxStarts:
		return nil, fmt.Errorf("--starts must be 0 to %d", maxStarts)
	case c.callTimeout <= 0 || c.callTimeout > time.Minute:
		return nil, errors.New("--call-timeout must be positive and at most 1m")
	case c.maxTime <= 0 || c.maxTime > maxTime:
		return nil, fmt.Errorf("--max-time must be positive and at most %s", maxTime)
	}
	if err := loopbackURL("--postgres", c.postgres); err != nil {
		return nil, err
	}
	if c.endpoint != "" {
		if err := loopbackURL("--bucket-endpoint", c.endpoint); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// loopbackURL refuses a URL whose host is not a loopback address.
func loopbackURL(flagName, raw string) error {
	if raw == "" {
		return fmt.Errorf("%s is required", flagName)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", flagName, err)
	}
	h := u.Hostname()
	if h == "localhost" {
		return nil
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s must name a loopback host (127.0.0.1, ::1 or localhost), not %q", flagName, h)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parseFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "mcp-peers:", err)
		}
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, c.maxTime)
	defer cancel()
	logs := c.logs
	if logs == "" {
		if logs, err = os.MkdirTemp("", "mcp-peers-"); err != nil {
			fmt.Fprintln(stderr, "mcp-peers:", err)
			return 2
		}
		defer os.RemoveAll(logs)
	} else if err := os.MkdirAll(logs, 0o755); err != nil {
		fmt.Fprintln(stderr, "mcp-peers:", err)
		return 2
	}

	want, err := expectedBody(ctx, c)
	if err != nil {
		fmt.Fprintln(stderr, "mcp-peers:", err)
		return 2
	}
	servers, err := c.servers(logs, want)
	if err != nil {
		fmt.Fprintln(stderr, "mcp-peers:", err)
		return 2
	}
	fmt.Fprintf(stdout, "mcp-peers: %d calls per server after %d warm-up, interleaved; row %s/%s (%d bytes); %s\n",
		c.calls, c.warmup, c.project, c.asset, len(want), loadavg())

	if c.starts > 0 {
		if err := timeStarts(ctx, c, servers, stdout); err != nil {
			fmt.Fprintln(stderr, "mcp-peers:", err)
			return 2
		}
	}
	for _, s := range servers {
		if err := s.connect(ctx, c.callTimeout); err != nil {
			fmt.Fprintf(stderr, "mcp-peers: %s: %v\n%s", s.name, err, tail(s.logPath))
			closeAll(servers)
			return 2
		}
	}
	defer closeAll(servers)
	if err := readAll(ctx, c, servers); err != nil {
		fmt.Fprintln(stderr, "mcp-peers:", err)
		return 2
	}
	fmt.Fprintf(stdout, "after the run: %s\n", loadavg())
	report(stdout, servers, c.show)
	for _, s := range servers {
		if s.wrong > 0 || s.failed > 0 {
			return 1
		}
	}
	return 0
}

// fieldsStatement is the statement whose one value is the fields body of
// an asset, the body statement of the reference schema's asset resource
// without its grants condition (the peers have no per-caller access).
const fieldsStatement = `SELECT json_build_object(
  'project', a.project_id, 'id', a.id, 'version', a.version,
  'name', a.name, 'title', a.title, 'mimeType', a.mime_type, 'text', a.body_is_text,
  'bodySize', octet_length(a.body),
  'body', CASE WHEN a.body IS NOT NULL THEN 'asset://project/' || a.project_id || '/asset/' || a.id || '/body' END,
  'object', CASE WHEN a.object_bucket IS NOT NULL THEN json_build_object(
    'uri', 'asset://project/' || a.project_id || '/asset/' || a.id || '/object',
    'size', a.object_size) END,
  'updatedAt', a.updated_at)::text AS body
FROM mcpres.assets a WHERE a.project_id = %s AND a.id = %s`

// peerStatement is fieldsStatement with the project and asset as SQL
// literals, as a user would type it into a peer's tool.
func peerStatement(project, asset string) string {
	return fmt.Sprintf(fieldsStatement, sqlLiteral(project), sqlLiteral(asset))
}

// sqlLiteral quotes s as a standard SQL string literal.
func sqlLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// expectedBody reads the row once with pgx: the body every server must
// answer, and a check that the asset has no object (one row, no S3).
func expectedBody(ctx context.Context, c *config) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.postgres)
	if err != nil {
		return "", fmt.Errorf("connecting to --postgres: %w", err)
	}
	defer conn.Close(context.Background())
	var body string
	var hasObject bool
	err = conn.QueryRow(ctx, `SELECT object_bucket IS NOT NULL FROM mcpres.assets WHERE project_id = $1 AND id = $2`,
		c.project, c.asset).Scan(&hasObject)
	if err == nil {
		err = conn.QueryRow(ctx, fmt.Sprintf(fieldsStatement, "$1", "$2"), c.project, c.asset).Scan(&body)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("no asset %s/%s: run mcp-resources migrate and seed first", c.project, c.asset)
	}
	if err != nil {
		return "", fmt.Errorf("reading the asset: %w", err)
	}
	if hasObject {
		return "", fmt.Errorf("asset %s/%s references an object: pick one without (its read would be more than one row)", c.project, c.asset)
	}
	return body, nil
}

// servers returns the servers of the run, in their round-robin order.
func (c *config) servers(logs, want string) ([]*server, error) {
	ourEnv := serverproc.Env()
	if c.endpoint != "" {
		ourEnv = append(ourEnv,
			"MCPRES_BUCKET_ACCESS_KEY="+os.Getenv("MCPRES_S3_ACCESS_KEY"),
			"MCPRES_BUCKET_SECRET_KEY="+os.Getenv("MCPRES_S3_SECRET_KEY"))
	}
	ourArgs := []string{"serve", "--postgres", c.postgres, "--principal", c.principal}
	if c.bucket != "" {
		ourArgs = append(ourArgs, "--bucket", c.bucket)
	}
	if c.endpoint != "" {
		ourArgs = append(ourArgs, "--bucket-endpoint", c.endpoint, "--bucket-path-style")
	}
	uri := "asset://project/" + c.project + "/asset/" + c.asset
	ours := func(name, bin string) *server {
		return &server{
			name: name, bin: bin, args: ourArgs, env: ourEnv, logPath: filepath.Join(logs, name+".log"),
			call: func(ctx context.Context, cs *mcp.ClientSession) (string, error) {
				res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				if err != nil {
					return "", err
				}
				if len(res.Contents) != 1 {
					return "", fmt.Errorf("%d contents, want 1", len(res.Contents))
				}
				return res.Contents[0].Text, nil
			},
			check: func(got string) bool { return got == want },
		}
	}
	// A peer's answer is text holding the row as JSON; it is right when
	// it holds the body as a JSON string value.
	quoted := jsonString(want)
	peerCheck := func(got string) bool { return strings.Contains(got, quoted) }
	stmt := peerStatement(c.project, c.asset)
	tool := func(name string) func(context.Context, *mcp.ClientSession) (string, error) {
		return func(ctx context.Context, cs *mcp.ClientSession) (string, error) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"sql": stmt}})
			if err != nil {
				return "", err
			}
			var text strings.Builder
			for _, ct := range res.Content {
				if t, ok := ct.(*mcp.TextContent); ok {
					text.WriteString(t.Text)
				}
			}
			if res.IsError {
				return "", fmt.Errorf("tool error: %.200s", text.String())
			}
			return text.String(), nil
		}
	}
	peerEnv := serverproc.Env()
	all := []*server{ours("ours", c.server)}
	if c.baseline != "" {
		all = append(all, ours("baseline", c.baseline))
	}
	all = append(all,
		&server{
			name: "server-postgres", bin: c.node, env: peerEnv, logPath: filepath.Join(logs, "server-postgres.log"),
			args:  []string{filepath.Join(c.peers, "node_modules/@modelcontextprotocol/server-postgres/dist/index.js"), c.postgres},
			call:  tool("query"),
			check: peerCheck,
		},
		&server{
			name: "dbhub", bin: c.node, env: peerEnv, logPath: filepath.Join(logs, "dbhub.log"),
			args:  []string{filepath.Join(c.peers, "node_modules/@bytebase/dbhub/dist/index.js"), "--transport", "stdio", "--dsn", c.postgres},
			call:  tool("execute_sql"),
			check: peerCheck,
		})
	if len(c.only) == 0 {
		return all, nil
	}
	var picked []*server
	for _, name := range c.only {
		i := slices.IndexFunc(all, func(s *server) bool { return s.name == name })
		if i < 0 {
			return nil, fmt.Errorf("--only: no server %q in this run", name)
		}
		picked = append(picked, all[i])
	}
	return picked, nil
}

// jsonString is s as a JSON string, without HTML escaping (as Node's
// JSON.stringify writes it).
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// server is one MCP server of the run, started over stdio.
type server struct {
	name    string
	bin     string
	args    []string
	env     []string
	logPath string
	call    func(context.Context, *mcp.ClientSession) (string, error)
	check   func(string) bool

	session *mcp.ClientSession
	log     *os.File
	pid     int
	lat     []time.Duration
	starts  []time.Duration
	wrong   int
	failed  int
	first   string              // the first answer
	cpu     time.Duration       // the process's CPU time over the measured calls (0: unknown)
	mem     serverproc.Resident // the process's resident memory after its calls (0: unknown)
	sample  string              // the first wrong or failed answer
}

// start execs the server and answers when initialize is answered.
func (s *server) start(ctx context.Context, timeout time.Duration) (*mcp.ClientSession, *os.File, error) {
	log, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(s.bin, s.args...)
	cmd.Env = s.env
	cmd.Stderr = log
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-peers", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		log.Close()
		return nil, nil, err
	}
	if cmd.Process != nil {
		s.pid = cmd.Process.Pid
	}
	return cs, log, nil
}

func (s *server) connect(ctx context.Context, timeout time.Duration) error {
	cs, log, err := s.start(ctx, timeout)
	if err != nil {
		return err
	}
	s.session, s.log = cs, log
	return nil
}

func (s *server) close() {
	if s.session != nil {
		_ = s.session.Close()
		s.session = nil
	}
	if s.log != nil {
		_ = s.log.Close()
		s.log = nil
	}
}

func closeAll(servers []*server) {
	for _, s := range servers {
		s.close()
	}
}

// once makes one call and checks its answer.
func (s *server) once(ctx context.Context, timeout time.Duration) (time.Duration, bool) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t0 := time.Now()
	got, err := s.call(ctx, s.session)
	d := time.Since(t0)
	if s.first == "" {
		s.first = got
	}
	switch {
	case err != nil:
		s.failed++
		if s.sample == "" {
			s.sample = "failed: " + err.Error()
		}
		return d, false
	case !s.check(got):
		s.wrong++
		if s.sample == "" {
			s.sample = fmt.Sprintf("wrong: %.300s", got)
		}
		return d, false
	}
	return d, true
}

// readAll runs the warm-up, then the measured calls, round-robin with the
// first server of each round rotating.
func readAll(ctx context.Context, c *config, servers []*server) error {
	n := len(servers)
	cpu0 := make([]time.Duration, n)
	for round := range c.warmup + c.calls {
		if round == c.warmup {
			for i, s := range servers {
				cpu0[i] = processCPU(s.pid)
			}
		}
		for j := range n {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("stopped after %d rounds: %w", round, err)
			}
			s := servers[(round+j)%n]
			d, ok := s.once(ctx, c.callTimeout)
			if !ok && s.wrong+s.failed == 1 {
				s.sample = fmt.Sprintf("round %d of %d (%d of warm-up), after %s: %s", round+1, c.warmup+c.calls, c.warmup, ms(d), s.sample)
			}
			if round >= c.warmup {
				s.lat = append(s.lat, d)
			}
		}
	}
	for i, s := range servers {
		if t := processCPU(s.pid); t > 0 && cpu0[i] > 0 {
			s.cpu = t - cpu0[i]
		}
		s.mem, _ = serverproc.Memory(s.pid)
	}
	return nil
}

func mib(kb int64) string { return fmt.Sprintf("%.1f MiB", float64(kb)/1024) }

// processCPU is the user and system CPU time of process pid so far, from
// /proc (0 when unknown). Its resolution is one clock tick (10 ms).
func processCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	var utime, stime int64
	if _, err := fmt.Sscan(f[11], &utime); err != nil {
		return 0
	}
	if _, err := fmt.Sscan(f[12], &stime); err != nil {
		return 0
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(utime+stime) * tick
}

// timeStarts times exec to initialize answered, c.starts times per server,
// interleaved, and prints the median of each.
func timeStarts(ctx context.Context, c *config, servers []*server, w io.Writer) error {
	n := len(servers)
	for round := range c.starts {
		for j := range n {
			s := servers[(round+j)%n]
			t0 := time.Now()
			cs, log, err := s.start(ctx, c.callTimeout)
			d := time.Since(t0)
			if err != nil {
				return fmt.Errorf("%s: start %d: %w\n%s", s.name, round+1, err, tail(s.logPath))
			}
			_ = cs.Close()
			log.Close()
			s.starts = append(s.starts, d)
		}
	}
	fmt.Fprintf(w, "\nexec to initialize answered, median of %d (min-max):\n", c.starts)
	ours := percentile(servers[0].starts, 50)
	for _, s := range servers {
		p := percentile(s.starts, 50)
		fmt.Fprintf(w, "  %-16s %8s (%s-%s)  %s / %s = %.2fx\n", s.name, ms(p), ms(slices.Min(s.starts)), ms(slices.Max(s.starts)),
			servers[0].name, s.name, float64(ours)/float64(p))
	}
	return nil
}

// percentile is the nearest-rank p-th percentile of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s) + 99) / 100 // ceil(p/100 * n)
	return s[max(i, 1)-1]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/1e6) }

// report prints the table: percentiles per server and ours / peer.
func report(w io.Writer, servers []*server, show bool) {
	ours := servers[0]
	fmt.Fprintf(w, "\n%-16s %7s %7s %7s %12s %12s %12s %14s\n", "server", "calls", "wrong", "failed", "p50", "p90", "p99", "process CPU/call")
	for _, s := range servers {
		cpu := "unknown"
		if s.cpu > 0 && len(s.lat) > 0 {
			cpu = ms(s.cpu / time.Duration(len(s.lat)))
		}
		fmt.Fprintf(w, "%-16s %7d %7d %7d %12s %12s %12s %14s\n", s.name, len(s.lat), s.wrong, s.failed,
			ms(percentile(s.lat, 50)), ms(percentile(s.lat, 90)), ms(percentile(s.lat, 99)), cpu)
	}
	fmt.Fprintln(w, "(wrong and failed are of all calls, the warm-up's included)")
	fmt.Fprintln(w, "\nserver memory after the calls (/proc/PID/status: VmHWM the peak, VmRSS now; of it RssFile, the pages of files such as the executable's code, and RssAnon, the heap and stacks):")
	for _, s := range servers {
		if s.mem.PeakKB > 0 {
			fmt.Fprintf(w, "  %-16s %12s peak %12s now: files %s, anonymous %s\n", s.name, mib(s.mem.PeakKB), mib(s.mem.NowKB), mib(s.mem.FileKB), mib(s.mem.AnonKB))
		} else {
			fmt.Fprintf(w, "  %-16s unknown\n", s.name)
		}
	}
	fmt.Fprintln(w)
	for _, s := range servers[1:] {
		fmt.Fprintf(w, "%s / %s: p50 %.2fx, p90 %.2fx, p99 %.2fx\n", ours.name, s.name,
			ratio(ours.lat, s.lat, 50), ratio(ours.lat, s.lat, 90), ratio(ours.lat, s.lat, 99))
	}
	for _, s := range servers {
		if show {
			fmt.Fprintf(w, "%s: first answer: %.400s\n", s.name, s.first)
		}
		if s.sample != "" {
			fmt.Fprintf(w, "%s: first bad answer: %s\n", s.name, s.sample)
		}
	}
}

func ratio(a, b []time.Duration, p int) float64 {
	return float64(percentile(a, p)) / float64(percentile(b, p))
}

// loadavg is the machine's load average, for the record.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load average unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "load average unknown"
	}
	return "load average " + strings.Join(f[:3], " ")
}

// tail is the end of a server's stderr, for a failure message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return "stderr:\n" + string(b) + "\n"
}
