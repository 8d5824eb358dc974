package config

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/examples/documents"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
)

// The tests of Open need a real PostgreSQL and S3 server (see
// integration/harness); without them they skip, or fail under
// MCPRES_INTEGRATION=require.
func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

const documentsExample = "../examples/documents/resources.yaml"

// docsRig is the documents schema in a fresh database with alice a member
// of acme and bob of globex, a fresh bucket, and the environment that the
// example's ${...} references read.
type docsRig struct {
	db     *pgx.Conn
	env    map[string]string
	secret string
	doc    string // an acme document with a file
}

func newDocsRig(t *testing.T) *docsRig {
	t.Helper()
	ctx := t.Context()
	url := harness.Postgres(t)
	s3env := harness.S3(t)
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	if _, err := db.Exec(ctx, documents.Schema); err != nil {
		t.Fatal(err)
	}
	client := s3env.Client()
	put := func(key, body, ct string) string {
		out, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s3env.Bucket), Key: aws.String(key),
			Body: strings.NewReader(body), ContentType: aws.String(ct)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.ETag)
	}
	etag := put("tenants/acme/files/plan.md", "# the attached file", "text/markdown")
	put("tenants/acme/reports/2026/q3/a/b/c/deep.md", "# six levels down", "text/markdown")
	put("tenants/globex/reports/r.txt", "globex only", "text/plain")
	var id string
	err = db.QueryRow(ctx, `WITH t AS (INSERT INTO tenants VALUES ('acme', 'Acme'), ('globex', 'Globex')),
		m AS (INSERT INTO memberships VALUES ('alice', 'acme', 'reader'), ('bob', 'globex', 'reader'))
		INSERT INTO documents (tenant_id, title, body, content_type, s3_key, s3_etag)
		VALUES ('acme', 'Plan', 'the plan', 'text/plain', 'tenants/acme/files/plan.md', $1) RETURNING id::text`, etag).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return &docsRig{db: db, secret: s3env.SecretKey, doc: id, env: map[string]string{
		"DOCS_DATABASE_URL": url, "DOCS_BUCKET": s3env.Bucket, "S3_ENDPOINT": s3env.Endpoint,
		"S3_ACCESS_KEY": s3env.AccessKey, "S3_SECRET_KEY": s3env.SecretKey,
	}}
}

func (r *docsRig) lookup(name string) (string, bool) { v, ok := r.env[name]; return v, ok }

// open loads data as the documents example and opens it.
func (r *docsRig) open(t *testing.T, data []byte) (*Served, error) {
	t.Helper()
	f, err := Parse(documentsExample, data, &Options{LookupEnv: r.lookup})
	if err != nil {
		t.Fatalf("the file does not load: %v", err)
	}
	served, err := f.Open(t.Context(), nil)
	if err == nil {
		t.Cleanup(served.Close)
	}
	return served, err
}

// TestOpenServesTheDocumentsExample proves the shipped example, opened
// through the store constructors, serves what the memberships table says:
// a member reads a document and its pinned file, and reports six levels
// deep; a non-member and a revoked member are refused.
func TestOpenServesTheDocumentsExample(t *testing.T) {
	r := newDocsRig(t)
	data, err := os.ReadFile(documentsExample)
	if err != nil {
		t.Fatal(err)
	}
	served, err := r.open(t, data)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if len(served.Bindings) != 10 || len(served.Lines) != 10 || len(served.Ready) != 2 {
		t.Fatalf("got %d bindings, %d lines, %d ready checks; want 10, 10, 2", len(served.Bindings), len(served.Lines), len(served.Ready))
	}
	select {
	case <-served.Serving(): // every source reached serving in Open's check
	default:
		t.Fatal("Serving is not closed after Open checked every source")
	}
	if err := served.Check(t.Context()); err != nil { // a second check reaches serving again
		t.Fatalf("a second Check: %v", err)
	}
	for _, l := range served.Lines {
		if uri, _, _ := strings.Cut(l, "\t"); !strings.Contains(uri, "://") {
			t.Errorf("line %q does not start with the URI or template it describes", l)
		}
	}
	file, err := Parse(documentsExample, data, &Options{LookupEnv: r.lookup})
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range served.Bindings {
		if src := file.resource(b.Definition.Name).Source; b.Source != src {
			t.Errorf("binding %d (%s) reads %q; want %q", i, b.Definition.Name, b.Source, src)
		}
	}
	res, err := core.NewResources(served.CoreBindings(), served.Policy, served.ObjectSources()...)
	if err != nil {
		t.Fatal(err)
	}
	as := func(p string) context.Context { return core.WithCaller(t.Context(), core.Caller{Principal: p}) }
	docURI := "doc://tenants/acme/documents/" + r.doc

	got, err := res.Read(as("alice"), docURI)
	if err != nil {
		t.Fatalf("alice reads her tenant's document: %v", err)
	}
	items := got.Items()
	if len(items) != 2 || items[0].Text() != "the plan" || items[1].Text() != "# the attached file" {
		t.Fatalf("want the body then the file, got %+v", items)
	}
	if got, err := res.Read(as("alice"), docURI+"/object"); err != nil || len(got.Items()) != 1 || got.Items()[0].Text() != "# the attached file" {
		t.Fatalf("alice reads the document's file alone: %v", err)
	}
	deep := "report://tenants/acme/reports/2026/q3/a/b/c/deep.md"
	if got, err := res.Read(as("alice"), deep); err != nil || got.Items()[0].Text() != "# six levels down" {
		t.Fatalf("alice reads a report six levels deep: %v", err)
	}
	list, err := res.Read(as("alice"), "report://tenants/acme/reports")
	if err != nil || len(list.Items()) != 1 || list.Items()[0].URI() != deep || list.Items()[0].Text() != "# six levels down" {
		t.Fatalf("alice lists her tenant's reports: %v, want the one report as %s", err, deep)
	}
	for _, uri := range []string{docURI, docURI + "/object", deep, "report://tenants/acme/reports"} {
		if _, err := res.Read(as("bob"), uri); core.KindOf(err) != core.FailureUnavailable {
			t.Errorf("bob, no member of acme, reads %s: %v; want unavailable", uri, err)
		}
	}
	if _, err := r.db.Exec(t.Context(), `DELETE FROM memberships WHERE user_id = 'alice'`); err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{docURI, docURI + "/object", deep, "report://tenants/acme/reports"} {
		if _, err := res.Read(as("alice"), uri); core.KindOf(err) != core.FailureUnavailable {
			t.Errorf("alice, revoked, reads %s: %v; want unavailable", uri, err)
		}
	}
}

// TestOpenPutsServerMistakesAtTheirLine proves what only the servers can
// tell (a column, a role, a bucket) is one FILE:LINE:COL: line at the key
// that holds the mistake, without a secret.
func TestOpenPutsServerMistakesAtTheirLine(t *testing.T) {
	r := newDocsRig(t)
	data, err := os.ReadFile(documentsExample)
	if err != nil {
		t.Fatal(err)
	}
	lineOf := func(s string) int {
		i := strings.Index(string(data), s)
		if i < 0 {
			t.Fatalf("the example has no %q", s)
		}
		return strings.Count(string(data[:i]), "\n") + 1
	}
	cases := []struct {
		name, old, new, at, want string
	}{
		{"a column the table lacks", "d.s3_key AS object_key", "d.s3key AS object_key", "    plan: |\n      SELECT d.id AS key, d.xmin AS version, d.content_type AS mime, d.title, octet", "column d.s3key does not exist"},
		{"a column the store does not read", "d.content_type AS mime, d.title, octet", "d.content_type AS mimetype, d.title, octet", "    plan: |\n      SELECT d.id AS key, d.xmin AS version, d.content_type AS mime, d.title, octet", `column "mimetype"`},
		{"a role that does not exist", "role: docs_reader", "role: no_such_role", "role: docs_reader", `role "no_such_role" does not exist`},
		{"a bucket that does not exist", "bucket: ${DOCS_BUCKET}", "bucket: no-such-bucket-here", "bucket: ${DOCS_BUCKET}", "does not exist"},
		{"a completion column that does not exist", "starts_with(m.tenant_id, $prefix)", "starts_with(m.tenant, $prefix)", "      tenant: SELECT", "column m.tenant does not exist"},
		{"a policy column the store does not read", "r.ok AS read, r.ok AS disclose", "r.ok AS reed", "  decide: |", `column "reed"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			broken := strings.Replace(string(data), tc.old, tc.new, 1)
			_, err := r.open(t, []byte(broken))
			checkErrorLine(t, err, documentsExample+":"+strconv.Itoa(lineOf(tc.at))+":", tc.want, r.secret)
		})
	}
}
