package integration

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/core"
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

// newStore returns a reference-schema store over pool, checked against
// the database.
func newStore(t testing.TB, pool postgres.DB, opts *postgres.Options) *postgres.Store {
	t.Helper()
	st, err := postgres.NewStore(pool, opts)
	if err != nil {
		t.Fatalf("NewStore: %v", err)
	}
	if err := st.Check(t.Context()); err != nil {
		t.Fatalf("Store.Check: %v", err)
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
		Discover: func(context.Context, core.ResourceDescription) error { return nil },
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

// objectsOf registers bucket as the reference store's object source.
func objectsOf(bucket *s3store.Bucket) core.Option {
	return core.WithObjectSource(postgres.ReferenceObjectSource, core.ItemReader(bucket.Read))
}

// as returns a context carrying principal.
func as(ctx context.Context, principal string) context.Context {
	return core.WithPrincipal(ctx, principal)
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
