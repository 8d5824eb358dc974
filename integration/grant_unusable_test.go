package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUnusableGrantRowsWarnAndCount serves the documents example with a
// report grant that, for acme, returns only rows that can never grant a
// key (a prefix without its trailing '/', NULL and an empty one), against real
// PostgreSQL and S3: alice's read is refused (fail closed, as before), and
// now the server logs a WARN naming the resource, never the principal or
// key, at most once a minute, and counts the rows in
// mcpres_grant_rows_unusable_total{resource="report"}; bob's valid prefix
// still serves his report, and counts nothing.
func TestUnusableGrantRowsWarnAndCount(t *testing.T) {
	r := newDocsRig(t)
	putObject(t, r.root, r.env.Bucket, "tenants/acme/reports/q3.md", "text/markdown", []byte("# acme"))
	putObject(t, r.root, r.env.Bucket, "tenants/globex/reports/q3.md", "text/markdown", []byte("# globex"))
	raw, err := os.ReadFile(documentsConfig)
	if err != nil {
		t.Fatal(err)
	}
	const grant = `        SELECT 'tenants/' || m.tenant_id || '/reports/' AS prefix
        FROM memberships m WHERE m.user_id = $principal AND m.tenant_id = $tenant`
	const broken = `        SELECT CASE WHEN m.tenant_id = 'acme' THEN 'tenants/acme/reports' ELSE 'tenants/' || m.tenant_id || '/reports/' END AS prefix
        FROM memberships m WHERE m.user_id = $principal AND m.tenant_id = $tenant
        UNION ALL SELECT NULL WHERE $tenant = 'acme' UNION ALL SELECT '' WHERE $tenant = 'acme'`
	if !strings.Contains(string(raw), grant) {
		t.Fatal("the documents example's report grant changed; update this test")
	}
	file := filepath.Join(t.TempDir(), "resources.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(string(raw), grant, broken, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCS_DATABASE_URL", r.url)
	t.Setenv("DOCS_BUCKET", r.env.Bucket)
	t.Setenv("S3_ENDPOINT", r.env.Endpoint)
	t.Setenv("S3_ACCESS_KEY", r.env.AccessKey)
	t.Setenv("S3_SECRET_KEY", r.env.SecretKey)

	s := startServer(t, "--config", file, "--tokens", tokensFile(t, "alice", "bob"))
	alice, bob := s.connect(t, "alice-token"), s.connect(t, "bob-token")
	const metric = "mcpres_grant_rows_unusable_total"
	if res, err := readAll(t, bob, "report://tenants/globex/reports/q3.md"); err != nil || res.Contents[0].Text != "# globex" {
		t.Fatalf("bob's valid prefix: %v", err)
	}
	if n := s.metric(t, metric); n != 0 {
		t.Errorf("a valid grant counted %v unusable rows", n)
	}
	for range 2 {
		if _, err := readAll(t, alice, "report://tenants/acme/reports/q3.md"); err == nil {
			t.Fatal("a grant of unusable rows served alice's report")
		}
	}
	if n := s.metric(t, metric, `resource="report"`); n != 6 {
		t.Errorf(`%s{resource="report"} = %v, want 6 (3 unusable rows, two refused reads)`, metric, n)
	}
	var warns []string
	deadline := time.Now().Add(5 * time.Second)
	for len(warns) == 0 && time.Now().Before(deadline) {
		for _, l := range strings.Split(s.stderr.String(), "\n") {
			if strings.Contains(l, "level=WARN") && strings.Contains(l, "grant statement returned rows that can never grant") {
				warns = append(warns, l)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "resource=report") || !strings.Contains(warns[0], "rows=3") {
		t.Fatalf("want one WARN naming resource report (rate-limited), got %q\nstderr:\n%s", warns, s.stderr.String())
	}
	for _, leak := range []string{"alice", "tenants/acme", "q3.md", "report://"} {
		if strings.Contains(warns[0], leak) {
			t.Errorf("the WARN line holds %q: %s", leak, warns[0])
		}
	}
	if res, err := readAll(t, bob, "report://tenants/globex/reports/q3.md"); err != nil || res.Contents[0].Text != "# globex" {
		t.Fatalf("bob's valid prefix after the warnings: %v", err)
	}
	// explain says why alice is refused, after the grant's plan step.
	code, out, _ := runServerCmd(t, "", "explain", "--config", file, "--principal", "alice", "report://tenants/acme/reports/q3.md")
	plan := strings.Index(out, "\nplan      refused: unavailable")
	note := strings.Index(out, "\ngrant     the grant of report returned 3 rows that can never grant a key")
	if code != 1 || plan < 0 || note < plan {
		t.Errorf("explain of alice's refused report: exit %d\n%s", code, out)
	}
}
