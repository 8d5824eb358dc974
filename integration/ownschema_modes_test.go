package integration

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/examples/documents"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// TestOwnSchemaDatabaseDecidesModeLeavesRowLevelSecurityTheOnlyGate: under
// postgres.DatabaseDecides the gateway allows everything and row-level
// security in the plan and body statements decides: members read, a
// non-member's error for an existing document is byte for byte the one for
// a missing document, and a membership revoked between the plan and the
// body read withholds the body.
func TestOwnSchemaDatabaseDecidesModeLeavesRowLevelSecurityTheOnlyGate(t *testing.T) {
	t.Parallel()
	r := newDocsRig(t)
	id := r.document(t, "acme", "memo", "members only", "", "", nil)
	host, err := documents.Open(t.Context(), r.pool, r.files)
	if err != nil {
		t.Fatal(err)
	}
	bindings := host.Bindings
	revokeAfterPlan := false
	doc := bindings[0]
	inner := doc.Resolver
	doc.Resolver = core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
		p, err := inner.Resolve(ctx, m)
		if err == nil && revokeAfterPlan {
			r.exec(t, `DELETE FROM memberships WHERE user_id = 'alice' AND tenant_id = 'acme'`)
		}
		return p, err
	})
	res, err := core.NewResources([]core.ResourceBinding{doc}, postgres.DatabaseDecides())
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := connectAs(t, res, "alice"), connectAs(t, res, "bob")
	got, err := alice.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: docURI("acme", id)})
	if err != nil || len(got.Contents) != 1 || got.Contents[0].Text != "members only" {
		t.Fatalf("member: %+v, %v", got, err)
	}
	want := readErr(t, bob, docURI("acme", id))
	if missing := readErr(t, bob, docURI("acme", "00000000-0000-0000-0000-000000000000")); missing != want {
		t.Fatalf("existing: %s\nmissing: %s\nwant the same bytes", want, missing)
	}
	revokeAfterPlan = true
	got, err = alice.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: docURI("acme", id)})
	if err == nil {
		for _, c := range got.Contents {
			if strings.Contains(c.Text, "members only") {
				t.Fatal("the body was served after the membership was revoked")
			}
		}
	}
}

// TestOwnSchemaCompletionOffersOnlyWhatRowLevelSecurityShows: the
// completion statements run as the reader role with the caller set, so
// each caller is offered its own tenants and their documents only.
func TestOwnSchemaCompletionOffersOnlyWhatRowLevelSecurityShows(t *testing.T) {
	t.Parallel()
	r := newDocsRig(t)
	acme := r.document(t, "acme", "a", "a", "", "", nil)
	r.document(t, "globex", "g", "g", "", "", nil)
	tmpl := "doc://tenants/{tenant}/documents/{id}"
	for principal, want := range map[string][]string{"alice": {"acme"}, "bob": {"globex"}} {
		c, err := r.res.Complete(core.WithCaller(context.Background(), core.Caller{Principal: principal}), tmpl, "tenant", "", nil)
		if err != nil || !slices.Equal(c.Values, want) {
			t.Errorf("%s: tenants %v, %v; want %v", principal, c.Values, err, want)
		}
	}
	c, err := r.res.Complete(core.WithCaller(context.Background(), core.Caller{Principal: "alice"}), tmpl, "id", acme[:4], map[string]string{"tenant": "acme"})
	if err != nil || !slices.Equal(c.Values, []string{acme}) {
		t.Errorf("alice's documents: %v, %v; want [%s]", c.Values, err, acme)
	}
	c, err = r.res.Complete(core.WithCaller(context.Background(), core.Caller{Principal: "bob"}), tmpl, "id", "", map[string]string{"tenant": "acme"})
	if err != nil || len(c.Values) != 0 {
		t.Errorf("bob offered acme's documents: %v, %v", c.Values, err)
	}
}

// TestOwnSchemaTwoDatabasesAndTwoBucketsServeOneHost: each source and each
// bucket is built from its own pool or client (its own credentials), so
// one host serves two databases and two buckets side by side, each
// document read from its own database and its file from its own bucket.
func TestOwnSchemaTwoDatabasesAndTwoBucketsServeOneHost(t *testing.T) {
	t.Parallel()
	var bindings []core.ResourceBinding
	var objects []core.Option
	type site struct {
		name string
		rig  *docsRig
		id   string
	}
	sites := []*site{{name: "east"}, {name: "west"}}
	for _, s := range sites {
		rig := &docsRig{}
		rig.url, rig.admin = newDocsDB(t)
		rig.pool = newPool(t, rig.url, nil)
		rig.env = harness.S3(t)
		rig.root = s3Client(t, rig.env, nil)
		files, err := s3store.OpenBucket(t.Context(), s3Client(t, rig.env, nil), rig.env.Bucket, nil)
		if err != nil {
			t.Fatal(err)
		}
		rig.exec(t, `INSERT INTO tenants (id, name) VALUES ('acme', 'Acme')`)
		rig.exec(t, `INSERT INTO memberships (user_id, tenant_id) VALUES ('alice', 'acme')`)
		s.rig = rig
		s.id = rig.document(t, "acme", s.name, "body in "+s.name, "f.txt", "text/plain", []byte("file in "+s.name))
		src, err := postgres.NewSource(rig.pool, postgres.SourceOptions{Name: s.name, Role: "docs_reader",
			Objects: map[string]string{s.name + "-files": files.Name()}})
		if err != nil {
			t.Fatal(err)
		}
		b, err := src.Binding(postgres.SQLBinding{
			Definition: core.ResourceDefinition{URITemplate: "doc://" + s.name + "/{tenant}/{id}", Name: s.name + "-document"},
			Plan: `SELECT d.id AS key, d.xmin AS version, d.content_type AS mime, d.s3_key AS object_key, d.s3_etag AS object_etag
				FROM documents d WHERE d.tenant_id = $tenant AND d.id::text = $id`,
			Body:         `SELECT d.body, d.xmin AS version FROM documents d WHERE d.id::text = $key`,
			ObjectSource: s.name + "-files",
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := src.Check(t.Context()); err != nil {
			t.Fatal(err)
		}
		bindings = append(bindings, b)
		objects = append(objects, core.WithObjectSource(s.name+"-files", core.ItemReader(files.Read)))
	}
	res, err := core.NewResources(bindings, postgres.DatabaseDecides(), objects...)
	if err != nil {
		t.Fatal(err)
	}
	alice := connectAs(t, res, "alice")
	for _, s := range sites {
		got, err := alice.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "doc://" + s.name + "/acme/" + s.id})
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if len(got.Contents) != 2 || got.Contents[0].Text != "body in "+s.name || got.Contents[1].Text != "file in "+s.name {
			t.Fatalf("%s: %+v", s.name, got.Contents)
		}
	}
	// A document id of one database is not found through the other.
	if _, err := alice.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "doc://west/acme/" + sites[0].id}); err == nil {
		t.Fatal("east's document was found in west")
	}
}
