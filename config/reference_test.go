package config

import (
	"database/sql"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/migrations"
)

// TestOpenServesTheReferenceSchema proves the shipped reference config
// prepares against the migrated reference schema and serves it under the
// grants table: the index, an asset's fields then its pinned object, its
// body, and nothing for a principal without a grant.
func TestOpenServesTheReferenceSchema(t *testing.T) {
	ctx := t.Context()
	url := harness.Postgres(t)
	s3env := harness.S3(t)
	sqldb, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close()
	if _, err := migrations.Apply(ctx, sqldb); err != nil {
		t.Fatal(err)
	}
	out, err := s3env.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s3env.Bucket), Key: aws.String("p1/logo.txt"),
		Body: strings.NewReader("the object"), ContentType: aws.String("text/plain")})
	if err != nil {
		t.Fatal(err)
	}
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	_, err = db.Exec(ctx, `INSERT INTO mcpres.projects VALUES ('p1', 'Project one');
		INSERT INTO mcpres.assets (project_id, id, name, mime_type, body, body_is_text, object_bucket, object_key, object_etag, object_version_id, object_size)
		VALUES ('p1', 'a1', 'logo', 'text/plain', 'the body', true, '`+s3env.Bucket+`', 'p1/logo.txt', '`+strings.ReplaceAll(aws.ToString(out.ETag), "'", "")+`', '`+aws.ToString(out.VersionId)+`', 10);
		INSERT INTO mcpres.grants (principal, project_id) VALUES ('alice', 'p1')`)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"MCPRES_DATABASE_URL": url, "MCPRES_LISTEN_DATABASE_URL": "", "MCPRES_BUCKET": s3env.Bucket,
		"MCPRES_BUCKET_ENDPOINT": s3env.Endpoint, "MCPRES_BUCKET_REGION": s3env.Region,
		"MCPRES_BUCKET_ACCESS_KEY": s3env.AccessKey, "MCPRES_BUCKET_SECRET_KEY": s3env.SecretKey}
	data, err := os.ReadFile("../migrations/resources.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse("reference.yaml", data, &Options{LookupEnv: func(n string) (string, bool) { v, ok := env[n]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	served, err := f.Open(ctx, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer served.Close()
	res, err := core.NewResources(served.CoreBindings(), served.Policy, served.ObjectSources()...)
	if err != nil {
		t.Fatal(err)
	}
	alice := core.WithCaller(ctx, core.Caller{Principal: "alice"})
	idx, err := res.Read(alice, "asset://projects")
	if err != nil {
		t.Fatalf("index: %v", err)
	}
	var index struct{ Projects []struct{ ID string } }
	if err := json.Unmarshal([]byte(idx.Items()[0].Text()), &index); err != nil || len(index.Projects) != 1 || index.Projects[0].ID != "p1" {
		t.Fatalf("index %q (%v)", idx.Items()[0].Text(), err)
	}
	asset, err := res.Read(alice, "asset://project/p1/asset/a1")
	if err != nil {
		t.Fatalf("asset: %v", err)
	}
	if items := asset.Items(); len(items) != 2 || !strings.Contains(items[0].Text(), `"a1"`) || items[1].Text() != "the object" {
		t.Fatalf("want the fields then the object, got %+v", items)
	}
	if obj, err := res.Read(alice, "asset://project/p1/asset/a1/object"); err != nil || len(obj.Items()) != 1 || obj.Items()[0].Text() != "the object" {
		t.Fatalf("the object alone: %v", err)
	}
	// Issue 39, defect 10: the object template completes its captures,
	// offering only assets that reference an object.
	if c, err := res.Complete(alice, "asset://project/{project}/asset/{asset}/object", "asset", "", map[string]string{"project": "p1"}); err != nil || len(c.Values) != 1 || c.Values[0] != "a1" {
		t.Fatalf("completing the object template's asset: %+v, %v; want a1", c, err)
	}
	body, err := res.Read(alice, "asset://project/p1/asset/a1/body")
	if err != nil || body.Items()[0].Text() != "the body" {
		t.Fatalf("body: %v", err)
	}
	if _, err := res.Read(core.WithCaller(ctx, core.Caller{Principal: "mallory"}), "asset://project/p1/asset/a1"); core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("mallory without a grant: %v; want unavailable", err)
	}
}
