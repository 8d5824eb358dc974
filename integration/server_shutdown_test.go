package integration

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// slowRead starts a read of uri through a session of srv that blocks in
// PostgreSQL: an admin transaction holds an ACCESS EXCLUSIVE lock on the
// assets table, so the server's statement waits for it. It returns once
// the server's backend is waiting on that lock, with the function that
// releases it and the channel that delivers the read's outcome.
func slowRead(t *testing.T, srv *runningServer, dbURL, uri string) (release func(), result chan error, text chan string) {
	t.Helper()
	admin, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	tx, err := admin.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), "LOCK TABLE mcpres.assets IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	cs := srv.connect(t, "")
	result, text = make(chan error, 1), make(chan string, 1)
	go func() {
		r, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		if err == nil && len(r.Contents) > 0 {
			text <- r.Contents[0].Text
		}
		result <- err
	}()
	// Wait until a backend of the server's pool waits for the lock.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var waiting int
		if err := admin.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the read never reached the lock")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return func() { _ = tx.Commit(context.Background()) }, result, text
}

// TestServerSIGTERMDuringASlowReadLetsItFinishAndExitsZero proves the
// graceful shutdown: SIGTERM while a read waits in PostgreSQL stops the
// server accepting, the read completes with its content once the database
// answers, and the process exits 0 well within the grace period (the
// client's standalone SSE stream does not hold it open).
func TestServerSIGTERMDuringASlowReadLetsItFinishAndExitsZero(t *testing.T) {
	t.Parallel()
	dbURL, _, flags := migratedAndSeeded(t)
	const grace = 8 * time.Second
	srv := startServer(t, append(flags, "--principal=alice", "--grace="+grace.String())...)
	release, result, text := slowRead(t, srv, dbURL, "asset://project/handbook/asset/welcome/body")

	start := time.Now()
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Shutdown has begun once the server says so; the read still waits for
	// the lock.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(srv.stderr.String(), "shutting down"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no \"shutting down\" logged 10 s after SIGTERM:\n%s", srv.stderr.String())
		}
	}
	select {
	case err := <-result:
		t.Fatalf("the read ended before the database answered: %v", err)
	default:
	}
	release()

	select {
	case err := <-result:
		if err != nil {
			t.Fatalf("the in-flight read failed: %v", err)
		}
		if got := <-text; !strings.HasPrefix(got, "# Welcome") {
			t.Fatalf("the in-flight read returned %q", got)
		}
	case <-time.After(grace):
		t.Fatalf("the in-flight read did not finish within the grace period")
	}
	select {
	case err := <-srv.done:
		elapsed := time.Since(start)
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v, want status 0\n%s", err, srv.stderr.String())
		}
		if elapsed >= grace {
			t.Fatalf("the process took %v to exit: want less than the %v grace", elapsed, grace)
		}
		t.Logf("exited 0 %v after SIGTERM (grace %v)", elapsed.Round(time.Millisecond), grace)
		srv.done <- err
	case <-time.After(grace + 2*time.Second):
		t.Fatalf("the process did not exit within the grace period")
	}
	if !strings.Contains(srv.stderr.String(), "in-flight requests finished") {
		t.Errorf("the log does not say the in-flight requests finished:\n%s", srv.stderr.String())
	}
}

// TestServerSIGTERMDuringAReadStuckPastTheGraceFailsItCleanlyAndExitsZero
// proves the bound: a read that is still waiting when the grace period
// ends fails (the client sees an error, not a hang) and the process still
// exits 0, shortly after the grace period.
func TestServerSIGTERMDuringAReadStuckPastTheGraceFailsItCleanlyAndExitsZero(t *testing.T) {
	t.Parallel()
	dbURL, _, flags := migratedAndSeeded(t)
	const grace = 2 * time.Second
	srv := startServer(t, append(flags, "--principal=alice", "--grace="+grace.String())...)
	release, result, _ := slowRead(t, srv, dbURL, "asset://project/handbook/asset/welcome/body")
	defer release()

	start := time.Now()
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-srv.done:
		elapsed := time.Since(start)
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v, want status 0\n%s", err, srv.stderr.String())
		}
		if elapsed < grace || elapsed > grace+3*time.Second {
			t.Fatalf("the process exited %v after SIGTERM: want just after the %v grace", elapsed, grace)
		}
		t.Logf("exited 0 %v after SIGTERM (grace %v)", elapsed.Round(time.Millisecond), grace)
		srv.done <- err
	case <-time.After(grace + 5*time.Second):
		t.Fatalf("the process did not exit after the grace period")
	}
	select {
	case err := <-result:
		if err == nil {
			t.Fatalf("the stuck read succeeded while the database still held the lock")
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the client still waits for the stuck read")
	}
	if s := srv.stderr.String(); strings.Contains(s, "panic") || strings.Contains(s, "goroutine ") {
		t.Fatalf("stderr:\n%s", s)
	}
}
