package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/integration/harness"
)

// TestConfigServesTwoDatabasesAndTwoBucketsThroughTheBinary serves one file
// (testdata/two-of-each.yaml) with two PostgreSQL databases and two
// buckets, each with its own connection and credentials, through the built
// binary: every template reads from its own source, /readyz answers for
// all four, and /metrics counts each read under its own source's name.
func TestConfigServesTwoDatabasesAndTwoBucketsThroughTheBinary(t *testing.T) {
	ctx := t.Context()
	for _, name := range []string{"NOTES", "TASKS"} {
		url := harness.Postgres(t)
		db, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		_, err = db.Exec(ctx, `DO $$ BEGIN CREATE ROLE multi_reader NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
			CREATE TABLE items (id text PRIMARY KEY, body text NOT NULL);
			GRANT SELECT ON items TO multi_reader;
			ALTER TABLE items ENABLE ROW LEVEL SECURITY; CREATE POLICY callers ON items FOR SELECT USING (current_setting('mcp.principal', true) <> '');
			INSERT INTO items VALUES ('1', 'from `+strings.ToLower(name)+`')`)
		db.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv(name+"_URL", url)
	}
	for _, name := range []string{"RED", "BLUE"} {
		env := harness.S3(t)
		t.Setenv(name+"_BUCKET", env.Bucket)
		t.Setenv("S3_ENDPOINT", env.Endpoint)
		t.Setenv("S3_ACCESS_KEY", env.AccessKey)
		t.Setenv("S3_SECRET_KEY", env.SecretKey)
		key := map[string]string{"RED": "a.txt", "BLUE": "files/x/a.txt"}[name]
		if _, err := env.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(env.Bucket), Key: aws.String(key),
			Body: strings.NewReader("from " + strings.ToLower(name)), ContentType: aws.String("text/plain")}); err != nil {
			t.Fatal(err)
		}
	}
	s := startServer(t, "--config", "testdata/two-of-each.yaml", "--tokens", tokensFile(t, "alice"))
	cs := s.connect(t, "alice-token")
	for uri, want := range map[string]string{"note://notes/1": "from notes", "task://tasks/1": "from tasks",
		"red://files/a.txt": "from red", "blue://files/x/a.txt": "from blue"} {
		res, err := readAll(t, cs, uri)
		if err != nil {
			t.Errorf("%s: %v", uri, err)
			continue
		}
		if len(res.Contents) != 1 || res.Contents[0].Text != want {
			t.Errorf("%s read %+v, want %q", uri, res.Contents, want)
		}
	}
	if code, body := s.get(t, "/readyz"); code != 200 {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	_, metrics := s.get(t, "/metrics")
	for _, src := range []string{"notes", "tasks", "red", "blue"} {
		if want := `mcpres_store_calls_total{op="read",outcome="ok",store="` + src + `"}`; !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
}
