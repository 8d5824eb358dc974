package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/examples/documents"
)

// TestOwnSchemaMemberReadsADocumentThenItsFile: a member of the tenant reads
// a document of the host's own schema through the adapter, served by SQL
// the host wrote (examples/documents) and no hand-written resolver, reader
// or policy: the row's body first, then the file its row references.
func TestOwnSchemaMemberReadsADocumentThenItsFile(t *testing.T) {
	t.Parallel()
	r := newDocsRig(t)
	id := r.document(t, "acme", "Q3 plan", "the plan", "files/q3.md", "text/markdown", []byte("# the attached file"))
	cs := connectAs(t, r.res, "alice")
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: docURI("acme", id)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Contents) != 2 {
		t.Fatalf("got %d contents, want the body and the file: %+v", len(res.Contents), res.Contents)
	}
	body, file := res.Contents[0], res.Contents[1]
	if body.URI != docURI("acme", id) || body.Text != "the plan" || body.MIMEType != "text/plain" {
		t.Errorf("body item: %+v", body)
	}
	if file.URI != docURI("acme", id)+"/object" || file.Text != "# the attached file" || file.MIMEType != "text/markdown; charset=utf-8" {
		t.Errorf("file item: %+v", file)
	}

	alone, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: file.URI})
	if err != nil || len(alone.Contents) != 1 || alone.Contents[0].Text != file.Text || alone.Contents[0].URI != file.URI {
		t.Fatalf("the file alone: %+v, %v", alone, err)
	}
	if got, want := readErr(t, connectAs(t, r.res, "bob"), file.URI), readErr(t, cs, docURI("acme", "00000000-0000-0000-0000-000000000000")+"/object"); got != want {
		t.Errorf("a non-member's error for the file %s differs from a missing one's %s", got, want)
	}

	bundle, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "doc://tenants/acme/documents"})
	if err != nil {
		t.Fatal(err)
	}
	if len(bundle.Contents) != 1 || bundle.Contents[0].URI != docURI("acme", id) || bundle.Contents[0].Text != "the plan" {
		t.Fatalf("tenant bundle: %+v", bundle.Contents)
	}
}

// TestOwnSchemaNonMemberCannotTellAnExistingDocumentFromAMissingOne: row-
// level security is the gate, and a refused row looks exactly like a row
// that was never stored: the same error, byte for byte, for another
// tenant's document, a missing document, a missing tenant and a malformed
// id.
func TestOwnSchemaNonMemberCannotTellAnExistingDocumentFromAMissingOne(t *testing.T) {
	t.Parallel()
	r := newDocsRig(t)
	id := r.document(t, "acme", "secret", "acme only", "", "", nil)
	bob := connectAs(t, r.res, "bob")
	want := readErr(t, bob, docURI("acme", id))
	for _, uri := range []string{
		docURI("acme", "00000000-0000-0000-0000-000000000000"),
		docURI("nosuch", id),
		docURI("acme", "not-a-uuid"),
		docURI("globex", id),
	} {
		if got := readErr(t, bob, uri); got != want {
			t.Errorf("%s: %s\nwant the same as for an existing document: %s", uri, got, want)
		}
	}
	if !strings.Contains(want, "unavailable") && !strings.Contains(want, "not found") {
		t.Errorf("the error is %s, want the unavailable one", want)
	}
	// And a member sees it.
	if _, err := connectAs(t, r.res, "alice").ReadResource(context.Background(), &mcp.ReadResourceParams{URI: docURI("acme", id)}); err != nil {
		t.Fatalf("member: %v", err)
	}
	// The bundle of another tenant is empty for bob, not an error.
	res, err := bob.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "doc://tenants/acme/documents"})
	if err != nil || len(res.Contents) != 0 {
		t.Fatalf("another tenant's bundle: %+v, %v; want an empty bundle", res, err)
	}
}

// TestOwnSchemaOverwrittenFileIsReadFailedWhileTheRowSurvives: the file is
// pinned by the ETag its row recorded, so an overwrite in the bucket is
// refused by S3 itself (read_failed, retryable), and the row's body is
// still served.
func TestOwnSchemaOverwrittenFileIsReadFailedWhileTheRowSurvives(t *testing.T) {
	t.Parallel()
	r := newDocsRig(t)
	id := r.document(t, "acme", "report", "row body", "files/r.txt", "text/plain", []byte("first"))
	putObject(t, r.root, r.env.Bucket, "files/r.txt", "text/plain", []byte("overwritten"))
	res, err := connectAs(t, r.res, "alice").ReadResource(context.Background(), &mcp.ReadResourceParams{URI: docURI("acme", id)})
	if err != nil {
		t.Fatal(err)
	}
	report := warningReport(t, res)
	if !strings.Contains(report, `"code":"read_failed"`) || !strings.Contains(report, `"retryable":true`) {
		t.Fatalf("report %s, want one read_failed issue", report)
	}
	if len(res.Contents) != 2 || res.Contents[1].Text != "row body" {
		t.Fatalf("contents %+v, want the warning then the row's body", res.Contents)
	}
	for _, c := range res.Contents {
		if strings.Contains(c.Text, "overwritten") {
			t.Fatal("the overwritten file was served")
		}
	}
}

// TestOwnSchemaNestedReportKeysReadExactlyAtDepthsOneToSix: the key family
// report://tenants/{tenant}/reports/... serves keys one to six segments
// deep under the tenant's prefix, each read byte for byte, with the MIME
// type its extension names (the bucket types by key), and only to
// members of the tenant (the policy statement decides by the URI).
func TestOwnSchemaNestedReportKeysReadExactlyAtDepthsOneToSix(t *testing.T) {
	t.Parallel()
	r := newDocsRig(t)
	alice, bob := connectAs(t, r.res, "alice"), connectAs(t, r.res, "bob")
	segs := []string{"2026", "q3", "eu", "de", "berlin", "summary.md"}
	for depth := 1; depth <= 6; depth++ {
		key := "tenants/acme/reports/" + strings.Join(segs[len(segs)-depth:], "/")
		body := fmt.Sprintf("report at depth %d", depth)
		ct := "" // stored without a type: served by its extension
		if depth%2 == 0 {
			ct = "text/plain"
		}
		putObject(t, r.root, r.env.Bucket, key, ct, []byte(body))
		uri := "report://tenants/acme/reports/" + strings.Join(segs[len(segs)-depth:], "/")
		res, err := alice.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("depth %d: %v", depth, err)
		}
		// The bucket is opened with TypeByKey, as documents.Open asks and a
		// resources file does: the key's extension names the type, whatever
		// the object was stored with.
		const wantType = "text/markdown; charset=utf-8"
		if len(res.Contents) != 1 || res.Contents[0].Text != body || res.Contents[0].URI != uri || res.Contents[0].MIMEType != wantType {
			t.Errorf("depth %d: %+v, want %q as %s", depth, *res.Contents[0], body, wantType)
		}
		if got, want := readErr(t, bob, uri), readErr(t, bob, uri+"-missing"); got != want {
			t.Errorf("depth %d: a non-member's error %s differs from a missing key's %s", depth, got, want)
		}
	}
	if _, err := alice.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "report://tenants/acme/reports/a/b/c/d/e/f/g"}); err == nil {
		t.Fatal("depth 7 was served; the family stops at 6")
	}
}

// TestOwnSchemaTraversalAndEncodedSlashesAreRefusedBeforeAnyRequest: a
// capture that is "..", ".", holds an encoded slash or backslash, or is
// empty never becomes a key: the read fails and the store sent nothing to
// S3 or PostgreSQL.
func TestOwnSchemaTraversalAndEncodedSlashesAreRefusedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	r := newDocsRig(t)
	putObject(t, r.root, r.env.Bucket, "tenants/acme/secret", "text/plain", []byte("outside the reports"))
	alice := connectAs(t, r.res, "alice")
	r.wire.reset()
	before := r.stmts.n.Load()
	for _, uri := range []string{
		"report://tenants/acme/reports/..",
		"report://tenants/acme/reports/../secret",
		"report://tenants/acme/reports/%2E%2E/secret",
		"report://tenants/acme/reports/..%2Fsecret",
		"report://tenants/acme/reports/a%2F..%2F..%2Fsecret",
		"report://tenants/acme/reports/a%5Cb",
		"report://tenants/acme/reports/a%00b",
		"report://tenants/acme/reports/.",
		"report://tenants/acme/reports//x",
		"report://tenants/%2E%2E/reports/x",
		"doc://tenants/acme/documents/..",
		"doc://tenants/acme%2F..%2Fglobex/documents/x",
	} {
		if _, err := alice.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("%s was served", uri)
		}
	}
	if n := r.wire.gets.Load() + r.wire.heads.Load() + r.wire.others.Load(); n != 0 {
		t.Errorf("%d S3 requests were sent for refused URIs, want none", n)
	}
	if n := r.stmts.n.Load() - before; n != 0 {
		t.Errorf("%d statements were sent for refused URIs, want none", n)
	}
}

// TestOwnSchemaPolicyDecidesAWholePlanInOneStatement: the SQL policy's
// Decide answers every target of a pass (the requested document, its file,
// a report of a tenant the caller belongs to and one it does not) with one
// statement in one round trip, and Visibility and Read give the same
// answers one target at a time.
func TestOwnSchemaPolicyDecidesAWholePlanInOneStatement(t *testing.T) {
	t.Parallel()
	r := newDocsRig(t)
	id := r.document(t, "acme", "plan", "body", "files/p.txt", "text/plain", []byte("file"))
	putObject(t, r.root, r.env.Bucket, "tenants/acme/reports/x.txt", "text/plain", []byte("acme report"))
	putObject(t, r.root, r.env.Bucket, "tenants/globex/reports/y.txt", "text/plain", []byte("globex report"))
	ctx := core.WithCaller(context.Background(), core.Caller{Principal: "alice"})
	auth, err := r.res.Authorize(ctx, docURI("acme", id))
	if err != nil {
		t.Fatal(err)
	}
	if auth.Len() != 2 {
		t.Fatalf("planned %d visible items, want the body and the file", auth.Len())
	}
	acmeReport, err := r.res.Authorize(ctx, "report://tenants/acme/reports/x.txt")
	if err != nil {
		t.Fatal(err)
	}
	globexReport, err := r.res.Authorize(core.WithCaller(context.Background(), core.Caller{Principal: "bob"}), "report://tenants/globex/reports/y.txt")
	if err != nil {
		t.Fatal(err)
	}
	targets := []core.ResourceTarget{auth.Requested(), auth.Item(1), acmeReport.Requested(), globexReport.Requested()}
	host, err := documents.Open(context.Background(), r.pool, r.files)
	if err != nil {
		t.Fatal(err)
	}
	policy := host.Policy
	for _, c := range []struct {
		principal string
		want      []bool
	}{
		// The policy rechecks documents under row-level security and
		// passes reports, which their grant decided before any request.
		{"alice", []bool{true, true, true, true}},
		{"bob", []bool{false, false, true, true}},
	} {
		ctx := core.WithCaller(context.Background(), core.Caller{Principal: c.principal})
		before := r.stmts.n.Load()
		got, err := policy.Decide(ctx, core.PolicyPass{Stage: core.PassRecheck, Targets: targets, Captures: map[string]string{"tenant": "acme"}})
		if err != nil {
			t.Fatal(err)
		}
		if n := r.stmts.n.Load() - before; n != 2 {
			t.Errorf("%s: Decide sent %d statements, want one batch: the settings and the policy statement", c.principal, n)
		}
		if len(got) != len(targets) {
			t.Fatalf("%s: %d decisions for %d targets", c.principal, len(got), len(targets))
		}
		for i, d := range got {
			want := c.want[i]
			if d.Visible != want || d.Read != want || d.DiscloseIssueURI != want {
				t.Errorf("%s: target %d (%s): %+v, want visible, read and disclose %v", c.principal, i, targets[i].URI(), d, want)
			}
		}
	}
}

// TestOwnSchemaListingTypesEachObjectWithoutARequestPerObject: a listing
// gives each object the MIME type its key's extension names, from the one
// listing request, with no HEAD per object.
func TestOwnSchemaListingTypesEachObjectWithoutARequestPerObject(t *testing.T) {
	t.Parallel()
	r := newDocsRig(t)
	for _, k := range []string{"a.md", "b.pdf", "c.json", "d"} {
		putObject(t, r.root, r.env.Bucket, "tenants/acme/reports/"+k, "", []byte(k))
	}
	r.wire.reset()
	objs, _, err := r.files.List(core.WithCaller(context.Background(), core.Caller{Principal: "alice"}), "tenants/acme/reports/")
	if err != nil {
		t.Fatalf("%v: %v", err, errors.Unwrap(err))
	}
	want := map[string]string{"a.md": "text/markdown; charset=utf-8", "b.pdf": "application/pdf", "c.json": "application/json", "d": "application/octet-stream"}
	if len(objs) != len(want) {
		t.Fatalf("listed %d objects, want %d", len(objs), len(want))
	}
	for _, o := range objs {
		name := strings.TrimPrefix(o.Key, "tenants/acme/reports/")
		if o.ContentType != want[name] {
			t.Errorf("%s: content type %q, want %q", name, o.ContentType, want[name])
		}
	}
	if n := r.wire.gets.Load() + r.wire.heads.Load() + r.wire.others.Load(); n != 1 {
		t.Errorf("listing sent %d requests, want 1", n)
	}
}
