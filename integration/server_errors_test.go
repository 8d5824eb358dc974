package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"

	wirefmt "go.phpboyscout.uk/mcp/resources/internal/wire"
)

// Fixed public messages of the whole-read failures these tests meet.
var (
	outageMessage  = core.NewFailure(core.FailureOutage, nil).Error()
	noItemsMessage = core.NewFailure(core.FailureNoItems, nil).Error()
)

// errorData is the data of a JSON-RPC error the adapter sends.
type errorData struct {
	Retryable bool `json:"retryable"`
	Issues    []struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Retryable bool   `json:"retryable"`
		URI       string `json:"uri"`
	} `json:"issues"`
	IssuesOmitted *int `json:"issuesOmitted"`
}

// wireErr returns the JSON-RPC error that err carries and its encoding
// (code, message, data) as the client received it.
func wireErr(t *testing.T, err error) (*jsonrpc.Error, string) {
	t.Helper()
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		t.Fatalf("want a JSON-RPC error, got %v", err)
	}
	b, _ := json.Marshal(je)
	return je, string(b)
}

// noPrivate fails when a client-visible error holds any of private.
func noPrivate(t *testing.T, what, wire string, private ...string) {
	t.Helper()
	for _, p := range private {
		if p != "" && strings.Contains(strings.ToLower(wire), strings.ToLower(p)) {
			t.Errorf("%s: the error a client saw holds %q: %s", what, p, wire)
		}
	}
}

// TestServerPlanningDuringTerminatedBackendsIsARetryableStorageOutage runs
// the built server against the real PostgreSQL and terminates every backend
// of its database (pg_terminate_backend, as an operator or a failover
// does) between two reads: the next read, which plans on a pooled
// connection that is gone, answers -32603 "resource storage is temporarily
// unavailable" with {"retryable":true} as data (not "resource could not be
// planned"), a retry succeeds, no error holds the server's private cause,
// and /metrics counts the outage under its own kind.
func TestServerPlanningDuringTerminatedBackendsIsARetryableStorageOutage(t *testing.T) {
	t.Parallel()
	dbURL, _, flags := migratedAndSeeded(t)
	srv := startServer(t, append(flags, "--principal=alice")...)
	cs := srv.connect(t, "")
	admin, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	const uri = "asset://project/handbook/asset/welcome/body"

	outages := 0
	var seen []string
	for attempt := 0; attempt < 5 && outages == 0; attempt++ {
		if _, err := readAll(t, cs, uri); err != nil {
			t.Fatalf("read before the termination: %v", err)
		}
		// Every backend of the server's database but this one, waiting
		// (up to 5 s) until each has exited.
		var n int
		if err := admin.QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000))
			FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, dbName(t, dbURL)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		// At once, so that the pool hands out a connection idle for less
		// than the second after which pgxpool would ping (and replace) it.
		_, err := readAll(t, cs, uri)
		if err == nil {
			t.Logf("attempt %d: %d backends terminated, the read met none of them", attempt, n)
			continue
		}
		outages++
		for retry := 0; err != nil; retry++ {
			je, wire := wireErr(t, err)
			seen = append(seen, wire)
			if je.Code != jsonrpc.CodeInternalError || je.Message != outageMessage || string(je.Data) != `{"retryable":true}` {
				t.Fatalf("read during the outage: %s, want -32603 %q with {\"retryable\":true}", wire, outageMessage)
			}
			if retry == 100 { // bounds a failing run only: a retry succeeds once the pool has replaced the dead connections
				t.Fatalf("100 retries over 10 s did not succeed: %s", wire)
			}
			time.Sleep(100 * time.Millisecond)
			_, err = readAll(t, cs, uri)
		}
		t.Logf("attempt %d: %d backends terminated; %d outage answers, then the retry read the body", attempt, n, len(seen))
	}
	if outages == 0 {
		t.Fatal("no read met a terminated backend in 5 attempts")
	}
	for _, wire := range seen {
		noPrivate(t, "outage", wire, "57P01", "terminat", "administrator", "SQLSTATE", dbName(t, dbURL), "127.0.0.1", "postgres", "welcome")
	}
	_, metrics := srv.get(t, "/metrics")
	for _, want := range []string{
		`mcpres_requests_total{kind="storage outage",method="resources/read",outcome="failed"}`,
		`mcpres_store_calls_total{op="resolve",outcome="outage",store="postgres"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(metrics, `kind="invalid plan"`) || strings.Contains(metrics, `kind="policy failure"`) {
		t.Errorf("/metrics counts the outage as an invalid plan or a policy failure")
	}
}

// seededUnversioned migrates and seeds a fresh database and a fresh bucket
// without versioning, so that the rows pin their objects by ETag alone (an
// overwrite then refuses the pinned object instead of serving its older
// version, as in a versioned bucket).
func seededUnversioned(t *testing.T) (string, harness.S3Env, []string) {
	t.Helper()
	dbURL, env := harness.Postgres(t), harness.S3Users(t)
	own := env
	own.Bucket = fmt.Sprintf("mcpres-unversioned-%d", time.Now().UnixNano())
	client := env.Client()
	if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(own.Bucket)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		list, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(own.Bucket)})
		if err == nil {
			for _, o := range list.Contents {
				_, _ = client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(own.Bucket), Key: o.Key})
			}
		}
		_, _ = client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(own.Bucket)})
	})
	flags := storageFlags(dbURL, own)
	mustRun(t, "", "migrate", "--postgres="+dbURL)
	mustRun(t, "", append([]string{"seed"}, flags...)...)
	return dbURL, own, flags
}

// TestServerSingleReadOfAnOverwrittenObjectSaysReadFailedRetryable runs the
// built server and overwrites the S3 object a row pins: a read of that
// object alone answers -32603 "no resource item could be read" whose data
// carries the item's read_failed issue, retryable, and nothing private (no
// key, bucket, ETag or S3 answer); the joined bundle stays partial with the
// same issue; /metrics counts "no item survived" apart from the outage and
// invalid-plan kinds.
func TestServerSingleReadOfAnOverwrittenObjectSaysReadFailedRetryable(t *testing.T) {
	t.Parallel()
	dbURL, env, flags := seededUnversioned(t)
	srv := startServer(t, append(flags, "--principal=alice")...)
	cs := srv.connect(t, "")
	const obj = "asset://project/launch/asset/press-kit/object"
	if _, err := readAll(t, cs, obj); err != nil {
		t.Fatalf("read before the overwrite: %v", err)
	}
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var key, etag string
	if err := conn.QueryRow(t.Context(), `SELECT object_key, object_etag FROM mcpres.assets WHERE project_id = 'launch' AND id = 'press-kit'`).Scan(&key, &etag); err != nil {
		t.Fatal(err)
	}
	out, err := env.Client().PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(env.Bucket), Key: aws.String(key),
		Body: bytes.NewReader([]byte("a newer press kit")), ContentType: aws.String("application/octet-stream")})
	if err != nil {
		t.Fatal(err)
	}

	_, err = readAll(t, cs, obj)
	je, wire := wireErr(t, err)
	var d errorData
	if je.Code != jsonrpc.CodeInternalError || je.Message != noItemsMessage || json.Unmarshal(je.Data, &d) != nil {
		t.Fatalf("read of the overwritten object: %s, want -32603 %q with data", wire, noItemsMessage)
	}
	if !d.Retryable || len(d.Issues) != 1 || d.Issues[0].Code != "read_failed" || !d.Issues[0].Retryable ||
		d.Issues[0].Message != "The resource could not be read." || d.IssuesOmitted == nil || *d.IssuesOmitted != 0 {
		t.Fatalf("data %s: want one read_failed issue, retryable", je.Data)
	}
	if d.Issues[0].URI != "" && d.Issues[0].URI != obj {
		t.Fatalf("issue URI %q: only the item's own URI may be disclosed", d.Issues[0].URI)
	}
	noPrivate(t, "overwritten object", wire, key, env.Bucket, strings.Trim(etag, `"`), strings.Trim(aws.ToString(out.ETag), `"`),
		"PreconditionFailed", "412", "s3store", "If-Match", env.Endpoint)

	bundle, err := readAll(t, cs, "asset://project/launch/asset/press-kit")
	if err != nil || len(contentURIs(bundle)) != 1 {
		t.Fatalf("the joined bundle: %v, want its fields and a warning", err)
	}
	report, _ := json.Marshal(bundle.Meta[wirefmt.ReportMetaKey])
	if !strings.Contains(string(report), `"code":"read_failed"`) {
		t.Fatalf("the joined bundle's report %s: want the object's read_failed", report)
	}

	_, metrics := srv.get(t, "/metrics")
	if !strings.Contains(metrics, `mcpres_requests_total{kind="no item survived",method="resources/read",outcome="failed"} 1`) {
		t.Errorf("/metrics does not count the failed single read as no item survived")
	}
	if strings.Contains(metrics, `kind="storage outage"`) || strings.Contains(metrics, `kind="invalid plan"`) {
		t.Errorf("/metrics counts a changed object as an outage or an invalid plan")
	}
}

// serverS3User creates a versitygw user for the server itself whose bucket
// policy lets it check the bucket and read every object of the bucket but
// refused, as a host's own bucket policy may refuse the server an object
// that a row still references.
func serverS3User(t *testing.T, env harness.S3Env, refused string) harness.S3Env {
	t.Helper()
	user := env.NewUser(t, uniqueUser(t, "server"))
	list, err := env.Client().ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(env.Bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var objects []string
	for _, o := range list.Contents {
		if k := aws.ToString(o.Key); k != refused {
			objects = append(objects, "arn:aws:s3:::"+env.Bucket+"/"+k)
		}
	}
	doc, _ := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": []map[string]any{
		{"Effect": "Allow", "Principal": map[string][]string{"AWS": {user.AccessKey}}, "Action": []string{"s3:ListBucket"},
			"Resource": []string{"arn:aws:s3:::" + env.Bucket}},
		{"Effect": "Allow", "Principal": map[string][]string{"AWS": {user.AccessKey}}, "Action": []string{"s3:GetObject"},
			"Resource": objects},
	}})
	if _, err := env.Client().PutBucketPolicy(t.Context(), &s3.PutBucketPolicyInput{Bucket: aws.String(env.Bucket), Policy: aws.String(string(doc))}); err != nil {
		t.Fatal(err)
	}
	return user
}

// TestServerRefusedDeletedAndMissingAssetsAnswerAlikeThroughTheServer runs
// the built server over a seeded database and bucket whose policy refuses
// the server one object (seed/launch/budget.csv), with tokens for alice
// and bob. A single read of an object that its row plans but S3 refuses, of
// an asset bob has no grant on, of an object deleted from the bucket after
// its row was written, and of an asset that never existed all answer the
// same bytes; so do a subscribe to, and a read of, an asset bob never had,
// one his grant on was revoked, one deleted and one that never existed, and
// their completions are alike.
func TestServerRefusedDeletedAndMissingAssetsAnswerAlikeThroughTheServer(t *testing.T) {
	t.Parallel()
	dbURL, env, _ := seededUnversioned(t)
	serverUser := serverS3User(t, env, "seed/launch/budget.csv")
	srv := startServer(t, append(storageFlags(dbURL, serverUser), "--tokens="+tokensFile(t, "alice", "bob"))...)
	alice, _ := srv.connectLive(t, "alice-token")
	bob, _ := srv.connectLive(t, "bob-token")
	ctx := t.Context()
	if r, err := readAll(t, alice, "asset://project/handbook/asset/architecture/object"); err != nil || !strings.HasPrefix(r.Contents[0].Text, "<svg") {
		t.Fatalf("the server's S3 user reads a granted object: %v", err)
	}
	if _, err := env.Client().DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(env.Bucket), Key: aws.String("seed/handbook/intro.bin")}); err != nil {
		t.Fatal(err)
	}
	read := func(cs *mcp.ClientSession, uri string) string {
		_, err := readAll(t, cs, uri)
		_, wire := wireErr(t, err)
		return wire
	}
	never := read(alice, "asset://project/handbook/asset/never/object")
	if never != `{"code":-32602,"message":"resource unavailable"}` {
		t.Fatalf("a never-existing asset answers %s", never)
	}
	for name, got := range map[string]string{
		"an object S3 refuses the server, planned from its row": read(alice, "asset://project/launch/asset/budget/object"),
		"an object of a project bob has no grant in":            read(bob, "asset://project/launch/asset/budget/object"),
		"an object deleted after its row planned it":            read(alice, "asset://project/handbook/asset/intro-video/object"),
	} {
		if got != never {
			t.Errorf("%s: %s, want %s", name, got, never)
		}
	}

	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `DELETE FROM mcpres.grants WHERE principal = 'bob' AND project_id = 'handbook' AND asset_id = 'welcome'`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `DELETE FROM mcpres.assets WHERE project_id = 'handbook' AND id = 'logo'`); err != nil {
		t.Fatal(err)
	}
	complete := func(project, prefix string) string {
		r, err := bob.Complete(ctx, &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "asset://project/{project}/asset/{asset}"},
			Argument: mcp.CompleteParamsArgument{Name: "asset", Value: prefix},
			Context:  &mcp.CompleteContext{Arguments: map[string]string{"project": project}},
		})
		if err != nil {
			t.Fatalf("complete %s/%s: %v", project, prefix, err)
		}
		b, _ := json.Marshal(r.Completion)
		return string(b)
	}
	type answers struct{ read, subscribe, complete string }
	ask := func(project, asset string) answers {
		uri := "asset://project/" + project + "/asset/" + asset
		_, sub := wireErr(t, bob.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}))
		return answers{read(bob, uri), sub, complete(project, asset)}
	}
	want := ask("handbook", "never")
	if want.read != never || want.subscribe != never || want.complete != `{"values":[]}` {
		t.Fatalf("bob and a never-existing asset: %+v", want)
	}
	for name, got := range map[string]answers{
		"refused at plan (no grant in the project)": ask("launch", "budget"),
		"refused after a grant was revoked":         ask("handbook", "welcome"),
		"deleted":                                   ask("handbook", "logo"),
	} {
		if got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
}
