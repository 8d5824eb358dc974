package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// auditURIs are the reads of the audit tests: a bundle, a row body and an
// object, as alice (project grants on the seed data).
var auditURIs = []string{
	"asset://project/handbook",
	"asset://project/handbook/asset/welcome/body",
	"asset://project/handbook/asset/architecture/object",
}

// auditRow is one row of mcpres.audit_events as the tests compare it.
type auditRow struct {
	uri, principal, result string
	items                  []string
	versions               []string // of items, by index
}

// auditRows returns the read events in the table, oldest first.
func auditRows(t *testing.T, dbURL string) []auditRow {
	t.Helper()
	conn := connect(t, dbURL)
	rows, err := conn.Query(t.Context(), `SELECT coalesce(uri, ''), coalesce(principal, ''), result, items
		FROM mcpres.audit_events WHERE method = 'resources/read' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (auditRow, error) {
		var a auditRow
		var items []struct {
			URI     string `json:"uri"`
			Version string `json:"version"`
		}
		var raw []byte
		if err := r.Scan(&a.uri, &a.principal, &a.result, &raw); err != nil {
			return a, err
		}
		if err := json.Unmarshal(raw, &items); err != nil {
			return a, err
		}
		for _, it := range items {
			a.items = append(a.items, it.URI)
			a.versions = append(a.versions, it.Version)
		}
		return a, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// servedURIs returns the URIs of the contents a read returned.
func servedURIs(res *mcp.ReadResourceResult) []string {
	var uris []string
	for _, c := range res.Contents {
		uris = append(uris, c.URI)
	}
	return uris
}

// Reads through the server land in the audit table once each, with
// exactly the items the client received, and the table is append-only
// for the role that writes it.
func TestAuditRecordsEveryReadOnce(t *testing.T) {
	t.Parallel()
	dbURL, _, flags := migratedAndSeeded(t)
	srv := startServer(t, append(flags, "--tokens="+tokensFile(t, "alice"), "--audit-postgres="+dbURL, "--audit-batch=4")...)
	cs := srv.connect(t, "alice-token")
	var want []auditRow
	for range 5 {
		for _, uri := range auditURIs {
			res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
			if err != nil {
				t.Fatalf("read %s: %v", uri, err)
			}
			want = append(want, auditRow{uri: uri, principal: "alice", result: "complete", items: servedURIs(res)})
		}
	}
	got := auditRows(t, dbURL)
	if !slices.EqualFunc(got, want, func(a, b auditRow) bool {
		return a.uri == b.uri && a.principal == b.principal && a.result == b.result && slices.Equal(a.items, b.items)
	}) {
		t.Fatalf("audit rows\n%+v\nwant\n%+v", got, want)
	}
	// Each item is recorded with the version its row was planned at.
	conn := connect(t, dbURL)
	var welcome string
	if err := conn.QueryRow(t.Context(), `SELECT version::text FROM mcpres.assets WHERE project_id = 'handbook' AND id = 'welcome'`).Scan(&welcome); err != nil {
		t.Fatal(err)
	}
	for _, r := range got {
		for i, v := range r.versions {
			if v == "" {
				t.Errorf("%s: item %s audited without a version", r.uri, r.items[i])
			}
			if r.items[i] == auditURIs[1] && v != welcome {
				t.Errorf("%s audited at version %q, the row is at %q", r.items[i], v, welcome)
			}
		}
	}
	// No body reaches the table.
	var leaks int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM mcpres.audit_events e, mcpres.assets a
		WHERE a.body_is_text AND length(a.body) > 8 AND position(convert_from(a.body, 'UTF8') in e::text) > 0`).Scan(&leaks); err != nil {
		t.Fatal(err)
	}
	if leaks != 0 {
		t.Fatalf("%d audit rows hold an asset body", leaks)
	}
	// The writer role may insert and nothing else.
	for _, stmt := range []string{"SELECT 1 FROM mcpres.audit_events", "UPDATE mcpres.audit_events SET principal = 'x'",
		"DELETE FROM mcpres.audit_events", "TRUNCATE mcpres.audit_events"} {
		tx, err := conn.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(t.Context(), "SET LOCAL ROLE mcpres_auditor"); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(t.Context(), stmt); err == nil {
			t.Errorf("mcpres_auditor may run %s", stmt)
		}
		_ = tx.Rollback(context.Background())
	}
}

// cutAudit revokes (or restores) the audit role's INSERT grant: the sink
// is then down for every write.
func cutAudit(t *testing.T, dbURL string, cut bool) {
	t.Helper()
	stmt := "GRANT INSERT ON mcpres.audit_events TO mcpres_auditor"
	if cut {
		stmt = "REVOKE INSERT ON mcpres.audit_events FROM mcpres_auditor"
	}
	if _, err := connect(t, dbURL).Exec(t.Context(), stmt); err != nil {
		t.Fatal(err)
	}
}

// Under --audit-on-failure refuse, a read whose event cannot be written
// is refused as a retryable outage: the client receives nothing that the
// table does not hold.
func TestAuditRefuseServesNothingUnaudited(t *testing.T) {
	t.Parallel()
	dbURL, _, flags := migratedAndSeeded(t)
	srv := startServer(t, append(flags, "--tokens="+tokensFile(t, "alice"), "--audit-postgres="+dbURL,
		"--audit-on-failure=refuse", "--audit-timeout=1s")...)
	cs := srv.connect(t, "alice-token")
	var received []auditRow
	read := func(uri string) error {
		res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
		if err == nil {
			received = append(received, auditRow{uri: uri, items: servedURIs(res)})
		}
		return err
	}
	for _, uri := range auditURIs {
		if err := read(uri); err != nil {
			t.Fatal(err)
		}
	}
	cutAudit(t, dbURL, true)
	for _, uri := range auditURIs {
		err := read(uri)
		je, wire := wireErr(t, err)
		if je.Code != jsonrpc.CodeInternalError || je.Message != outageMessage || string(je.Data) != `{"retryable":true}` {
			t.Fatalf("read %s with the audit cut: %s, want a retryable outage", uri, wire)
		}
	}
	cutAudit(t, dbURL, false)
	if err := read(auditURIs[0]); err != nil {
		t.Fatalf("read after the audit came back: %v", err)
	}
	got := auditRows(t, dbURL)
	if len(got) != len(received) {
		t.Fatalf("%d reads received, %d audited:\n%+v", len(received), len(got), got)
	}
	for i := range got {
		if got[i].uri != received[i].uri || !slices.Equal(got[i].items, received[i].items) {
			t.Errorf("read %d: audited %+v, received %+v", i, got[i], received[i])
		}
	}
}

// auditMetric reads a counter of the trail from the server's /metrics.
func auditMetric(t *testing.T, srv *runningServer, name string) int {
	t.Helper()
	_, body := srv.get(t, "/metrics")
	m := regexp.MustCompile(`(?m)^` + name + ` (\d+)`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no %s in /metrics", name)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// waitFor polls cond for up to ten seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Under --audit-on-failure continue, reads go on with the audit cut, and
// the dropped count equals the reads missing from the table.
func TestAuditContinueCountsWhatIsMissing(t *testing.T) {
	t.Parallel()
	dbURL, _, flags := migratedAndSeeded(t)
	srv := startServer(t, append(flags, "--tokens="+tokensFile(t, "alice"), "--audit-postgres="+dbURL,
		"--audit-on-failure=continue", "--audit-timeout=1s")...)
	cs := srv.connect(t, "alice-token")
	reads := 0
	read := func(uri string) {
		t.Helper()
		if _, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri}); err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		reads++
	}
	for _, uri := range auditURIs {
		read(uri)
	}
	written := func() int { return auditMetric(t, srv, "mcpres_audit_events_written_total") }
	dropped := func() int { return auditMetric(t, srv, "mcpres_audit_events_dropped_total") }
	waitFor(t, func() bool { return written() == 3 }) // a read is answered before its event is written
	cutAudit(t, dbURL, true)
	for range 3 {
		for _, uri := range auditURIs {
			read(uri)
		}
	}
	// Wait until the cut's events are all counted before restoring the
	// grant.
	waitFor(t, func() bool { return dropped() == 9 })
	cutAudit(t, dbURL, false)
	read(auditURIs[0])
	waitFor(t, func() bool { return len(auditRows(t, dbURL)) == reads-dropped() })
	if d := dropped(); d != 9 {
		t.Fatalf("dropped %d, want the 9 reads made with the audit cut", d)
	}
	// One WARN (rate-limited) says why, naming no URI or principal.
	var warns []string
	for _, l := range strings.Split(srv.stderr.String(), "\n") {
		if strings.Contains(l, "audit: events dropped") {
			warns = append(warns, l)
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "level=WARN") || !strings.Contains(warns[0], "SQLSTATE 42501") ||
		strings.Contains(warns[0], "asset://") || strings.Contains(warns[0], "alice") {
		t.Fatalf("drop warnings %q: want one WARN with the SQLSTATE and no URI or principal", warns)
	}
}

// A resources file's audit section makes serve --config write the trail
// without any --audit-* flag: the documents example's read is recorded
// with its row's version and its object's pinned ETag.
func TestAuditSectionOfAResourcesFile(t *testing.T) {
	r := newDocsRig(t)
	id := r.document(t, "acme", "Plan", "the plan", "tenants/acme/files/plan.md", "text/markdown", []byte("# the file"))
	t.Setenv("DOCS_DATABASE_URL", r.url)
	t.Setenv("DOCS_BUCKET", r.env.Bucket)
	t.Setenv("S3_ENDPOINT", r.env.Endpoint)
	t.Setenv("S3_ACCESS_KEY", r.env.AccessKey)
	t.Setenv("S3_SECRET_KEY", r.env.SecretKey)
	src, err := os.ReadFile(documentsConfig)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	trail := filepath.Join(dir, "audit.jsonl")
	cfg := filepath.Join(dir, "resources.yaml")
	if err := os.WriteFile(cfg, append(src, []byte("audit:\n  file: "+trail+"\n  on_failure: refuse\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--config", cfg, "--tokens", tokensFile(t, "alice", "bob"))
	alice := s.connect(t, "alice-token")
	doc := docURI("acme", id)
	if _, err := readAll(t, alice, doc); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(trail) // refuse: written before the answer left
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		URI, Principal, Result string
		Items                  []struct{ URI, Version, ETag string }
	}
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if e.URI != doc || e.Principal != "alice" || e.Result != "complete" || len(e.Items) != 2 ||
		e.Items[0].URI != doc || e.Items[0].Version == "" || e.Items[1].URI != doc+"/object" || e.Items[1].ETag == "" {
		t.Fatalf("audit line %s", b)
	}
	if strings.Contains(string(b), "the plan") || strings.Contains(string(b), "# the file") {
		t.Fatalf("the audit line holds a body: %s", b)
	}
	// bob is no member of acme: the grant statement refuses its report
	// before any request to S3, and the event says so in check's words.
	if _, err := readAll(t, s.connect(t, "bob-token"), "report://tenants/acme/reports/q3.pdf"); err == nil {
		t.Fatal("bob read acme's report")
	}
	ev := auditLines(t, trail)
	out := mustRun(t, "", "check", "--config", cfg)
	var decider string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Split(l, "\t"); len(f) == 5 && f[1] == "report" {
			decider = f[4]
		}
	}
	if last := ev[len(ev)-1]; decider == "" || last.Principal != "bob" || last.Result != "error" || len(last.Removed) != 1 ||
		last.Removed[0].Kind != "requested" || last.Removed[0].DecidedBy != decider || last.Removed[0].Count != 1 {
		t.Fatalf("bob's refused read audited as %+v; check says the report is decided by %q:\n%s", last, decider, out)
	}
}
