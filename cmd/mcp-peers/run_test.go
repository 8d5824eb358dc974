package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.phpboyscout.uk/mcp/resources/internal/serverproc"
)

// TestHarnessReadsOurServerAndFailsOnARefusedRead runs the harness in
// process against our server alone (the peers need npm packages, which
// scripts/peers.sh installs), on a database of its own that it migrates
// and seeds with the freshly built binary: alice's reads of welcome are
// all right (exit 0, the table printed); bob's reads of salaries, which he
// may see but not read, are all counted failed and the run exits 1. Needs
// the services of scripts/services.sh; skips without them, or fails under
// MCPRES_INTEGRATION=require.
func TestHarnessReadsOurServerAndFailsOnARefusedRead(t *testing.T) {
	admin, endpoint := os.Getenv("MCPRES_POSTGRES_URL"), os.Getenv("MCPRES_S3_ENDPOINT")
	if admin == "" || endpoint == "" {
		msg := "MCPRES_POSTGRES_URL and MCPRES_S3_* are needed: eval \"$(scripts/services.sh up)\""
		if os.Getenv("MCPRES_INTEGRATION") == "require" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ctx := t.Context()
	dir := t.TempDir()
	bin := filepath.Join(dir, "mcp-resources")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "../mcp-resources").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	db := fmt.Sprintf("mcpres_peers_test_%d", rand.Uint32())
	if err := serverproc.PostgresExec(ctx, admin, "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = serverproc.PostgresExec(t.Context(), admin, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + db
	dbURL := u.String()
	for _, args := range [][]string{
		{"migrate", "--postgres", dbURL},
		{"seed", "--postgres", dbURL, "--bucket", "peers-test", "--bucket-endpoint", endpoint, "--bucket-path-style",
			"--bucket-access-key", os.Getenv("MCPRES_S3_ACCESS_KEY"), "--bucket-secret-key", os.Getenv("MCPRES_S3_SECRET_KEY")},
	} {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = serverproc.Env()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", args[0], err, out)
		}
	}
	base := []string{"--postgres", dbURL, "--server", bin, "--bucket", "peers-test", "--bucket-endpoint", endpoint,
		"--only", "ours", "--calls", "20", "--warmup", "2", "--starts", "2", "--call-timeout", "20s"}

	var out, errs bytes.Buffer
	if code := run(ctx, base, &out, &errs); code != 0 {
		t.Fatalf("alice reading welcome: exit %d\n%s\n%s", code, out.String(), errs.String())
	}
	for _, want := range []string{"exec to initialize answered, median of 2", "\nours                  20       0       0 "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	errs.Reset()
	refused := append(base, "--principal", "bob", "--asset", "salaries", "--starts", "0")
	if code := run(ctx, refused, &out, &errs); code != 1 {
		t.Fatalf("bob reading salaries: exit %d, want 1\n%s\n%s", code, out.String(), errs.String())
	}
	if !strings.Contains(out.String(), "\nours                  20       0      22 ") || !strings.Contains(out.String(), "first bad answer: round 1 of 22") {
		t.Errorf("the report does not count bob's 22 reads failed:\n%s", out.String())
	}
}
