package integration

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/config"
	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/migrations"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// pgWire counts, at the connections of one pool, the bytes received and the
// round trips: each write that follows a read starts a new one.
type pgWire struct {
	received   atomic.Int64
	roundTrips atomic.Int64
}

type pgCountingConn struct {
	net.Conn
	w         *pgWire
	mu        sync.Mutex
	afterRead bool
}

func (c *pgCountingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.w.received.Add(int64(n))
	c.mu.Lock()
	c.afterRead = true
	c.mu.Unlock()
	return n, err
}

func (c *pgCountingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.afterRead {
		c.w.roundTrips.Add(1)
		c.afterRead = false
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// tracer counts what pgx sends: batches, plain queries and prepares.
type tracer struct {
	batches, batchQueries, queries, prepares atomic.Int64
}

func (tr *tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	tr.queries.Add(1)
	return ctx
}
func (tr *tracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (tr *tracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	tr.batches.Add(1)
	return ctx
}
func (tr *tracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	tr.batchQueries.Add(1)
}
func (tr *tracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
func (tr *tracer) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	tr.prepares.Add(1)
	return ctx
}
func (tr *tracer) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

// counted is a pool whose connections are counted and whose pgx calls are
// traced. It never pings on acquire, so every round trip is the caller's.
type counted struct {
	pool   *pgxpool.Pool
	wire   *pgWire
	tracer *tracer
}

func countedPool(t testing.TB, dbURL string, maxConns int32) *counted {
	t.Helper()
	c := &counted{wire: &pgWire{}, tracer: &tracer{}}
	c.pool = newPool(t, dbURL, func(cfg *pgxpool.Config) {
		if maxConns > 0 {
			cfg.MaxConns = maxConns
		}
		cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
		cfg.ConnConfig.Tracer = c.tracer
		dialer := &net.Dialer{}
		cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &pgCountingConn{Conn: conn, w: c.wire}, nil
		}
	})
	return c
}

// refOptions are what the tests vary of the reference schema's source.
type refOptions struct {
	// Objects is the bucket of the assets' objects; nil serves the rows
	// alone (as serve --postgres without --bucket). A gateway over the
	// store registers it too (objectsOf).
	Objects          *s3store.Bucket
	LoginRole        bool
	StatementTimeout time.Duration
	Caller           func(context.Context) (core.Caller, error)
	// Keyed serves the bindings as a resources file does, under the
	// store's policy by its key (core.ResourcePolicy.Key): their reads
	// take its recheck with the bodies. Unset, the policy is the store's
	// callbacks without the key, as a gateway with another policy has:
	// every recheck is a statement of its own.
	Keyed bool
}

// refStore is the reference schema as the tests serve it in process: one
// postgres.Source over the test's pool with the bindings and the policy of
// the embedded reference file (migrations.ResourcesFile, the only copy of
// its statements), built as config.File.Open builds them.
type refStore struct {
	src      *postgres.Source
	bindings []core.ResourceBinding
	byName   map[string]core.ResourceBinding
	policy   core.ResourcePolicy
}

// referenceFile is the embedded reference file, its sources' settings
// filled with placeholders (the tests bring their own pools and buckets).
func referenceFile() (*config.File, error) {
	return config.Parse(migrations.ResourcesFileName, migrations.ResourcesFile, &config.Options{
		LookupEnv: func(name string) (string, bool) {
			return map[string]string{"MCPRES_DATABASE_URL": "postgres://u@127.0.0.1:1/db", "MCPRES_BUCKET": "assets",
				"MCPRES_BUCKET_ENDPOINT": "http://127.0.0.1:1"}[name], true
		}})
}

// newRefStore returns the reference schema's source over db, unchecked.
func newRefStore(db postgres.DB, opts *refOptions) (*refStore, error) {
	var o refOptions
	if opts != nil {
		o = *opts
	}
	f, err := referenceFile()
	if err != nil {
		return nil, err
	}
	so := postgres.SourceOptions{Name: "postgres", LoginRole: o.LoginRole, Caller: o.Caller, StatementTimeout: o.StatementTimeout}
	if !o.LoginRole {
		so.Role = postgres.ReaderRole
	}
	if o.Objects != nil {
		so.Objects = map[string]string{referenceObjectSource: o.Objects.Name()}
	}
	src, err := postgres.NewSource(db, so)
	if err != nil {
		return nil, err
	}
	st := &refStore{src: src, byName: map[string]core.ResourceBinding{}}
	for _, r := range f.Resources {
		def := core.ResourceDefinition{Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType, URI: r.URI, URITemplate: r.Template}
		sb := postgres.SQLBinding{Definition: def, Plan: r.Plan, Bundle: r.Bundle, ItemURI: r.ItemURI, Anchored: r.Anchored,
			Listen: r.Listen, Body: r.Body, Complete: r.Completion}
		if ob := r.Object; ob != nil {
			switch objectOnly := r.Plan != "" && r.Body == ""; {
			case o.Objects == nil && objectOnly:
				continue // the object alone, without a bucket: not served
			case o.Objects == nil:
				sb.ObjectURI = ob.URI // a source without objects: the rows alone
			default:
				sb.ObjectSource, sb.ObjectURI = ob.Source, ob.URI
			}
		}
		b, err := src.Binding(sb)
		if err != nil {
			return nil, err
		}
		st.bindings = append(st.bindings, b)
		st.byName[r.Name] = b
	}
	if st.policy, err = src.Policy(f.Policy.Decide); err != nil {
		return nil, err
	}
	if !o.Keyed {
		st.policy.Key = nil
	}
	return st, nil
}

// Check is the source's Check.
func (s *refStore) Check(ctx context.Context) error { return s.src.Check(ctx) }

// Bindings are the file's bindings, in its order.
func (s *refStore) Bindings() []core.ResourceBinding { return s.bindings }

// Policy is the file's policy, the grants table.
func (s *refStore) Policy() core.ResourcePolicy { return s.policy }

// Listener is the source's listener of the key notifications.
func (s *refStore) Listener(cfg *pgx.ConnConfig, opts *postgres.ListenerOptions) (*postgres.Listener, error) {
	return s.src.Listener(cfg, opts)
}

// BodyBinding, ProjectBinding and ObjectBinding are the bindings of
// asset-body, project and asset-object.
func (s *refStore) BodyBinding() core.ResourceBinding    { return s.byName["asset-body"] }
func (s *refStore) ProjectBinding() core.ResourceBinding { return s.byName["project"] }
func (s *refStore) ObjectBinding() core.ResourceBinding  { return s.byName["asset-object"] }

// Reader reads any target the store's bindings plan, through the binding
// that planned it (each refuses the others' with ErrBadTarget, sending
// nothing).
func (s *refStore) Reader() core.Reader {
	return core.ItemReader(func(ctx context.Context, it core.ReadItem) (core.ResourcePayload, error) {
		for _, b := range s.bindings {
			out, err := b.Reader.Read(ctx, core.ReadRequest{Items: []core.ReadItem{it}, Budget: it.Limit})
			switch {
			case err != nil && !errors.Is(err, postgres.ErrBadTarget):
				return core.ResourcePayload{}, err
			case err == nil && len(out) == 1 && !errors.Is(out[0].Err, postgres.ErrBadTarget):
				return out[0].Payload, out[0].Err
			}
		}
		return core.ResourcePayload{}, postgres.ErrBadTarget
	})
}

// newStore returns the reference schema's source over pool, checked
// against the database.
func newStore(t testing.TB, pool postgres.DB, opts *refOptions) *refStore {
	t.Helper()
	st, err := newRefStore(pool, opts)
	if err != nil {
		t.Fatalf("the reference file's source: %v", err)
	}
	if err := st.Check(t.Context()); err != nil {
		t.Fatalf("Check: %v", err)
	}
	return st
}

// hostBinding returns b over a Source of db of its own that runs as
// mcpres_reader unless opts names another role, checked against the
// database.
func hostBinding(t testing.TB, db postgres.DB, opts postgres.SourceOptions, b postgres.SQLBinding) core.ResourceBinding {
	t.Helper()
	if opts.Role == "" && !opts.LoginRole {
		opts.Role = postgres.ReaderRole
	}
	src, err := postgres.NewSource(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	binding, err := src.Binding(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Check(t.Context()); err != nil {
		t.Fatalf("Source.Check: %v", err)
	}
	return binding
}

// bodiesBundle serves, over the reference schema on db, the bundle
// body://project/{project} of the project's asset bodies, which its bundle
// statement plans without their content, so the store's bodies statement
// reads them (the reference file's own bundles plan their small items
// with their content), under the reference file's grants policy. With
// recheck the policy keeps its key, and its recheck is folded into the
// bodies statement, as a resources file serves it; without, it is the
// policy's callbacks without the key, as another policy is.
func bodiesBundle(t testing.TB, db postgres.DB, recheck bool) (core.ResourceBinding, core.ResourcePolicy) {
	t.Helper()
	f, err := referenceFile()
	if err != nil {
		t.Fatal(err)
	}
	src, err := postgres.NewSource(db, postgres.SourceOptions{Name: "bodies", Role: postgres.ReaderRole})
	if err != nil {
		t.Fatal(err)
	}
	var body string
	for _, r := range f.Resources {
		if r.Name == "asset-body" {
			body = r.Body
		}
	}
	b, err := src.Binding(postgres.SQLBinding{
		Definition: core.ResourceDefinition{URITemplate: "body://project/{project}", Name: "bodies"},
		Bundle: `SELECT a.project_id || '/' || a.id AS key, a.version, a.mime_type AS mime, a.body_is_text AS text,
			a.project_id, a.id, gf.visible, gf.read, gf.disclose
			FROM mcpres.assets a
			CROSS JOIN LATERAL (
			  SELECT coalesce(bool_or(g.can_discover OR g.can_read), false) AS visible,
			         coalesce(bool_or(g.can_read), false) AS read,
			         coalesce(bool_or(g.disclose_issue_uri), false) AS disclose
			  FROM mcpres.grants g
			  WHERE g.project_id = a.project_id AND (g.asset_id IS NULL OR g.asset_id = a.id)) gf
			WHERE a.project_id = $project AND a.body IS NOT NULL ORDER BY a.id`,
		ItemURI: "asset://project/{project_id}/asset/{id}/body",
		Body:    body,
	})
	if err != nil {
		t.Fatal(err)
	}
	policy, err := src.Policy(f.Policy.Decide)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Check(t.Context()); err != nil {
		t.Fatalf("Source.Check: %v", err)
	}
	if !recheck {
		policy.Key = nil
	}
	return b, policy
}

// planned returns the first item a read of uri would read, as the gateway
// r plans and authorizes it for ctx (Resources.Authorize: no body read).
func planned(t testing.TB, ctx context.Context, r *core.Resources, uri string) core.ResourceTarget {
	t.Helper()
	a, err := r.Authorize(ctx, uri)
	if err != nil || a.Len() == 0 {
		t.Fatalf("plan %s: %v (%d items)", uri, err, a.Len())
	}
	return a.Item(0)
}

// allowAll is a gateway policy that allows everything; beforeRead, when not
// nil, runs on every Read check (after planning, before any body read, and
// again after the reads).
func pgAllowAll(beforeRead func(ctx context.Context, t core.ResourceTarget)) core.ResourcePolicy {
	return core.PerTarget(core.TargetPolicy{
		Discover: func(context.Context, core.ResourceDefinition) error { return nil },
		Visibility: func(context.Context, core.ResourceTarget) (core.Visibility, error) {
			return core.Visibility{Visible: true, DiscloseIssueURI: true}, nil
		},
		Read: func(ctx context.Context, t core.ResourceTarget) error {
			if beforeRead != nil {
				beforeRead(ctx, t)
			}
			return nil
		},
	})
}

// gateway registers bindings under policy.
func pgGateway(t testing.TB, bindings []core.ResourceBinding, policy core.ResourcePolicy, opts ...core.Option) *core.Resources {
	t.Helper()
	r, err := core.NewResources(bindings, policy, opts...)
	if err != nil {
		t.Fatalf("NewResources: %v", err)
	}
	return r
}

// referenceObjectSource is the name of the reference file's S3 source,
// which its asset rows' objects come from.
const referenceObjectSource = "s3"

// objectsOf registers bucket as the reference store's object source.
func objectsOf(bucket *s3store.Bucket) core.Option {
	return core.WithObjectSource(referenceObjectSource, core.ItemReader(bucket.Read))
}

// as returns a context carrying principal.
func as(ctx context.Context, principal string) context.Context {
	return core.WithCaller(ctx, core.Caller{Principal: principal})
}

// itemTexts returns the URI and text of every application item of r.
func itemTexts(r *core.ResourceResult) map[string]string {
	out := map[string]string{}
	for _, it := range r.Items() {
		if it.IsBlob() {
			out[it.URI()] = string(it.Blob())
		} else {
			out[it.URI()] = it.Text()
		}
	}
	return out
}

// issueCodes returns the issue code of every disclosed issue URI of r.
func issueCodes(r *core.ResourceResult) map[string]core.IssueCode {
	out := map[string]core.IssueCode{}
	for _, is := range r.Issues() {
		out[is.ResourceURI()] = is.Code()
	}
	return out
}
