package integration

import (
	"strings"
	"testing"
	"time"

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
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 10 || !strings.Contains(out, "9 definitions") {
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
	expect := func(what string, want ...string) {
		t.Helper()
		got := map[string]bool{}
		deadline := time.After(5 * time.Second)
		for len(got) < len(want) {
			select {
			case uri := <-updates:
				got[uri] = true
			case <-deadline:
				t.Fatalf("%s: notified of %v within 5 s, want %v\nserver stderr:\n%s", what, got, want, s.stderr.String())
			}
		}
		for _, w := range want {
			if !got[w] {
				t.Fatalf("%s: notified of %v, want %v", what, got, want)
			}
		}
	}
	quiet := func(what string) {
		t.Helper()
		select {
		case uri := <-updates:
			t.Fatalf("%s: notified of %s", what, uri)
		case <-time.After(500 * time.Millisecond):
		}
	}
	// The listener connects after the server starts, and then rechecks
	// every subscription once: wait for it, so that the UPDATE below is
	// heard as its own notification.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(s.stderr.String(), "postgres listener connected"); {
		if time.Now().After(deadline) {
			t.Fatalf("the listener did not connect\n%s", s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.exec(t, `UPDATE documents SET title = 'Plan!' WHERE id = $1`, id)
	expect("the document's UPDATE", doc, bundle)
	for drained := false; !drained; { // a repeat of the same change may follow
		select {
		case <-updates:
		case <-time.After(300 * time.Millisecond):
			drained = true
		}
	}
	r.exec(t, `UPDATE documents SET title = 'Other!' WHERE id = $1`, other)
	quiet("another tenant's document changing")
	r.document(t, "acme", "New", "a new one", "", "", nil)
	expect("a document inserted into the bundle", bundle)
}
