package documents

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/config"
	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/live"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// Tests that need PostgreSQL and S3 get them from package harness: from
// the environment (scripts/services.sh), from testcontainers, or skipped.
func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

// served is one of the two hosts: its gateway and change sources.
type served struct {
	res     *core.Resources
	changes []core.ChangeSource
}

// goHost is the Go host on pool and the bucket named bucket of the S3
// server at endpoint, checked when check is set.
func goHost(t *testing.T, pool *pgxpool.Pool, endpoint, bucket, key, secret string, check bool) served {
	t.Helper()
	client, err := s3store.NewClient(t.Context(), s3store.ClientConfig{Endpoint: endpoint, UsePathStyle: true, AccessKeyID: key, SecretAccessKey: secret})
	if err != nil {
		t.Fatal(err)
	}
	files, err := s3store.OpenBucket(t.Context(), client, bucket, &s3store.Options{TypeByKey: true})
	if err != nil {
		t.Fatal(err)
	}
	var h *Host
	if check {
		h, err = Open(t.Context(), pool, files)
	} else {
		h, _, err = build(pool, files)
	}
	if err != nil {
		t.Fatalf("the Go host: %v", err)
	}
	res, err := h.Resources()
	if err != nil {
		t.Fatal(err)
	}
	return served{res, h.Changes}
}

// fileHost is resources.yaml opened with env, checked when check is set.
func fileHost(t *testing.T, env map[string]string, check bool) served {
	t.Helper()
	f, err := config.Load("resources.yaml", &config.Options{LookupEnv: func(n string) (string, bool) { v, ok := env[n]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Open(t.Context(), &config.OpenOptions{Deferred: !check})
	if err != nil {
		t.Fatalf("the file: %v", err)
	}
	t.Cleanup(s.Close)
	res, err := core.NewResources(s.CoreBindings(), s.Policy, append(s.ObjectSources(), core.WithResourceLimits(f.ResourceLimits()))...)
	if err != nil {
		t.Fatal(err)
	}
	return served{res, s.Changes}
}

// connect serves h over MCP as mcp-resources serve does (completion, and
// subscriptions when it has change sources) to a client acting as
// principal; updated receives the URIs of resources/updated.
func connect(t *testing.T, h served, principal string, updated chan<- string) *mcp.ClientSession {
	t.Helper()
	opts := &mcpsdk.Options{Completions: true, Principal: func(context.Context, mcp.Request) string { return principal }}
	if len(h.changes) > 0 {
		opts.Live, opts.Sources = &live.Options{}, h.changes
	}
	a := mcpsdk.New(h.res, opts)
	server := a.NewServer(&mcp.Implementation{Name: "documents", Version: "v0"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go a.Run(ctx)
	st, ct := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v0"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			if updated != nil {
				updated <- r.Params.URI
			}
		}})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// js is v as indented JSON, to compare and to print.
func js(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// same fails unless the Go host and the file answered alike.
func same(t *testing.T, what string, goAnswer, fileAnswer any) {
	t.Helper()
	if g, f := js(goAnswer), js(fileAnswer); g != f {
		t.Errorf("%s differ:\nGo host: %s\nfile:    %s", what, g, f)
	}
}

// surface is what a client learns of a server without reading anything:
// its capabilities, templates, resources, and the kinds of change sources
// behind its subscriptions.
func surface(t *testing.T, h served) (caps *mcp.ServerCapabilities, templates, resources any, changes []string) {
	t.Helper()
	cs := connect(t, h, "alice", nil)
	ctx := t.Context()
	tl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rl, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range h.changes {
		changes = append(changes, fmt.Sprintf("%T", c))
	}
	return cs.InitializeResult().Capabilities, tl.ResourceTemplates, rl.Resources, changes
}

// TestGoHostAndFileServeTheSameDefinitions: the Go host (documents.go) and
// resources.yaml claim to serve the same resources; built without a
// server (neither is checked, nothing connects), they list the same
// templates (names, templates, MIME types, descriptions, annotations) and
// resources, offer the same capabilities (completion, subscriptions), and
// feed their subscriptions from the same kinds of change source.
func TestGoHostAndFileServeTheSameDefinitions(t *testing.T) {
	const nowhere = "postgres://docs@127.0.0.1:1/docs?connect_timeout=1"
	pool, err := pgxpool.New(t.Context(), nowhere) // connects lazily: never here
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	g := goHost(t, pool, "http://127.0.0.1:1", "acme-docs", "k", "s", false)
	f := fileHost(t, map[string]string{"DOCS_DATABASE_URL": nowhere, "DOCS_BUCKET": "acme-docs",
		"S3_ENDPOINT": "http://127.0.0.1:1", "S3_ACCESS_KEY": "k", "S3_SECRET_KEY": "s"}, false)
	gc, gt, gr, gch := surface(t, g)
	fc, ft, fr, fch := surface(t, f)
	same(t, "capabilities", gc, fc)
	same(t, "templates", gt, ft)
	same(t, "resources", gr, fr)
	same(t, "change sources", gch, fch)
	if gc.Resources == nil || !gc.Resources.Subscribe || gc.Completions == nil {
		t.Errorf("the Go host offers no subscriptions or completion: %s", js(gc))
	}
	if n := len(gt.([]*mcp.ResourceTemplate)); n != 10 {
		t.Errorf("%d templates, want 10 (3 documents, 6 report depths, the reports listing)", n)
	}
}

// TestGoHostAndFileReadAlike: on the same database and bucket the two
// hosts answer every request alike: a member's reads of a document, its
// file, a tenant's documents, a deep report and the reports listing; a
// non-member's refusals; completions; and a subscription told of the
// same change.
func TestGoHostAndFileReadAlike(t *testing.T) {
	url := harness.Postgres(t)
	s3env := harness.S3(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	admin, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	if _, err := admin.Exec(ctx, Schema); err != nil {
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
	put("tenants/acme/reports/r.csv", "a,b", "application/octet-stream")
	put("tenants/globex/reports/r.txt", "globex only", "text/plain")
	var id string
	if err := admin.QueryRow(ctx, `WITH t AS (INSERT INTO tenants VALUES ('acme', 'Acme'), ('globex', 'Globex')),
		m AS (INSERT INTO memberships VALUES ('alice', 'acme', 'reader'), ('bob', 'globex', 'reader'))
		INSERT INTO documents (tenant_id, title, body, content_type, s3_key, s3_etag)
		VALUES ('acme', 'Plan', 'the plan', 'text/plain', 'tenants/acme/files/plan.md', $1) RETURNING id::text`, etag).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `INSERT INTO documents (tenant_id, title, body) VALUES ('acme', 'Memo', 'a memo')`); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	hosts := []served{
		goHost(t, pool, s3env.Endpoint, s3env.Bucket, s3env.AccessKey, s3env.SecretKey, true),
		fileHost(t, map[string]string{"DOCS_DATABASE_URL": url, "DOCS_BUCKET": s3env.Bucket,
			"S3_ENDPOINT": s3env.Endpoint, "S3_ACCESS_KEY": s3env.AccessKey, "S3_SECRET_KEY": s3env.SecretKey}, true),
	}
	doc := "doc://tenants/acme/documents/" + id
	type answer struct {
		Result any
		Err    string
	}
	reads := func(cs *mcp.ClientSession) map[string]answer {
		out := map[string]answer{}
		for _, uri := range []string{doc, doc + "/object", "doc://tenants/acme/documents", "doc://tenants/globex/documents",
			"report://tenants/acme/reports/2026/q3/a/b/c/deep.md", "report://tenants/acme/reports/r.csv",
			"report://tenants/acme/reports", "report://tenants/globex/reports/r.txt", "report://tenants/globex/reports"} {
			res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			a := answer{Result: res}
			if err != nil {
				a = answer{Err: err.Error()}
			}
			out[uri] = a
		}
		for _, c := range []struct{ template, variable, prefix string }{
			{"doc://tenants/{tenant}/documents/{id}", "tenant", ""},
			{"doc://tenants/{tenant}/documents/{id}", "id", ""},
		} {
			res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: c.template},
				Argument: mcp.CompleteParamsArgument{Name: c.variable, Value: c.prefix},
				Context:  &mcp.CompleteContext{Arguments: map[string]string{"tenant": "acme"}}})
			a := answer{Result: res}
			if err != nil {
				a = answer{Err: err.Error()}
			}
			out["complete "+c.variable] = a
		}
		return out
	}
	var got [2]map[string]answer
	var told [2]chan string
	for i, h := range hosts {
		for _, p := range []string{"alice", "bob"} {
			for k, v := range reads(connect(t, h, p, nil)) {
				if got[i] == nil {
					got[i] = map[string]answer{}
				}
				got[i][p+" "+k] = v
			}
		}
		told[i] = make(chan string, 16)
		cs := connect(t, h, "alice", told[i])
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: doc}); err != nil {
			t.Fatalf("host %d: subscribe: %v", i, err)
		}
	}
	for k, g := range got[0] {
		same(t, k, g, got[1][k])
	}
	if a := got[0]["alice "+doc]; a.Err != "" || !strings.Contains(js(a.Result), "the plan") {
		t.Errorf("alice's read of her document: %s", js(a))
	}
	if a := got[0]["alice report://tenants/acme/reports"]; a.Err != "" || !strings.Contains(js(a.Result), "deep.md") {
		t.Errorf("alice's listing of her reports: %s", js(a))
	}
	if a := got[0]["alice complete id"]; a.Err != "" || !strings.Contains(js(a.Result), id) {
		t.Errorf("alice's completion of ids: %s", js(a))
	}
	// A change of the document reaches both hosts' subscribers: the
	// listeners are connected once a NOTIFY before this one got through.
	deadline := time.After(20 * time.Second)
	for i := range hosts {
		for n := 0; ; n++ {
			if _, err := admin.Exec(ctx, `UPDATE documents SET body = $2 WHERE id::text = $1`, id, fmt.Sprintf("edit %d", n)); err != nil {
				t.Fatal(err)
			}
			select {
			case uri := <-told[i]:
				if uri != doc {
					t.Fatalf("host %d told of %s, want %s", i, uri, doc)
				}
			case <-time.After(500 * time.Millisecond):
				continue
			case <-deadline:
				t.Fatalf("host %d: no resources/updated for the changed document", i)
			}
			break
		}
	}
}
