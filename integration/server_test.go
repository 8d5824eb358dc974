package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/integration/harness"

	wirefmt "go.phpboyscout.uk/mcp/resources/internal/wire"
)

// seededState is what the seed wrote: every asset's version and pinned
// object identity, and every grant.
func seededState(t testing.TB, dbURL string) string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var state string
	err = conn.QueryRow(t.Context(), `SELECT concat_ws(E'\n',
		(SELECT string_agg(concat_ws(' ', project_id, id, version, object_etag, object_version_id, object_size), E'\n' ORDER BY project_id, id) FROM mcpres.assets),
		(SELECT string_agg(concat_ws(' ', principal, project_id, asset_id, can_discover, can_read, disclose_issue_uri), E'\n' ORDER BY principal, project_id, asset_id) FROM mcpres.grants))`).Scan(&state)
	if err != nil {
		t.Fatal(err)
	}
	return state
}

// migratedAndSeeded runs migrate and seed (twice each) against a fresh
// database and bucket and returns their addresses as command flags.
func migratedAndSeeded(t testing.TB) (string, harness.S3Env, []string) {
	t.Helper()
	dbURL, env := harness.Postgres(t), harness.S3(t)
	flags := storageFlags(dbURL, env)
	if out := mustRun(t, "", "migrate", "--postgres="+dbURL); !strings.Contains(out, "applied version 1\n") {
		t.Fatalf("migrate printed %q: want the version it applied", out)
	}
	if out := mustRun(t, "", "migrate", "--postgres="+dbURL); !strings.Contains(out, "(0 applied now)") {
		t.Fatalf("a second migrate printed %q: want nothing applied", out)
	}
	first := mustRun(t, "", append([]string{"seed"}, flags...)...)
	state := seededState(t, dbURL)
	second := mustRun(t, "", append([]string{"seed"}, flags...)...)
	if !strings.Contains(first, "4 uploaded") || !strings.Contains(second, "(0 rows written); objects: 0 uploaded, 4 already there") {
		t.Fatalf("seed printed %q, then %q: want four uploads, then nothing written", first, second)
	}
	if again := seededState(t, dbURL); again != state {
		t.Fatalf("a second seed changed the state:\n%s\nthen\n%s", state, again)
	}
	return dbURL, env, flags
}

// tokensFile writes a tokens file, built with the command's own hash-token,
// that maps "<principal>-token" to each principal.
func tokensFile(t testing.TB, principals ...string) string {
	t.Helper()
	var lines strings.Builder
	for _, p := range principals {
		lines.WriteString(mustRun(t, p+"-token\n", "hash-token", p))
	}
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func readAll(t *testing.T, cs *mcp.ClientSession, uri string) (*mcp.ReadResourceResult, error) {
	t.Helper()
	return cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
}

func contentURIs(r *mcp.ReadResourceResult) []string {
	var uris []string
	for _, c := range r.Contents {
		if !strings.HasPrefix(c.URI, "mcp-warning:") {
			uris = append(uris, c.URI)
		}
	}
	return uris
}

// TestServerAfterMigrateAndSeedServesEachTokenItsOwnGrants runs the built
// binary as an operator would: migrate and seed (each twice, the second run
// changing nothing), then serve --http with a tokens file for alice and bob.
// Through the go-sdk client over streamable HTTP the two tokens see
// different projects and different project bundles, the same asset reads
// for alice and is unavailable to bob, a joined asset is its row's fields
// and its S3 object, a request without a token is refused, /readyz answers
// 200, and /metrics counts both stores without naming a principal or URI.
func TestServerAfterMigrateAndSeedServesEachTokenItsOwnGrants(t *testing.T) {
	t.Parallel()
	_, _, flags := migratedAndSeeded(t)
	srv := startServer(t, append(flags, "--tokens="+tokensFile(t, "alice", "bob"))...)
	alice, bob := srv.connect(t, "alice-token"), srv.connect(t, "bob-token")

	projects := func(cs *mcp.ClientSession) []string {
		r, err := readAll(t, cs, "asset://projects")
		if err != nil {
			t.Fatalf("read the index: %v", err)
		}
		var doc struct {
			Projects []struct{ ID string } `json:"projects"`
		}
		if err := json.Unmarshal([]byte(r.Contents[0].Text), &doc); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, p := range doc.Projects {
			ids = append(ids, p.ID)
		}
		return ids
	}
	if got := projects(alice); !slices.Equal(got, []string{"handbook", "launch"}) {
		t.Errorf("alice's projects %q: want handbook and launch", got)
	}
	if got := projects(bob); !slices.Equal(got, []string{"handbook"}) {
		t.Errorf("bob's projects %q: want handbook only", got)
	}

	const hb = "asset://project/handbook"
	ab, err := readAll(t, alice, hb)
	if err != nil {
		t.Fatal(err)
	}
	wantAlice := []string{hb + "/asset/architecture", hb + "/asset/empty", hb + "/asset/intro-video", hb + "/asset/logo", hb + "/asset/salaries", hb + "/asset/welcome"}
	if got := contentURIs(ab); !slices.Equal(got, wantAlice) || len(ab.Contents) != len(wantAlice) {
		t.Errorf("alice's handbook bundle %q: want every asset, complete", got)
	}
	bb, err := readAll(t, bob, hb)
	if err != nil {
		t.Fatal(err)
	}
	wantBob := []string{hb + "/asset/architecture", hb + "/asset/empty", hb + "/asset/logo", hb + "/asset/welcome"}
	if got := contentURIs(bb); !slices.Equal(got, wantBob) || !strings.HasPrefix(bb.Contents[0].URI, "mcp-warning:") {
		t.Errorf("bob's handbook bundle %q: want the warning and four assets", got)
	}
	report, _ := json.Marshal(bb.Meta[wirefmt.ReportMetaKey])
	if want := `"issues":[{"code":"unavailable","message":"The resource is unavailable.","retryable":false,"uri":"asset://project/handbook/asset/salaries"}]`; !strings.Contains(string(report), want) {
		t.Errorf("bob's report %s: want salaries as a disclosed unavailable omission", report)
	}

	// The same asset reads differently by grant.
	salaries := hb + "/asset/salaries/body"
	if r, err := readAll(t, alice, salaries); err != nil || !strings.HasPrefix(r.Contents[0].Text, "name,salary") {
		t.Errorf("alice reads salaries: %v", err)
	}
	if _, err := readAll(t, bob, salaries); err == nil || !strings.Contains(err.Error(), "resource unavailable") {
		t.Errorf("bob reads salaries: %v, want resource unavailable", err)
	}
	if _, err := readAll(t, bob, "asset://project/launch/asset/budget"); err == nil {
		t.Errorf("bob read an asset of a project he has no grant in")
	}

	// A joined asset: the row's fields, then the object from the bucket.
	for name, cs := range map[string]*mcp.ClientSession{"alice": alice, "bob": bob} {
		r, err := readAll(t, cs, hb+"/asset/architecture")
		if err != nil {
			t.Fatalf("%s reads the joined asset: %v", name, err)
		}
		if got := contentURIs(r); len(r.Contents) != 2 || !slices.Equal(got, []string{hb + "/asset/architecture", hb + "/asset/architecture/object"}) ||
			!strings.HasPrefix(r.Contents[1].Text, "<svg") || r.Contents[1].MIMEType != "image/svg+xml" {
			t.Errorf("%s's joined asset %q: want the fields and the SVG object", name, got)
		}
	}
	if r, err := readAll(t, alice, "asset://project/launch/asset/press-kit/object"); err != nil || len(r.Contents[0].Blob) != 2048 {
		t.Errorf("alice reads a binary object: %v", err)
	}

	// Without a token the MCP endpoint refuses; the operator endpoints answer.
	client := mcp.NewClient(&mcp.Implementation{Name: "anonymous", Version: "1"}, nil)
	if cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + srv.addr + "/mcp", MaxRetries: -1}, nil); err == nil {
		cs.Close()
		t.Errorf("a session without a bearer token was accepted")
	}
	if code, body := srv.get(t, "/readyz"); code != 200 {
		t.Errorf("/readyz: %d %s", code, body)
	}
	if code, _ := srv.get(t, "/healthz"); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	code, metrics := srv.get(t, "/metrics")
	// The seed's PostgreSQL reads are all planned with their content (its
	// bodies are small): PostgreSQL's round trips are resolves.
	if code != 200 || !strings.Contains(metrics, `mcpres_store_calls_total{op="read",outcome="ok",store="s3"}`) ||
		!strings.Contains(metrics, `mcpres_store_calls_total{op="resolve",outcome="ok",store="postgres"}`) {
		t.Errorf("/metrics (%d) does not count the calls of both stores", code)
	}
	for _, private := range []string{"alice", "bob", "asset://", "salaries"} {
		if strings.Contains(metrics, private) {
			t.Errorf("/metrics names %q", private)
		}
	}
}

// TestServerReadyzShowsItsBucketGoneAndStaysReady proves that /readyz
// asks S3 now: a server whose bucket is deleted under it shows the s3
// source unavailable, naming nothing else, and stays ready, because its
// PostgreSQL source still serves the rows (the bucket's objects are items
// of theirs).
func TestServerReadyzShowsItsBucketGoneAndStaysReady(t *testing.T) {
	t.Parallel()
	dbURL, env := harness.Postgres(t), harness.S3(t)
	mustRun(t, "", "migrate", "--postgres="+dbURL)
	own := env
	own.Bucket = fmt.Sprintf("mcpres-ready-%d", time.Now().UnixNano())
	client := env.Client()
	if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(own.Bucket)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteBucket(context.Background(), &s3.DeleteBucketInput{Bucket: aws.String(own.Bucket)})
	})
	srv := startServer(t, append(storageFlags(dbURL, own), "--principal=alice")...)
	if code, body := srv.get(t, "/readyz"); code != 200 {
		t.Fatalf("/readyz before the delete: %d %s", code, body)
	}
	if _, err := client.DeleteBucket(t.Context(), &s3.DeleteBucketInput{Bucket: aws.String(own.Bucket)}); err != nil {
		t.Fatal(err)
	}
	if code, body := srv.get(t, "/readyz"); code != 200 || strings.TrimSpace(body) != `{"ready":true,"sources":{"postgres":"serving","s3":"unavailable"}}` {
		t.Fatalf("/readyz after the delete: %d %q, want 200 showing s3 unavailable", code, body)
	}
}

// TestServerReadyzAnswers503OnceItsDatabaseIsGone proves that /readyz asks
// PostgreSQL now: a server whose database is dropped under it can serve
// nothing (its bucket's objects are items of the database's rows), turns
// from 200 to 503, and says which source failed without details.
func TestServerReadyzAnswers503OnceItsDatabaseIsGone(t *testing.T) {
	t.Parallel()
	dbURL, _, flags := migratedAndSeeded(t)
	srv := startServer(t, append(flags, "--principal=alice")...)
	if code, body := srv.get(t, "/readyz"); code != 200 {
		t.Fatalf("/readyz before the drop: %d %s", code, body)
	}
	other := harness.Postgres(t) // a database to connect to while dropping ours
	conn, err := pgx.Connect(t.Context(), other)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	name := dbURL[strings.LastIndex(dbURL, "/")+1:]
	if i := strings.IndexByte(name, '?'); i >= 0 {
		name = name[:i]
	}
	if _, err := conn.Exec(t.Context(), "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Fatal(err)
	}
	var code int
	var body string
	for range 100 { // the pool may hand out one connection that died with the database first
		if code, body = srv.get(t, "/readyz"); code == 503 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code != 503 || strings.TrimSpace(body) != `{"ready":false,"reason":"no source can serve","sources":{"postgres":"unavailable","s3":"serving"}}` {
		t.Fatalf("/readyz after the drop: %d %q, want 503 showing postgres unavailable", code, body)
	}
	if code, _ := srv.get(t, "/healthz"); code != 200 {
		t.Fatalf("/healthz after the drop: %d, want 200 (the process is alive)", code)
	}
}

// TestServerConfigurationErrorsAgainstRealServicesEndWithOneLine covers the
// configuration errors that need a real server to happen: a database
// without the reference schema, a login that is not a member of the reader
// role, and a bucket that does not exist. Each ends the command with one
// line on stderr and exit 1.
func TestServerConfigurationErrorsAgainstRealServicesEndWithOneLine(t *testing.T) {
	t.Parallel()
	dbURL, env := harness.Postgres(t), harness.S3(t)
	empty := harness.Postgres(t)
	mustRun(t, "", "migrate", "--postgres="+dbURL)
	role := fmt.Sprintf("mcpres_plain_%d", time.Now().UnixNano())
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// A password, because a server may ask for one (the official postgres
	// image's pg_hba has scram-sha-256 for every host); trust ignores it.
	password := fmt.Sprintf("pw-%d", time.Now().UnixNano())
	if _, err := conn.Exec(t.Context(), "CREATE ROLE "+role+" LOGIN PASSWORD '"+password+"'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), empty)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP ROLE IF EXISTS "+role)
			c.Close(context.Background())
		}
	})
	plainURL, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	plainURL.User = url.UserPassword(role, password)
	plain := plainURL.String()
	missing := env
	missing.Bucket = fmt.Sprintf("mcpres-missing-%d", time.Now().UnixNano())

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no reference schema", []string{"serve", "--postgres=" + empty}, "run `mcp-resources migrate` first"},
		{"login without the reader role", []string{"serve", "--postgres=" + plain}, "GRANT mcpres_reader TO it"},
		{"missing bucket", append([]string{"serve"}, storageFlags(dbURL, missing)...), "mcp-resources: --bucket: bucket \"" + missing.Bucket + "\" does not exist"},
		// Without --bucket the server notes that objects are not served;
		// the note waits until it serves, so the error stays one line.
		{"no bucket, then a missing tokens file", []string{"serve", "--postgres=" + dbURL, "--http=127.0.0.1:0", "--tokens=" + t.TempDir() + "/none"}, "tokens file"},
		{"no bucket, then tokens over stdio", []string{"serve", "--postgres=" + dbURL, "--tokens=" + t.TempDir()}, "--tokens needs --http"},
		{"unreachable --listen-postgres", []string{"serve", "--postgres=" + dbURL, "--listen-postgres=postgres://postgres@127.0.0.1:1/db?connect_timeout=3"}, "mcp-resources: --listen-postgres: cannot reach PostgreSQL at 127.0.0.1:1"},
	} {
		code, _, stderr := runServerCmd(t, "", c.args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		last := lines[len(lines)-1]
		if code != 1 || !strings.HasPrefix(last, "mcp-resources: ") || !strings.Contains(last, c.want) {
			t.Errorf("%s: exit %d, last line %q: want exit 1 and %q", c.name, code, last, c.want)
		}
		if len(lines) != 1 {
			t.Errorf("%s: %d stderr lines, want exactly one:\n%s", c.name, len(lines), stderr)
		}
		if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, env.SecretKey) {
			t.Errorf("%s: stderr holds a stack trace or the secret key:\n%s", c.name, stderr)
		}
	}

	// What the help asks of the URL's role is enough: an inheriting member
	// of mcpres_reader serves, and reads as the reader role.
	if _, err := conn.Exec(t.Context(), "GRANT mcpres_reader TO "+role); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, "--postgres="+plain, "--principal=alice")
	cs := srv.connect(t, "")
	r, err := readAll(t, cs, "asset://projects")
	if err != nil || r.Contents[0].Text != `{"projects" : []}` {
		t.Fatalf("a member login reads the index: %v %+v", err, r)
	}
	// Without --bucket the reference file's optional S3 source is left
	// out, and with it the template of an asset's object alone.
	tl, err := cs.ListResourceTemplates(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tm := range tl.ResourceTemplates {
		names = append(names, tm.Name)
	}
	if slices.Sort(names); !slices.Equal(names, []string{"asset", "asset-body", "project"}) {
		t.Fatalf("without --bucket the templates are %v; want asset, asset-body and project", names)
	}
}
