package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	loadBuild    sync.Once
	loadBin      string
	loadBuildErr error
)

// loadBinary builds cmd/mcp-load once per test binary.
func loadBinary(t *testing.T) string {
	t.Helper()
	loadBuild.Do(func() {
		dir, err := os.MkdirTemp("", "mcpres-load-bin-")
		if err != nil {
			loadBuildErr = err
			return
		}
		loadBin = filepath.Join(dir, "mcp-load")
		out, err := exec.Command("go", "build", "-o", loadBin, "go.phpboyscout.uk/mcp/resources/cmd/mcp-load").CombinedOutput()
		if err != nil {
			loadBuildErr, loadBin = err, string(out)
		}
	})
	if loadBuildErr != nil {
		t.Fatalf("go build: %v\n%s", loadBuildErr, loadBin)
	}
	return loadBin
}

// runLoad runs mcp-load with args, bounded, and returns its exit status
// and output.
func runLoad(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), loadBinary(t), append([]string{"--server", serverBinary(t)}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

// TestLoadDrivesAServerStartedFromTheDocumentsFile runs mcp-load against
// serve --config examples/documents/resources.yaml with two tokens and
// the example's document, file, report, listing and bundle URIs: a quiet
// pass records what alice and bob get (bob is refused acme's), a short
// load with two clients checks every answer against it and passes, and
// after a report is overwritten behind the server the same run counts
// wrong bodies and fails.
func TestLoadDrivesAServerStartedFromTheDocumentsFile(t *testing.T) {
	r := newDocsRig(t)
	id := r.document(t, "acme", "Plan", "the plan", "tenants/acme/files/plan.md", "text/markdown", []byte("# the file"))
	report := "tenants/acme/reports/2026/q3/summary.txt"
	putObject(t, r.root, r.env.Bucket, report, "", []byte("Q3 revenue: up 12%"))
	t.Setenv("DOCS_DATABASE_URL", r.url)
	t.Setenv("DOCS_BUCKET", r.env.Bucket)
	t.Setenv("S3_ENDPOINT", r.env.Endpoint)
	t.Setenv("S3_ACCESS_KEY", r.env.AccessKey)
	t.Setenv("S3_SECRET_KEY", r.env.SecretKey)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	doc := docURI("acme", id)
	uris := write("uris", "# the documents example\n"+doc+" 4\n"+doc+"/object 2\n"+
		"report://tenants/acme/reports/2026/q3/summary.txt 2\nreport://tenants/acme/reports\ndoc://tenants/acme/documents\n")
	tokens := write("tokens", "alice alice-secret\nbob bob-secret\n")
	answers := filepath.Join(dir, "answers")
	base := []string{"--config", documentsConfig, "--uris", uris, "--tokens", tokens, "--clients", "2", "--warmup", "0s", "--duration", "2s", "--progress", "10s"}

	code, out := runLoad(t, append(base, "--record", answers)...)
	if code != 0 || !strings.Contains(out, "recorded 10 answers in "+answers) || !strings.Contains(out, "  wrong: 0\n") || !strings.Contains(out, "RESULT: PASS") {
		t.Fatalf("record and load: exit %d\n%s", code, out)
	}
	recorded, err := os.ReadFile(answers)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(recorded), "\n"); n != 10 {
		t.Errorf("%d recorded answers, want 10 (2 principals x 5 URIs):\n%s", n, recorded)
	}
	if !regexp.MustCompile(`(?m)^bob ` + regexp.QuoteMeta(doc) + ` [0-9a-f]{64}$`).Match(recorded) {
		t.Errorf("bob's refused read of %s is not recorded as an answer without items:\n%s", doc, recorded)
	}
	if strings.Contains(out, "secret") {
		t.Errorf("the output quotes a token:\n%s", out)
	}

	code, out = runLoad(t, append(base, "--expect", answers)...)
	if code != 0 || !strings.Contains(out, "phase load: 2 clients") || !strings.Contains(out, "as expected=") || !strings.Contains(out, "RESULT: PASS") {
		t.Fatalf("load against the recorded answers: exit %d\n%s", code, out)
	}
	t.Logf("the load against the recorded answers:\n%s", out)

	putObject(t, r.root, r.env.Bucket, report, "", []byte("Q3 revenue: down 12%"))
	code, out = runLoad(t, append(base, "--expect", answers, "--tolerate-failures")...)
	if code != 1 || !strings.Contains(out, "WRONG alice report://tenants/acme/reports") || !strings.Contains(out, "RESULT: FAIL") {
		t.Fatalf("load after a report changed: exit %d, want 1 with wrong bodies counted\n%s", code, out)
	}
}
