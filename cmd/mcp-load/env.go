package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/internal/serverproc"
	"go.phpboyscout.uk/mcp/resources/migrations"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// setupTimeout bounds each setup and teardown step.
const setupTimeout = 2 * time.Minute

// randomHex returns n random bytes as hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// loopbackOnly refuses any address that is not on this machine: load and
// fault traffic goes to loopback only.
func loopbackOnly(what, host string) error {
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s host %q is not a loopback address: the driver sends load and faults to this machine only", what, host)
	}
	return nil
}

// database is the driver's own database on the server of --postgres,
// created at setup and dropped at teardown, with the admin connection the
// driver writes, counts and terminates through.
type database struct {
	serverURL string // the --postgres URL (maintenance database)
	name      string
	url       string
	mu        sync.Mutex
	conn      *pgx.Conn
}

func createDatabase(ctx context.Context, serverURL string) (*database, error) {
	u, err := loopbackPostgres("--postgres", serverURL)
	if err != nil {
		return nil, err
	}
	db := &database{serverURL: serverURL, name: "mcpload_" + randomHex(6)}
	if err := serverproc.PostgresExec(ctx, serverURL, "CREATE DATABASE "+pgx.Identifier{db.name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("create database: %w", err)
	}
	u.Path = "/" + db.name
	u.RawPath = ""
	db.url = u.String()
	return db, nil
}

// on returns the URL of the database on another server of the same
// cluster (a streaming standby), once that server has it: it replays the
// CREATE DATABASE and the migrations a moment after the primary.
func (db *database) on(ctx context.Context, serverURL string) (string, error) {
	u, err := loopbackPostgres("--standby", serverURL)
	if err != nil {
		return "", err
	}
	u.Path, u.RawPath = "/"+db.name, ""
	version := "SELECT max(version_id) FROM " + pgx.Identifier(strings.Split(migrations.VersionTable, ".")).Sanitize()
	var want int64
	db.mu.Lock()
	err = db.conn.QueryRow(ctx, version).Scan(&want)
	db.mu.Unlock()
	if err != nil {
		return "", err
	}
	for {
		conn, err := pgx.Connect(ctx, u.String())
		if err == nil {
			var got int64
			err = conn.QueryRow(ctx, version).Scan(&got)
			conn.Close(context.WithoutCancel(ctx))
			if err == nil && got == want {
				return u.String(), nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("the standby has not replayed database %s: %w", db.name, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// loopbackPostgres parses the PostgreSQL URL s of flag, which must name a
// loopback host.
func loopbackPostgres(flag, s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("%s must be a postgres:// URL", flag)
	}
	return u, loopbackOnly(flag, u.Hostname())
}

// open connects the admin connection (after the migration).
func (db *database) open(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, db.url)
	if err != nil {
		return err
	}
	db.conn = conn
	return nil
}

// exec runs one statement on the admin connection.
func (db *database) exec(ctx context.Context, sql string, args ...any) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	_, err := db.conn.Exec(ctx, sql, args...)
	return err
}

// clientConns counts the client backends connected to the database other
// than the admin connection: the server's pool.
func (db *database) clientConns(ctx context.Context) (int, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var n int
	err := db.conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`).Scan(&n)
	return n, err
}

// terminate ends every backend of the server's pool and returns how many.
func (db *database) terminate(ctx context.Context) (int, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var n int
	err := db.conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`).Scan(&n)
	return n, err
}

// drop closes the admin connection and drops the database.
func (db *database) drop() error {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if db.conn != nil {
		_ = db.conn.Close(ctx)
	}
	return serverproc.PostgresExec(ctx, db.serverURL, "DROP DATABASE IF EXISTS "+pgx.Identifier{db.name}.Sanitize()+" WITH (FORCE)")
}

// s3server is the driver's own versitygw process, which the fault run
// stops and starts again on the same port with the same data.
type s3server struct {
	bin, addr, dir string
	access, secret string
	log            *os.File
	keepAlive      bool // versitygw --keep-alive

	mu  sync.Mutex
	cmd *exec.Cmd
}

func startS3(bin, dir string, keepAlive bool) (*s3server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	for _, d := range []string{"data", "versions"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	log, err := os.Create(filepath.Join(dir, "versitygw.log"))
	if err != nil {
		return nil, err
	}
	s := &s3server{bin: bin, addr: addr, dir: dir, access: "mcploadroot", secret: randomHex(16), log: log, keepAlive: keepAlive}
	if err := s.start(); err != nil {
		log.Close()
		return nil, err
	}
	return s, nil
}

func (s *s3server) endpoint() string { return "http://" + s.addr }

// start runs versitygw and waits until it answers its health check.
func (s *s3server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	args := []string{"--port", s.addr, "--access", s.access, "--secret", s.secret, "--region", "us-east-1", "--health", "/health", "--quiet"}
	if s.keepAlive {
		args = append(args, "--keep-alive")
	}
	cmd := exec.Command(s.bin, append(args, "posix", "--versioning-dir", filepath.Join(s.dir, "versions"), filepath.Join(s.dir, "data"))...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start versitygw: %w", err)
	}
	s.cmd = cmd
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := hc.Get(s.endpoint() + "/health")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("versitygw did not come up on %s (log %s)", s.addr, s.log.Name())
}

// kill stops the server at once (an outage, not a shutdown).
func (s *s3server) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

func (s *s3server) client() (*s3.Client, error) {
	return s3store.NewClient(context.Background(), s3store.ClientConfig{Endpoint: s.endpoint(), Region: "us-east-1",
		UsePathStyle: true, AccessKeyID: s.access, SecretAccessKey: s.secret})
}

// server is the mcp-resources process under load.
type server struct {
	*serverproc.Process
	log *os.File
	hc  *http.Client // for /metrics, without keep-alive so it holds no connection
}

// runTool runs the server binary to completion (migrate, hash-token).
func runTool(ctx context.Context, bin, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = serverproc.Env()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", filepath.Base(bin), args[0], err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// startServer starts `serve --http 127.0.0.1:0` with args and returns once
// it logs its address.
func startServer(bin, logPath string, args ...string) (*server, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p, err := serverproc.Start(bin, log, args...)
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("%w (log %s)", err, logPath)
	}
	return &server{Process: p, log: log,
		hc: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}}, nil
}

// stop asks the server to shut down (SIGTERM) and waits for it, killing it
// after its grace period.
func (s *server) stop() error {
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.Done:
		s.log.Close()
		return err
	case <-time.After(20 * time.Second):
		_ = s.Cmd.Process.Kill()
		err := <-s.Done
		s.log.Close()
		return fmt.Errorf("the server did not stop within 20s of SIGTERM: %v", err)
	}
}

// bucketFor creates the driver's bucket (unversioned: rows pin objects by
// ETag, so an overwritten object is refused with 412 rather than served).
func createBucket(ctx context.Context, c *s3.Client, bucket string) error {
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	return err
}
