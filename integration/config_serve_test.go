package integration

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const documentsConfig = "../examples/documents/resources.yaml"

// TestConfigServesTheDocumentsExampleWithTwoTokens runs the built binary
// as an operator would, on the documents example's file and nothing else:
// check lists the definitions and exits 0; serve --config --http with two
// bearer tokens answers each principal as the memberships table says
// (alice reads her tenant's document and its file, and a report six levels
// deep; bob is refused both), the file is pinned (overwritten, it is left
// out of a partial read), a membership revoked in SQL between
// two reads refuses the second, and /readyz covers both sources.
func TestConfigServesTheDocumentsExampleWithTwoTokens(t *testing.T) {
	r := newDocsRig(t)
	id := r.document(t, "acme", "Plan", "the plan", "tenants/acme/files/plan.md", "text/markdown", []byte("# the file"))
	putObject(t, r.root, r.env.Bucket, "tenants/acme/reports/2026/q3/a/b/c/deep.md", "text/markdown", []byte("# six levels down"))
	t.Setenv("DOCS_DATABASE_URL", r.url)
	t.Setenv("DOCS_BUCKET", r.env.Bucket)
	t.Setenv("S3_ENDPOINT", r.env.Endpoint)
	t.Setenv("S3_ACCESS_KEY", r.env.AccessKey)
	t.Setenv("S3_SECRET_KEY", r.env.SecretKey)

	out := mustRun(t, "", "check", "--config", documentsConfig)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 11 || !strings.Contains(out, "10 definitions") {
		t.Fatalf("check printed:\n%s", out)
	}

	s := startServer(t, "--config", documentsConfig, "--tokens", tokensFile(t, "alice", "bob"))
	if code, body := s.get(t, "/readyz"); code != 200 {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	alice, bob := s.connect(t, "alice-token"), s.connect(t, "bob-token")
	doc := docURI("acme", id)
	res, err := readAll(t, alice, doc)
	if err != nil {
		t.Fatalf("alice reads her tenant's document: %v", err)
	}
	if uris := contentURIs(res); len(uris) != 2 || uris[0] != doc || uris[1] != doc+"/object" ||
		res.Contents[0].Text != "the plan" || res.Contents[1].Text != "# the file" {
		t.Fatalf("want the body then the pinned file, got %+v", res.Contents)
	}
	if res, err := readAll(t, alice, doc+"/object"); err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "# the file" {
		t.Fatalf("alice reads the file alone at the URI the document's read gave it: %v", err)
	}
	deep := "report://tenants/acme/reports/2026/q3/a/b/c/deep.md"
	if res, err := readAll(t, alice, deep); err != nil || res.Contents[0].Text != "# six levels down" {
		t.Fatalf("alice reads a report six levels deep: %v", err)
	}
	for _, uri := range []string{doc, deep} {
		if _, err := readAll(t, bob, uri); err == nil {
			t.Errorf("bob, no member of acme, read %s", uri)
		}
	}
	// The file is pinned by the ETag its row recorded: overwritten, it is
	// refused (a partial read: the warning, then the row's body alone).
	putObject(t, r.root, r.env.Bucket, "tenants/acme/files/plan.md", "text/markdown", []byte("# replaced"))
	res, err = readAll(t, alice, doc)
	if err != nil {
		t.Fatalf("alice reads the document after its file changed: %v", err)
	}
	if uris := contentURIs(res); len(uris) != 1 || uris[0] != doc || !strings.HasPrefix(res.Contents[0].URI, "mcp-warning:") {
		t.Fatalf("want the warning and the body without the changed file, got %+v", res.Contents)
	}
	r.exec(t, `DELETE FROM memberships WHERE user_id = 'alice'`)
	for _, uri := range []string{doc, deep} {
		if _, err := readAll(t, alice, uri); err == nil {
			t.Errorf("alice read %s after her membership was revoked", uri)
		}
	}
}

// TestConfigSubscriptionsFollowTheListenChannel runs the documents example
// from its file with the triggers of its schema.sql: a subscriber to a
// document hears of an UPDATE committed by another connection (the payload
// is the document's id), a subscriber to the tenant's bundle hears of a
// document inserted into it, and a document of another tenant changing
// tells neither.
func TestConfigSubscriptionsFollowTheListenChannel(t *testing.T) {
	r := newDocsRig(t)
	id := r.document(t, "acme", "Plan", "the plan", "", "", nil)
	other := r.document(t, "globex", "Other", "not alice's", "", "", nil)
	t.Setenv("DOCS_DATABASE_URL", r.url)
	t.Setenv("DOCS_BUCKET", r.env.Bucket)
	t.Setenv("S3_ENDPOINT", r.env.Endpoint)
	t.Setenv("S3_ACCESS_KEY", r.env.AccessKey)
	t.Setenv("S3_SECRET_KEY", r.env.SecretKey)
	s := startServer(t, "--config", documentsConfig, "--tokens", tokensFile(t, "alice"))
	alice, updates := s.connectLive(t, "alice-token")
	ctx := t.Context()
	doc, bundle := docURI("acme", id), "doc://tenants/acme/documents"
	for _, uri := range []string{doc, bundle} {
		if err := alice.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
	}
	// Every step is ordered by the server's own counters: the listener's
	// connection (its recheck of every subscription included) is one change
	// report, and each committed statement below is one more (the trigger
	// sends the document's id; Postgres folds a transaction's identical
	// payloads into one notification). After each, wait until the server
	// has handled every change it counted, then compare what it sent.
	notified := s.settled(t, "the listener connected and rechecked", 1)
	takeUpdates(t, updates, notified, "the listener's recheck")
	step := func(what string, sql string, args ...any) map[string]int {
		t.Helper()
		changes, before := s.liveCounts(t)
		r.exec(t, sql, args...)
		after := s.settled(t, what, changes+1)
		return takeUpdates(t, updates, after-before, what)
	}
	if got := step("the document's UPDATE", `UPDATE documents SET title = 'Plan!' WHERE id = $1`, id); len(got) != 2 || got[doc] != 1 || got[bundle] != 1 {
		t.Fatalf("the document's UPDATE: notified of %v, want %s and %s once each", got, doc, bundle)
	}
	if got := step("another tenant's document changing", `UPDATE documents SET title = 'Other!' WHERE id = $1`, other); len(got) != 0 {
		t.Fatalf("another tenant's document changing: notified of %v, want nothing", got)
	}
	if got := step("a document inserted into the bundle", `INSERT INTO documents (tenant_id, title, body) VALUES ('acme', 'New', 'a new one')`); len(got) != 1 || got[bundle] != 1 {
		t.Fatalf("a document inserted into the bundle: notified of %v, want %s once", got, bundle)
	}
}
