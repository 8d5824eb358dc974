package config

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
)

// twoOfEach serves two databases and two buckets from one file, each under
// its own templates; the policy lets the databases decide.
const twoOfEach = `version: 1
sources:
  notes:
    postgres: {url: "${NOTES_URL}", role: multi_reader}
  tasks:
    postgres: {url: "${TASKS_URL}", role: multi_reader}
  red:
    s3: {bucket: "${RED_BUCKET}", endpoint: "${S3_ENDPOINT}", path_style: true, access_key: "${S3_ACCESS_KEY}", secret_key: "${S3_SECRET_KEY}"}
  blue:
    s3: {bucket: "${BLUE_BUCKET}", endpoint: "${S3_ENDPOINT}", path_style: true, access_key: "${S3_ACCESS_KEY}", secret_key: "${S3_SECRET_KEY}"}
policy: database
resources:
  note:
    template: note://notes/{id}
    source: notes
    plan: SELECT id AS key, 1 AS version, 'text/plain' AS mime FROM items WHERE id = $id
    body: SELECT body, 1 AS version FROM items WHERE id = $key
  task:
    template: task://tasks/{id}
    source: tasks
    plan: SELECT id AS key, 1 AS version, 'text/plain' AS mime FROM items WHERE id = $id
    body: SELECT body, 1 AS version FROM items WHERE id = $key
  red-file:
    template: red://files/{name}
    source: red
  blue-file:
    template: blue://files/...
    source: blue
    prefix: files/
    max_depth: 2
`

// TestOpenServesTwoDatabasesAndTwoBuckets proves that one file serves
// several sources of each kind, each with its own connection and
// credentials, and that every template reads from its own source.
func TestOpenServesTwoDatabasesAndTwoBuckets(t *testing.T) {
	ctx := t.Context()
	env := map[string]string{}
	for _, name := range []string{"NOTES", "TASKS"} {
		url := harness.Postgres(t)
		db, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		_, err = db.Exec(ctx, `DO $$ BEGIN CREATE ROLE multi_reader NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
			CREATE TABLE items (id text PRIMARY KEY, body text NOT NULL);
			GRANT SELECT ON items TO multi_reader;
			INSERT INTO items VALUES ('1', 'from `+strings.ToLower(name)+`')`)
		db.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		env[name+"_URL"] = url
	}
	for _, name := range []string{"RED", "BLUE"} {
		s3env := harness.S3(t)
		env[name+"_BUCKET"], env["S3_ENDPOINT"], env["S3_ACCESS_KEY"], env["S3_SECRET_KEY"] = s3env.Bucket, s3env.Endpoint, s3env.AccessKey, s3env.SecretKey
		key := map[string]string{"RED": "a.txt", "BLUE": "files/x/a.txt"}[name]
		if _, err := s3env.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s3env.Bucket), Key: aws.String(key),
			Body: strings.NewReader("from " + strings.ToLower(name)), ContentType: aws.String("text/plain")}); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Parse("two.yaml", []byte(twoOfEach), &Options{LookupEnv: func(n string) (string, bool) { v, ok := env[n]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	served, err := f.Open(ctx, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer served.Close()
	if got := strings.Join(served.SourceNames(), ","); got != "notes,tasks,red,blue" {
		t.Fatalf("ready checks for %s", got)
	}
	for _, r := range served.Ready {
		if err := r.Check(ctx); err != nil {
			t.Errorf("%s is not ready: %v", r.Source, err)
		}
	}
	res, err := core.NewResources(served.Bindings, served.Policy)
	if err != nil {
		t.Fatal(err)
	}
	as := core.WithPrincipal(ctx, "anyone")
	for uri, want := range map[string]string{"note://notes/1": "from notes", "task://tasks/1": "from tasks", "red://files/a.txt": "from red", "blue://files/x/a.txt": "from blue"} {
		got, err := res.Read(as, uri)
		if err != nil {
			t.Errorf("%s: %v", uri, err)
			continue
		}
		if text := got.Items()[0].Text(); text != want {
			t.Errorf("%s read %q, want %q", uri, text, want)
		}
	}
}
