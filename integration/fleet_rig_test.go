package integration

import (
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/integration/harness"
)

// The fleet's rig: PgBouncer and HAProxy, Debian bookworm's packages (1.18
// and 2.6), run as processes of the test on free loopback ports with their
// configuration in a temporary directory. The binaries are found at
// $MCPRES_PGBOUNCER and $MCPRES_HAPROXY, else on PATH, else in /usr/sbin.

// fleetPoolSize is PgBouncer's default_pool_size in the fleet tests: the
// most PostgreSQL backends the replicas' pools share, whatever their number.
const fleetPoolSize = 4

// fleetListenApp is the application_name of the replicas' direct LISTEN
// connections, so that pg_stat_activity tells them from the pooled ones.
const fleetListenApp = "mcpres-listen"

// fleetTestApp is the application_name of the test's own direct
// connections, left out of the backend counts.
const fleetTestApp = "mcpres-fleet-test"

// rigBinary finds the binary name, or fails (MCPRES_INTEGRATION=require) or
// skips the test.
func rigBinary(t testing.TB, env, name string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := "/usr/sbin/" + name; isExecutable(p) {
		return p
	}
	harness.Unavailable(t, fmt.Sprintf("no %s binary: apt-get install %s, or set %s", name, name, env))
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// freePort returns a loopback port nobody listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// rigProcess is a started PgBouncer or HAProxy.
type rigProcess struct {
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan error
}

// startRig runs bin with args, its output in a buffer, until it accepts
// connections on the loopback port (or 15 s pass); the process is stopped
// at the end of the test.
func startRig(t testing.TB, what string, port int, bin string, args ...string) *rigProcess {
	t.Helper()
	p := &rigProcess{cmd: exec.Command(bin, args...), log: &syncBuffer{}, done: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", what, p.log.String())
		}
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(15 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return p
		}
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("%s exited before it was ready: %v\n%s", what, err, p.log.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not accepting on %s within 15 s:\n%s", what, addr, p.log.String())
		}
	}
}

// rigDir makes a temporary directory for a rig's files. When the test runs
// as root, the directory belongs to the postgres user, and the returned
// flags (-u postgres) make PgBouncer, which refuses to run as root, run as
// that user; chown gives it the files written there.
func rigDir(t testing.TB, prefix string) (dir string, asUser []string, chown func(path string)) {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	chown = func(string) {}
	if os.Getuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			harness.Unavailable(t, "running as root with no postgres user for PgBouncer's -u")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		chown = func(path string) {
			if err := os.Chown(path, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
		chown(dir)
		asUser = []string{"-u", "postgres"}
	}
	return dir, asUser, chown
}

// startPgBouncer runs PgBouncer in transaction mode in front of the server
// of dbURL, every database name passed through, with poolSize server
// connections per database and user, and returns dbURL with its host and
// port replaced by PgBouncer's.
func startPgBouncer(t testing.TB, dbURL string, poolSize int) string {
	t.Helper()
	bin := rigBinary(t, "MCPRES_PGBOUNCER", "pgbouncer")
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	login := u.User.Username()
	// A connection string's values quoted as PgBouncer reads them: in
	// single quotes, a quote doubled.
	quote := func(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }
	server := fmt.Sprintf("host=%s port=%s user=%s", quote(u.Hostname()), quote(u.Port()), quote(login))
	if pw, ok := u.User.Password(); ok {
		server += " password=" + quote(pw) // a container's; the file is the postgres user's alone
	}
	dir, asUser, chown := rigDir(t, "mcpres-pgbouncer-")
	port := freePort(t)
	ini := fmt.Sprintf(`[databases]
* = %s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = %d
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = 200
max_db_connections = %d
server_lifetime = 3600
server_idle_timeout = 60
query_wait_timeout = 10
ignore_startup_parameters = extra_float_digits
`, server, port, filepath.Join(dir, "users.txt"), poolSize, poolSize)
	for name, body := range map[string]string{"pgbouncer.ini": ini, "users.txt": fmt.Sprintf("%q \"\"\n", login)} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		chown(path)
	}
	startRig(t, "pgbouncer", port, bin, append(asUser, filepath.Join(dir, "pgbouncer.ini"))...)
	u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return u.String()
}

// withParams returns raw with the query parameters kv (name, value, ...)
// set.
func withParams(t testing.TB, raw string, kv ...string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// haproxy is a started HAProxy balancing round robin over replicas, each
// health-checked on GET /readyz, with its statistics on a port of their
// own.
type haproxy struct {
	url   string // the frontend, http://127.0.0.1:port
	stats string // the statistics page as CSV
	names []string
}

// startHAProxy balances over the addresses (host:port) of backends, named
// r0, r1, ... in its statistics and in the X-Served-By header it adds to
// every response.
func startHAProxy(t testing.TB, backends ...string) *haproxy {
	t.Helper()
	bin := rigBinary(t, "MCPRES_HAPROXY", "haproxy")
	dir, _, _ := rigDir(t, "mcpres-haproxy-")
	front, stats := freePort(t), freePort(t)
	var servers strings.Builder
	h := &haproxy{url: fmt.Sprintf("http://127.0.0.1:%d", front), stats: fmt.Sprintf("http://127.0.0.1:%d/stats;csv", stats)}
	for i, b := range backends {
		name := fmt.Sprintf("r%d", i)
		h.names = append(h.names, name)
		fmt.Fprintf(&servers, "    server %s %s check\n", name, b)
	}
	cfg := fmt.Sprintf(`global
    maxconn 512

defaults
    mode http
    option httplog
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout http-keep-alive 10s
    # Without it a check must answer within inter (200ms): on a loaded
    # machine every replica's /readyz missed that twice at once, all were
    # DOWN and HAProxy answered 503. A replica that dies refuses the
    # connection and is still DOWN within two checks.
    timeout check 2s
    retries 2
    option redispatch

frontend mcp
    bind 127.0.0.1:%d
    default_backend replicas
    http-response set-header X-Served-By %%[srv_name]

frontend stats
    bind 127.0.0.1:%d
    stats enable
    stats uri /stats
    stats refresh 0

backend replicas
    balance roundrobin
    option httpchk
    http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host 127.0.0.1
    http-check expect status 200
    default-server inter 200ms fall 2 rise 1
%s`, front, stats, servers.String())
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	// -db: stay in the foreground.
	startRig(t, "haproxy", stats, bin, "-db", "-f", path)
	h.waitStatus(t, "every replica UP", func(st map[string]string) bool {
		for _, n := range h.names {
			if st[n] != "UP" {
				return false
			}
		}
		return true
	})
	return h
}

// status returns the health state (UP, DOWN, ...) of each server.
func (h *haproxy) status(t testing.TB) map[string]string {
	t.Helper()
	resp, err := http.Get(h.stats)
	if err != nil {
		t.Fatalf("haproxy stats: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	rd := csv.NewReader(strings.NewReader(strings.TrimPrefix(string(body), "# ")))
	rd.FieldsPerRecord = -1
	recs, err := rd.ReadAll()
	if err != nil || len(recs) < 1 {
		t.Fatalf("haproxy stats: %v\n%s", err, body)
	}
	col := map[string]int{}
	for i, c := range recs[0] {
		col[c] = i
	}
	out := map[string]string{}
	for _, r := range recs[1:] {
		if r[col["pxname"]] == "replicas" && r[col["svname"]] != "BACKEND" {
			out[r[col["svname"]]] = r[col["status"]]
		}
	}
	return out
}

// waitStatus polls the statistics until ok accepts them, or fails after
// 15 s.
func (h *haproxy) waitStatus(t testing.TB, what string, ok func(map[string]string) bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		st := h.status(t)
		if ok(st) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy: %s: servers %v after 15 s", what, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
