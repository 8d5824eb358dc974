package integration

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// The store's transactions carry no BEGIN or COMMIT: pgx sends a batch as
// one pipeline ending in one Sync, and Postgres runs everything before a
// Sync as one implicit transaction. These tests prove, on the real
// Postgres and with raw pgx (the batch shape the store sends), what that
// relies on: set_config(..., true) in the batch's first statement lasts
// until the Sync and no further (the next use of the pooled connection
// sees none of it), transaction_read_only set that way makes the rest of
// the batch read-only, row-level security binds under the role and
// principal so set, and a failure ends the implicit transaction so the
// connection goes back to the pool idle.

// implicitSetup is the store's first statement (see stores/postgres).
const implicitSetup = `SELECT set_config('role', $1, true), set_config('mcp.principal', $2, true),
	set_config('statement_timeout', $3, true), set_config('transaction_read_only', 'on', true)`

const implicitProbe = `SELECT current_user::text, coalesce(current_setting('mcp.principal', true), ''),
	current_setting('statement_timeout'), current_setting('transaction_read_only'),
	(SELECT count(*) FROM mcpres.assets)::int`

type sessionState struct {
	user, principal, timeout, readOnly string
	assets                             int
}

func TestPGImplicitTransactionKeepsSettingsLocalReadOnlyAndUnderRLS(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	d.project(t, "p")
	d.textAsset(t, "p", "mine", "x")
	d.textAsset(t, "p", "other", "y")
	d.grant(t, "alice", "p", "mine")
	c := countedPool(t, d.url, 1) // one connection: every batch and query reuses it
	ctx := t.Context()

	probe := func(br pgx.BatchResults) (sessionState, error) {
		var s sessionState
		err := br.QueryRow().Scan(&s.user, &s.principal, &s.timeout, &s.readOnly, &s.assets)
		return s, err
	}
	outside := func() sessionState {
		t.Helper()
		var s sessionState
		if err := c.pool.QueryRow(ctx, implicitProbe).Scan(&s.user, &s.principal, &s.timeout, &s.readOnly, &s.assets); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := outside()
	if before.principal != "" || before.readOnly != "off" || before.user == postgres.ReaderRole {
		t.Fatalf("fresh connection: %+v", before)
	}

	// Inside: the batch's settings apply to its later statements.
	b := &pgx.Batch{}
	b.Queue(implicitSetup, postgres.ReaderRole, "alice'; --", "1234")
	b.Queue(implicitProbe)
	br := c.pool.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		t.Fatal(err)
	}
	in, err := probe(br)
	if err != nil {
		t.Fatal(err)
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
	want := sessionState{user: postgres.ReaderRole, principal: "alice'; --", timeout: "1234ms", readOnly: "on", assets: 0}
	if in != want {
		t.Fatalf("inside the batch: %+v, want %+v", in, want)
	}
	b = &pgx.Batch{}
	b.Queue(implicitSetup, postgres.ReaderRole, "alice", "1234")
	b.Queue(implicitProbe)
	br = c.pool.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		t.Fatal(err)
	}
	if in, err = probe(br); err != nil || in.assets != 1 {
		t.Fatalf("alice under RLS sees %d assets (%v), want 1", in.assets, err)
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}

	// After the Sync: the same (only) pooled connection has none of it.
	if after := outside(); after != before {
		t.Fatalf("after the batch the pooled connection has %+v, before it had %+v", after, before)
	}

	// Read-only: a write after the setup fails, and nothing is written.
	b = &pgx.Batch{}
	b.Queue(implicitSetup, postgres.ReaderRole, "alice", "1234")
	b.Queue(`WITH w AS (INSERT INTO mcpres.projects (id, title) VALUES ('written', 'w') RETURNING 1) SELECT count(*) FROM w`)
	br = c.pool.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		t.Fatal(err)
	}
	var n int
	err = br.QueryRow().Scan(&n)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "25006" { // read_only_sql_transaction
		t.Fatalf("a write in the batch: %v, want SQLSTATE 25006", err)
	}
	_ = br.Close()
	// Even as the superuser login (no role switch), read-only holds.
	b = &pgx.Batch{}
	b.Queue(`SELECT set_config('transaction_read_only', 'on', true)`)
	b.Queue(`INSERT INTO mcpres.projects (id, title) VALUES ('written', 'w')`)
	br = c.pool.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		t.Fatal(err)
	}
	if _, err := br.Exec(); !errors.As(err, &pe) || pe.Code != "25006" {
		t.Fatalf("a superuser write after transaction_read_only: %v, want SQLSTATE 25006", err)
	}
	_ = br.Close()
	var written int
	if err := d.admin.QueryRow(ctx, `SELECT count(*) FROM mcpres.projects WHERE id = 'written'`).Scan(&written); err != nil || written != 0 {
		t.Fatalf("rows written: %d (%v)", written, err)
	}
	// The failed batch left no transaction open and no setting behind.
	if after := outside(); after != before {
		t.Fatalf("after a failed batch the pooled connection has %+v, before it had %+v", after, before)
	}
}

// TestPGStoreReadsAreReadOnly proves, through the store's own batch, that a
// host statement cannot write: nextval, which no rollback undoes, is
// refused although the reader role may use the sequence.
func TestPGStoreReadsAreReadOnly(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	d.exec(t, `CREATE SEQUENCE mcpres.probe_seq`)
	d.exec(t, `GRANT USAGE, UPDATE ON SEQUENCE mcpres.probe_seq TO `+postgres.ReaderRole)
	c := countedPool(t, d.url, 1)
	r := pgGateway(t, []core.ResourceBinding{probeBinding(t, c.pool, `nextval('mcpres.probe_seq')::text`)}, pgAllowAll(nil))
	if res, err := r.Read(as(t.Context(), "alice"), "probe://x/seq"); err == nil {
		t.Fatalf("a read that writes succeeded: %v", res.Items())
	}
	var called bool
	if err := d.admin.QueryRow(t.Context(), `SELECT is_called FROM mcpres.probe_seq`).Scan(&called); err != nil || called {
		t.Fatalf("the sequence advanced (is_called %v, %v)", called, err)
	}
	// The control: the same statement as the same role outside a read-only
	// transaction does advance it, so read-only is what refused it above.
	tx, err := c.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context())
	if _, err := tx.Exec(t.Context(), `SELECT set_config('role', $1, true)`, postgres.ReaderRole); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), `SELECT nextval('mcpres.probe_seq')`); err != nil {
		t.Fatalf("nextval as %s in a read-write transaction: %v", postgres.ReaderRole, err)
	}
}
