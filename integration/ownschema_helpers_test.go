package integration

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/examples/documents"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// docsRig is the documents host of examples/documents on a fresh database
// and bucket: admin writes rows, root writes objects, wire counts what the
// store sends to S3, stmts counts the statements the store sends.
type docsRig struct {
	url   string
	admin *pgxpool.Pool
	pool  *pgxpool.Pool
	env   harness.S3Env
	root  *s3.Client
	wire  *wire
	files *s3store.Bucket
	res   *core.Resources
	stmts *stmtCounter
}

// stmtCounter counts the statements of the batches a pool sends.
type stmtCounter struct{ n atomic.Int64 }

func (c *stmtCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (c *stmtCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	c.n.Add(1)
}
func (c *stmtCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
func (c *stmtCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (c *stmtCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// newDocsDB returns a fresh database with the documents schema applied.
func newDocsDB(t testing.TB) (string, *pgxpool.Pool) {
	t.Helper()
	url := harness.Postgres(t)
	admin := newPool(t, url, nil)
	applySQL(t, admin, documents.Schema)
	return url, admin
}

// applySQL runs a script of several statements with the simple protocol.
func applySQL(t testing.TB, pool *pgxpool.Pool, script string) {
	t.Helper()
	conn, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Conn().PgConn().Exec(t.Context(), script).ReadAll(); err != nil {
		t.Fatalf("apply script: %v", err)
	}
}

func newDocsRig(t *testing.T) *docsRig {
	t.Helper()
	r := &docsRig{stmts: &stmtCounter{}, wire: &wire{}}
	r.url, r.admin = newDocsDB(t)
	r.pool = newPool(t, r.url, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = r.stmts })
	r.env = harness.S3(t)
	r.root = s3Client(t, r.env, nil)
	files, err := s3store.OpenBucket(t.Context(), s3Client(t, r.env, r.wire), r.env.Bucket, &s3store.Options{TypeByKey: true}) // as documents.Open asks
	if err != nil {
		t.Fatal(err)
	}
	r.files = files
	if r.res, err = documents.New(t.Context(), r.pool, files); err != nil {
		t.Fatalf("documents.New: %v", err)
	}
	r.exec(t, `INSERT INTO tenants (id, name) VALUES ('acme', 'Acme'), ('globex', 'Globex')`)
	r.exec(t, `INSERT INTO memberships (user_id, tenant_id) VALUES ('alice', 'acme'), ('bob', 'globex')`)
	return r
}

func (r *docsRig) exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	if _, err := r.admin.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("exec %q: %v", sql, err)
	}
}

// document inserts a document (with a file at key when key is not "") and
// returns its id.
func (r *docsRig) document(t testing.TB, tenant, title, body, key, ct string, file []byte) string {
	t.Helper()
	var etag *string
	var k *string
	if key != "" {
		obj := putObject(t, r.root, r.env.Bucket, key, ct, file)
		etag, k = &obj.ETag, &key
	}
	var id string
	if err := r.admin.QueryRow(context.Background(),
		`INSERT INTO documents (tenant_id, title, body, s3_key, s3_etag) VALUES ($1, $2, $3, $4, $5) RETURNING id::text`,
		tenant, title, body, k, etag).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

func docURI(tenant, id string) string { return "doc://tenants/" + tenant + "/documents/" + id }

// client connects an MCP client, through the mcpsdk adapter, to a server
// serving res as principal.
func connectAs(t *testing.T, res *core.Resources, principal string) *mcp.ClientSession {
	t.Helper()
	a := mcpsdk.New(res, &mcpsdk.Options{Completions: true,
		Principal: func(context.Context, mcp.Request) string { return principal }})
	server := a.NewServer(&mcp.Implementation{Name: "documents", Version: "v0"}, nil)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// readErr reads uri and returns the error as the client got it, as JSON.
func readErr(t *testing.T, cs *mcp.ClientSession, uri string) string {
	t.Helper()
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err == nil {
		t.Fatalf("read %s succeeded with %d contents, want an error", uri, len(res.Contents))
	}
	b, _ := json.Marshal(err)
	return err.Error() + " " + string(b)
}

// report returns the report JSON of a partial result's warning item.
func warningReport(t *testing.T, res *mcp.ReadResourceResult) string {
	t.Helper()
	if len(res.Contents) == 0 || !strings.HasPrefix(res.Contents[0].URI, "mcp-warning://") {
		t.Fatalf("result has no warning item first: %+v", res.Contents)
	}
	_, report, _ := strings.Cut(res.Contents[0].Text, "\n")
	return report
}
