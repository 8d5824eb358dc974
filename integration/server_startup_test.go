package integration

import (
	"bufio"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/internal/serverproc"
)

// TestServeAnswersInitializeWhileItsStorageCheckIsHeldAndReadyzWaits
// proves the start-up order of serve --postgres over HTTP against a real
// PostgreSQL whose connections pass a proxy that holds the first one until
// the test releases it: while the check is held, /readyz is not ready,
// initialize and resources/list are answered, and a read waits; once
// released, the check passes, the waiting read returns the index and
// /readyz is 200.
func TestServeAnswersInitializeWhileItsStorageCheckIsHeldAndReadyzWaits(t *testing.T) {
	t.Parallel()
	dbURL := harness.Postgres(t)
	mustRun(t, "", "migrate", "--postgres="+dbURL)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var released atomic.Bool
	var accepted atomic.Int64
	first := make(chan struct{})
	proxy := proxyTo(t, u.Host, nil, func(c, up net.Conn) (func([]byte), func([]byte), bool) {
		if accepted.Add(1) == 1 {
			close(first)
			<-release // holds this connection and every later one behind it
		}
		return nil, nil, true
	})
	t.Cleanup(func() {
		if !released.Load() {
			close(release)
		}
	})
	u.Host = proxy.Addr().String()
	srv := startListening(t, "--postgres="+u.String(), "--principal=alice")
	<-first // the check has begun, and waits on the held connection

	if code, body := srv.get(t, "/readyz"); code != 503 ||
		strings.TrimSpace(body) != `{"ready":false,"reason":"the start-up checks of the storage are running","sources":{"postgres":"starting"}}` {
		t.Fatalf("/readyz while the check is held: %d %q, want 503", code, body)
	}
	cs := srv.connect(t, "") // initialize, answered while held
	if n := accepted.Load(); n != 1 || released.Load() {
		t.Fatalf("initialize answered after %d connections (released %v): want it answered while the first is held", n, released.Load())
	}
	list, err := cs.ListResources(t.Context(), &mcp.ListResourcesParams{})
	if err != nil || len(list.Resources) == 0 || list.Resources[0].URI != "asset://projects" {
		t.Fatalf("resources/list while held: %v %+v", err, list)
	}
	type outcome struct {
		r        *mcp.ReadResourceResult
		err      error
		released bool
	}
	read := make(chan outcome, 1)
	go func() {
		r, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "asset://projects"})
		read <- outcome{r, err, released.Load()}
	}()
	released.Store(true)
	close(release)
	o := <-read
	if o.err != nil || !o.released || len(o.r.Contents) != 1 || o.r.Contents[0].Text != `{"projects" : []}` {
		t.Fatalf("the read during the hold: %+v, want the empty index, answered after the release", o)
	}
	if code, body := srv.get(t, "/readyz"); code != 200 {
		t.Fatalf("/readyz once the check passed: %d %q", code, body)
	}
}

// listeningLine is serve's debug line with its HTTP address, logged before
// the start-up checks end (the info line "serving MCP ..." waits for them).
var listeningLine = regexp.MustCompile(`msg="listening for MCP over streamable HTTP" addr=(\S+)`)

// startListening starts `serve --http 127.0.0.1:0 --log-level=debug` with
// args and returns once it logs the address it listens on, before its
// start-up checks end. The process is killed at the end of the test.
func startListening(t *testing.T, args ...string) *runningServer {
	t.Helper()
	cmd := exec.Command(serverBinary(t), append([]string{"serve", "--http=127.0.0.1:0", "--log-level=debug"}, args...)...)
	cmd.Env = serverproc.Env()
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &runningServer{cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(s.stderr, line)
			if m := listeningLine.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		s.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.done
		if t.Failed() {
			t.Logf("server stderr:\n%s", s.stderr.String())
		}
	})
	select {
	case s.addr = <-addr:
	case err := <-s.done:
		s.done <- err
		t.Fatalf("the server exited before listening: %v\n%s", err, s.stderr.String())
	}
	return s
}
