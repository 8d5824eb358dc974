package integration

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// vgwServer is a versitygw process of one test's own, which the test may
// stop and start again on the same port with the same data.
type vgwServer struct {
	t         testing.TB
	bin, addr string
	dir       string
	env       harness.S3Env
	log       *bytes.Buffer

	mu  sync.Mutex
	cmd *exec.Cmd
}

// startVersitygw starts a versitygw on a free loopback port, with its own
// data and versioning directories under t.TempDir, and stops it when t ends.
func startVersitygw(t testing.TB) *vgwServer {
	t.Helper()
	bin := versitygwBinary(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	for _, d := range []string{"data", "versions"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	s := &vgwServer{t: t, bin: bin, addr: addr, dir: dir, log: &bytes.Buffer{},
		env: harness.S3Env{Endpoint: "http://" + addr, Region: "us-east-1", AccessKey: "outageroot", SecretKey: "outage-secret"}}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *vgwServer) start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(s.bin, "--port", s.addr, "--access", s.env.AccessKey, "--secret", s.env.SecretKey,
		"--region", s.env.Region, "--health", "/health", "--quiet",
		"posix", "--versioning-dir", filepath.Join(s.dir, "versions"), filepath.Join(s.dir, "data"))
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start versitygw: %v", err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(s.env.Endpoint + "/health")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("versitygw did not come up on %s: %s", s.addr, s.log.String())
}

// stop kills the server (no graceful shutdown: an outage) and waits for it.
func (s *vgwServer) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// TestS3StoreServerStoppedMidBundleFailsOnlyThatItemAndRecovers proves that
// when the S3 server dies while a bundle is being read (during the body of
// its second item), the items read before survive, the interrupted item and
// the one after it are read_failed or timeout, and once the server is back
// the next read through the same gateway and client succeeds with nothing
// restarted in the process.
func TestS3StoreServerStoppedMidBundleFailsOnlyThatItemAndRecovers(t *testing.T) {
	t.Parallel()
	srv := startVersitygw(t)
	w := &wire{}
	client := s3Client(t, srv.env, w)
	ctx := t.Context()
	const bucket = "outage-bucket"
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	// Far more than loopback socket buffers can hold, so the body is still
	// in flight when the server dies.
	const bigSize = 24 << 20
	putObject(t, client, bucket, "bundle/one.txt", "text/plain", []byte("one"))
	putObject(t, client, bucket, "bundle/two.bin", "application/octet-stream", bytes.Repeat([]byte{0xAB}, bigSize))
	putObject(t, client, bucket, "bundle/three.txt", "text/plain", []byte("three"))

	store, err := s3store.OpenBucket(ctx, client, bucket, nil)
	if err != nil {
		t.Fatal(err)
	}
	limits := core.ResourceLimits{MaxItemBytes: 32 << 20, MaxResponseBytes: 48 << 20, MaxResponseEncodedBytes: 96 << 20, ItemTimeout: 8 * time.Second}
	res := gateway(t, allowAll(), limits, bundleBinding(store, "s3bundle://outage", "bundle/one.txt", "bundle/two.bin", "bundle/three.txt"))

	var killed atomic.Bool
	kill := func(r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/bundle/two.bin") && killed.CompareAndSwap(false, true) {
			srv.stop()
		}
	}
	w.afterResponse.Store(&kill)
	got, err := res.Read(core.WithCaller(ctx, core.Caller{Principal: "host"}), "s3bundle://outage")
	w.afterResponse.Store(nil)
	if err != nil {
		t.Fatalf("read during the outage: %v, want a partial bundle", err)
	}
	if !killed.Load() {
		t.Fatal("the server was never stopped during the second item")
	}
	if b := bodies(got); len(b) != 1 || b["s3item://bundle/0"] != "one" {
		t.Fatalf("items %v, want the first item only", b)
	}
	c := codes(got)
	for _, uri := range []string{"s3item://bundle/1", "s3item://bundle/2"} {
		if c[uri] != core.IssueReadFailed && c[uri] != core.IssueTimeout {
			t.Fatalf("issues %v: %s is %q, want read_failed or timeout", c, uri, c[uri])
		}
	}
	t.Logf("during the outage: %v", c)

	srv.start()
	got, err = res.Read(core.WithCaller(ctx, core.Caller{Principal: "host"}), "s3bundle://outage")
	if err != nil || got.Partial() {
		t.Fatalf("read after the restart: %v, %v; want a complete bundle", codes(got), err)
	}
	if b := bodies(got); b["s3item://bundle/0"] != "one" || len(b["s3item://bundle/1"]) != bigSize || b["s3item://bundle/2"] != "three" {
		t.Fatalf("read after the restart returned other bodies (%d items)", len(b))
	}
}
