package integration

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/internal/serverproc"
)

var (
	serverBuild    sync.Once
	serverBin      string
	serverBuildErr error
)

// serverBinary builds cmd/mcp-resources once per test binary, as a user
// would, with the plain go toolchain and no test hooks.
func serverBinary(t testing.TB) string {
	t.Helper()
	serverBuild.Do(func() {
		dir, err := os.MkdirTemp("", "mcpres-server-bin-")
		if err != nil {
			serverBuildErr = err
			return
		}
		serverBin = filepath.Join(dir, "mcp-resources")
		out, err := exec.Command("go", "build", "-o", serverBin, "go.phpboyscout.uk/mcp/resources/cmd/mcp-resources").CombinedOutput()
		if err != nil {
			serverBuildErr = err
			serverBin = string(out)
		}
	})
	if serverBuildErr != nil {
		t.Fatalf("go build: %v\n%s", serverBuildErr, serverBin)
	}
	return serverBin
}

// removeServerBinary deletes the binary serverBinary built, if any.
func removeServerBinary() {
	if serverBuildErr == nil && serverBin != "" {
		_ = os.RemoveAll(filepath.Dir(serverBin))
	}
}

// runServerCmd runs the command to completion and returns its exit code,
// stdout and stderr.
func runServerCmd(t testing.TB, stdin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, serverBinary(t), args...)
	cmd.Env = serverproc.Env()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

// mustRun runs the command and fails the test unless it exits 0.
func mustRun(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	code, out, errs := runServerCmd(t, stdin, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errs)
	}
	return out
}

// storageFlags are the command's flags for a database and env's bucket.
func storageFlags(dbURL string, env harness.S3Env) []string {
	return []string{"--postgres=" + dbURL, "--bucket=" + env.Bucket, "--bucket-endpoint=" + env.Endpoint,
		"--bucket-region=" + env.Region, "--bucket-access-key=" + env.AccessKey, "--bucket-secret-key=" + env.SecretKey,
		"--bucket-path-style"}
}

// runningServer is a started `serve --http` process.
type runningServer struct {
	cmd    *exec.Cmd
	addr   string
	stderr *syncBuffer
	done   chan error
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startServer starts `serve --http 127.0.0.1:0` with args and returns once
// it logs its address. The process is killed at the end of the test unless
// it has exited.
func startServer(t testing.TB, args ...string) *runningServer {
	t.Helper()
	stderr := &syncBuffer{}
	p, err := serverproc.Start(serverBinary(t), stderr, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	s := &runningServer{cmd: p.Cmd, addr: p.Addr, stderr: stderr, done: p.Done}
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
		if t.Failed() {
			t.Logf("server stderr:\n%s", s.stderr.String())
		}
	})
	return s
}

// get fetches path from the server and returns the status and body.
func (s *runningServer) get(t testing.TB, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + s.addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// connect opens an MCP session over streamable HTTP with token ("" for
// none) through the go-sdk client.
func (s *runningServer) connect(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: http.DefaultTransport}
	if token != "" {
		hc.Transport = serverproc.Bearer{Token: token, Next: http.DefaultTransport}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "server-test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + s.addr + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nserver stderr:\n%s", err, s.stderr.String())
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}
