// Package serverproc runs the mcp-resources command as a process, as a user
// would, for the integration tests and the load driver (cmd/mcp-load): the
// environment it runs with, a started `serve --http` process found by the
// address it logs, a bearer-token round tripper, and one-statement
// PostgreSQL exec for the databases they create, and a process's resident
// memory as /proc reports it. Every function returns
// errors; none takes a testing.T.
package serverproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// StartTimeout bounds how long [Start] waits for the server to log its
// address.
const StartTimeout = 30 * time.Second

// Env returns this process's environment without any MCPRES_* variable, so
// that only the flags configure the command.
func Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCPRES_") {
			env = append(env, kv)
		}
	}
	return env
}

// PostgresExec runs one statement on a connection of its own to url and
// closes it.
func PostgresExec(ctx context.Context, url, sql string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

// Process is a started `serve --http` process of the command.
type Process struct {
	// Cmd is the running command.
	Cmd *exec.Cmd
	// Addr is the host:port the server logged that it serves on.
	Addr string
	// Done receives the error of cmd.Wait once the process exits. It holds
	// one value: a reader that only looks sends the value back.
	Done chan error
}

// addrInLog is the line the command logs once it listens.
var addrInLog = regexp.MustCompile(`msg="serving MCP over streamable HTTP" addr=(\S+)`)

// Start runs `bin serve --http=127.0.0.1:0 args...` with [Env], copies its
// standard error to stderr, and returns once the server logs the address
// it serves on. A server that exits first, or logs no address within
// [StartTimeout] (it is then killed), is an error.
func Start(bin string, stderr io.Writer, args ...string) (*Process, error) {
	return StartEnv(bin, Env(), stderr, args...)
}

// StartEnv is [Start] with the server's environment env (for a resources
// file whose ${NAME} references name MCPRES_ variables, os.Environ()).
func StartEnv(bin string, env []string, stderr io.Writer, args ...string) (*Process, error) {
	cmd := exec.Command(bin, append([]string{"serve", "--http=127.0.0.1:0"}, args...)...)
	cmd.Env = env
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(stderr, pw)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{Cmd: cmd, Done: make(chan error, 1)}
	go func() { p.Done <- cmd.Wait(); pw.Close() }()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := addrInLog.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	timer := time.NewTimer(StartTimeout)
	defer timer.Stop()
	select {
	case p.Addr = <-found:
		return p, nil
	case err := <-p.Done:
		p.Done <- err
		return nil, fmt.Errorf("the server exited before serving: %v", err)
	case <-timer.C:
		_ = cmd.Process.Kill()
		p.Done <- <-p.Done
		return nil, errors.New("the server did not log its address within " + StartTimeout.String())
	}
}

// Alive reports whether the process is still running.
func (p *Process) Alive() bool {
	select {
	case err := <-p.Done:
		p.Done <- err
		return false
	default:
		return true
	}
}

// Bearer is an [http.RoundTripper] that adds "Authorization: Bearer
// Token" to every request and sends it with Next.
type Bearer struct {
	// Token is the bearer token.
	Token string
	// Next sends the request.
	Next http.RoundTripper
}

// RoundTrip sends a copy of r that carries the token.
func (b Bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.Token)
	return b.Next.RoundTrip(r)
}

// Resident is a process's resident memory in kB, from /proc/PID/status:
// its peak (VmHWM) and now (VmRSS), and of what it holds now the pages of
// files (RssFile: the executable's code and data, for a Go server) and
// the anonymous ones (RssAnon: its heap, stacks and the runtime's own).
type Resident struct{ PeakKB, NowKB, FileKB, AnonKB int64 }

// PeakMiB and NowMiB are the figures in MiB.
func (r Resident) PeakMiB() float64 { return float64(r.PeakKB) / 1024 }
func (r Resident) NowMiB() float64  { return float64(r.NowKB) / 1024 }

// Memory reads the resident memory of process pid (Linux only).
func Memory(pid int) (Resident, error) {
	var r Resident
	if pid <= 0 {
		return r, fmt.Errorf("no process %d", pid)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return r, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		dst := map[string]*int64{"VmHWM": &r.PeakKB, "VmRSS": &r.NowKB, "RssFile": &r.FileKB, "RssAnon": &r.AnonKB}[k]
		if !ok || dst == nil {
			continue
		}
		if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", dst); err != nil {
			continue
		}
	}
	if r.PeakKB == 0 || r.NowKB == 0 {
		return r, fmt.Errorf("no VmHWM or VmRSS in /proc/%d/status", pid)
	}
	return r, nil
}
