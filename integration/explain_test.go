package integration

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestExplainShowsWhyACallerCanOrCannotRead runs `explain` on the
// documents example's file against real PostgreSQL and S3: alice's read
// of her tenant's document shows the plan's rows, the body statement and
// the S3 GET pinned by the row's ETag, and exits 0; bob's read of it
// shows the plan statement refusing him (row-level security hides the
// row) and exits 1; a report bob is not granted shows the grant statement
// refusing it before any S3 request; a URI no definition matches says so.
// No body is ever printed.
func TestExplainShowsWhyACallerCanOrCannotRead(t *testing.T) {
	r := newDocsRig(t)
	id := r.document(t, "acme", "Plan", "secret plan body", "tenants/acme/files/plan.md", "text/markdown", []byte("# secret file body"))
	putObject(t, r.root, r.env.Bucket, "tenants/acme/reports/q3.md", "text/markdown", []byte("# secret report"))
	var etag string
	if err := r.admin.QueryRow(t.Context(), `SELECT s3_etag FROM documents WHERE id::text = $1`, id).Scan(&etag); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCS_DATABASE_URL", r.url)
	t.Setenv("DOCS_BUCKET", r.env.Bucket)
	t.Setenv("S3_ENDPOINT", r.env.Endpoint)
	t.Setenv("S3_ACCESS_KEY", r.env.AccessKey)
	t.Setenv("S3_SECRET_KEY", r.env.SecretKey)
	doc := docURI("acme", id)
	explain := func(principal, uri string, extra ...string) (int, string, string) {
		args := append([]string{"explain", "--config", documentsConfig, "--principal", principal}, extra...)
		return runServerCmd(t, "", append(args, uri)...)
	}
	noSecrets := func(out string) {
		t.Helper()
		for _, s := range []string{"secret plan body", "secret file body", "secret report", r.env.SecretKey} {
			if strings.Contains(out, s) {
				t.Errorf("explain printed %q:\n%s", s, out)
			}
		}
	}

	code, out, errs := explain("alice", doc)
	noSecrets(out + errs)
	if code != 0 {
		t.Fatalf("alice: exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{
		"select    template doc://tenants/{tenant}/documents/{id} (resource document, source docs, item+object)",
		`captures  id="` + id + `" tenant="acme"`,
		"plan      2 rows (items)  [by plan statement on docs: SELECT d.id AS key",
		`"key":"` + id + `"`,
		"object=files:tenants/acme/files/plan.md etag=" + etag,
		"decide    before reads: 2 targets in one pass  [by plan statement's row-level security]",
		doc + ": visible, read allowed",
		doc + ": body statement on docs: SELECT d.body, d.xmin AS version FROM documents d WHERE d.id::text = $key ($key=\"" + id + "\" $version=\"",
		doc + "/object: S3 GET s3://" + r.env.Bucket + "/tenants/acme/files/plan.md If-Match: " + etag + " Range: bytes=0-",
		"-> text/plain text, 16 bytes",
		"recheck   recheck: 2 targets in one pass  [by policy.decide on docs]",
		"outcome   served: 2 items, complete",
		"item  " + doc + "/object text/markdown; charset=utf-8 text, 18 bytes",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("alice's explain lacks %q:\n%s", want, out)
		}
	}

	code, out, errs = explain("bob", doc)
	noSecrets(out + errs)
	if code != 1 || !strings.Contains(errs, "the read would not be served") {
		t.Fatalf("bob: exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{
		"plan      refused: unavailable (postgres: the item is not visible to the principal)  [by plan statement on docs",
		"no such row, or row-level security or the grant hides it",
		"outcome   not served: unavailable",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("bob's explain lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "S3 GET") || strings.Contains(out, "body statement") {
		t.Errorf("bob's refused read sent a body request:\n%s", out)
	}

	code, out, _ = explain("bob", "report://tenants/acme/reports/q3.md")
	if code != 1 || !strings.Contains(out, "plan      refused: unavailable (s3store: no grant for the key)  [by grant statement on docs: SELECT 'tenants/' || m.tenant_id") ||
		strings.Contains(out, "S3 GET") {
		t.Errorf("bob's report: exit %d\n%s", code, out)
	}
	code, out, _ = explain("alice", "report://tenants/acme/reports/q3.md")
	if code != 0 || !strings.Contains(out, "S3 GET s3://"+r.env.Bucket+"/tenants/acme/reports/q3.md If-Match: ") || !strings.Contains(out, "[by grant statement on docs]") {
		t.Errorf("alice's report: exit %d\n%s", code, out)
	}

	// A listing: the family's grant, once for the listed prefix, then the LIST.
	code, out, _ = explain("alice", "report://tenants/acme/reports")
	if code != 0 || !strings.Contains(out, "[by grant statement of report on docs, once for the prefix tenants/acme/reports/: SELECT 'tenants/' || m.tenant_id") ||
		!strings.Contains(out, "; then S3 LIST s3://"+r.env.Bucket+"/tenants/acme/reports/]") || !strings.Contains(out, "report://tenants/acme/reports/q3.md") {
		t.Errorf("alice's listing: exit %d\n%s", code, out)
	}

	code, out, _ = explain("alice", "nothing://here")
	if code != 1 || !strings.Contains(out, "select    no definition of the file matches the URI (unavailable)") {
		t.Errorf("a URI nothing matches: exit %d\n%s", code, out)
	}

	code, out, _ = explain("alice", doc, "--json")
	var rep struct {
		Served bool `json:"served"`
		Steps  []struct {
			Step, Summary, By string
			Detail            []string
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || !rep.Served || len(rep.Steps) == 0 || rep.Steps[len(rep.Steps)-1].Step != "outcome" {
		t.Errorf("--json: exit %d, %v\n%s", code, err, out)
	}
	noSecrets(out)
}
