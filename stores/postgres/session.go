package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/core"
)

// DB is what a store needs of PostgreSQL: sending one [pgx.Batch], which pgx
// writes as one round trip once the connection has prepared its statements.
// A *pgxpool.Pool satisfies it and is what hosts pass; a *pgx.Conn does too
// but allows no concurrent reads (after a failed batch the store rolls the
// connection's transaction back; a pool simply discards the connection). Do not pass a pgx.Tx: every store call
// runs in a transaction of its own (the implicit transaction of one batch).
//
// The pool must use an extended-protocol query mode (pgx's default): the
// constructors refuse a pool or connection configured for the simple
// protocol when they can see its configuration.
type DB interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// sessionOptions configure the session of a [Source] (see [SourceOptions],
// whose fields they are). A nil *sessionOptions selects every default.
type sessionOptions struct {
	// Caller returns the caller of the request in ctx; it is called on
	// every resolve, read and policy check. Nil means [core.CallerFrom].
	Caller func(context.Context) (core.Caller, error)
	// Role is the role every transaction switches to, with
	// set_config('role', $1, true), before its statement runs. Empty means
	// [ReaderRole]. The login role of the pool must be a member of it that
	// inherits its privileges (GRANT mcpres_reader TO app, the default
	// INHERIT) or a superuser: pgx prepares each statement as the login
	// role, before the batch switches roles, so the login needs USAGE on the
	// schema; row-level security still binds a non-superuser login that
	// owns no table.
	Role string
	// LoginRole keeps the pool's login role instead of switching to Role.
	// Use it only when the login role itself cannot bypass row-level
	// security (neither superuser, nor BYPASSRLS, nor owner of the tables).
	LoginRole bool
	// StatementTimeout bounds each statement when the context has no
	// deadline. Zero means [DefaultStatementTimeout]. With a deadline, the
	// statement timeout is the time left until it.
	StatementTimeout time.Duration
	// MaxPlanItems bounds the items a resolver plans; a bundle that would
	// plan more is cut and truncated (see [SourceOptions].MaxPlanItems).
	// Zero means [DefaultMaxPlanItems].
	MaxPlanItems int
}

const (
	// ReaderRole is the role of the reference schema that reads run as
	// (the migrations package creates it).
	ReaderRole = "mcpres_reader"
	// DefaultStatementTimeout bounds a statement whose context has no
	// deadline.
	DefaultStatementTimeout = 10 * time.Second
	// DefaultMaxPlanItems bounds the items a resolver plans by default
	// (the gateway's default MaxPlanItems).
	DefaultMaxPlanItems = 1024
)

// Errors of the store. Reads that fail with them are reported by the gateway
// as the item's read_failed, unless they also match [core.FailureUnavailable] or
// [context.DeadlineExceeded].
var (
	// ErrChanged means the item is still visible but no longer has the
	// planned version: the plan is stale and a fresh read may succeed.
	ErrChanged = errors.New("postgres: the item changed since it was planned")
	// ErrNotVisible is the private cause of the Unavailable error for an
	// item the principal cannot see (or read) now, or that does not exist.
	ErrNotVisible = errors.New("postgres: the item is not visible to the principal")
	// ErrConnection means the connection was lost or refused, or the server
	// is shutting down or terminated the backend; a fresh read may succeed.
	// Errors that match it are core.FailureOutage errors, which the gateway
	// reports as core.FailureOutage while planning or deciding.
	ErrConnection = errors.New("postgres: connection lost")
	// ErrStatementTimeout means the statement ran past its timeout. Errors
	// that match it also match context.DeadlineExceeded, so the gateway
	// reports the item's timeout.
	ErrStatementTimeout = errors.New("postgres: statement timeout")
	// ErrBadTarget means a target was not planned by this store.
	ErrBadTarget = errors.New("postgres: target was not planned by this store")
)

// session holds what every transaction of a store needs.
type session struct {
	db       DB
	from     func(context.Context) (core.Caller, error) // the request's caller, before core.CheckPrincipal
	role     string                                     // "" keeps the login role
	roleArg  any                                        // role, boxed once as the set-up's argument
	timeout  time.Duration
	maxItems int
	gate     *fairGate // nil unless db is a pool
	// broken is set while the source's last Prove failed: every
	// transaction then fails as an outage (see Source.Prove).
	broken atomic.Pointer[proofFailure]
}

func newSession(db DB, opts *sessionOptions) (*session, error) {
	if db == nil {
		return nil, core.ConfigPath{Field: "db"}.Reject("is nil", nil)
	}
	if err := checkQueryMode(db); err != nil {
		return nil, err
	}
	var o sessionOptions
	if opts != nil {
		o = *opts
	}
	s := &session{db: db, from: o.Caller, role: o.Role, timeout: o.StatementTimeout, maxItems: o.MaxPlanItems}
	if s.from == nil {
		s.from = core.CallerFrom
	}
	if s.role == "" {
		s.role = ReaderRole
	}
	if o.LoginRole {
		s.role = ""
	}
	s.roleArg = s.role
	if p, ok := db.(interface{ Config() *pgxpool.Config }); ok {
		s.gate = newFairGate(int(p.Config().MaxConns))
	}
	// NewSource refused negative ones (CheckSource).
	if s.timeout <= 0 {
		s.timeout = DefaultStatementTimeout
	}
	if s.maxItems <= 0 {
		s.maxItems = DefaultMaxPlanItems
	}
	return s, nil
}

// checkQueryMode refuses a pool or connection that would send batches with
// the simple protocol, where pgx interpolates arguments into the SQL text.
func checkQueryMode(db DB) error {
	var mode pgx.QueryExecMode
	switch c := db.(type) {
	case interface{ Config() *pgxpool.Config }:
		mode = c.Config().ConnConfig.DefaultQueryExecMode
	case interface{ Config() *pgx.ConnConfig }:
		mode = c.Config().DefaultQueryExecMode
	default:
		return nil
	}
	if mode == pgx.QueryExecModeSimpleProtocol {
		return core.ConfigPath{Field: "db"}.Reject("uses the simple protocol; stores bind arguments with the extended protocol only", nil)
	}
	return nil
}

// caller returns the request's caller; one whose principal
// core.CheckPrincipal refuses is Unavailable.
func (s *session) caller(ctx context.Context) (core.Caller, error) {
	c, err := s.from(ctx)
	if err != nil {
		return core.Caller{}, err
	}
	if err := core.CheckPrincipal(c.Principal); err != nil {
		return core.Caller{}, core.NewFailure(core.FailureUnavailable, err)
	}
	return c, nil
}

// principal returns the principal of the request's caller (see caller).
func (s *session) principal(ctx context.Context) (string, error) {
	c, err := s.caller(ctx)
	return c.Principal, err
}

// The fixed statements of every transaction. Arguments are always bound.
// There is no BEGIN or COMMIT: pgx sends a batch as one pipeline ending in
// one Sync, and Postgres runs everything up to a Sync as one implicit
// transaction, so settings made with set_config(..., true) in the first
// statement hold for the store's statement and end at the Sync, as after a
// COMMIT; transaction_read_only set there makes the rest read-only (setting
// it on is allowed at any point of a transaction). A failed statement ends
// the implicit transaction too: the connection is idle again after the
// batch. integration/pgstore_implicit_test.go proves each of these on the
// real server.
//
// The set-up returns one row of no columns: the values set_config returns
// (the principal, up to 64 KiB of claims) are not sent back. PostgreSQL
// keeps a volatile function of a subquery's select list even when the
// outer query uses none of its columns.
//
// A statement whose plan must not be made for its arguments each time (a
// bodies statement: PostgreSQL keeps planning a statement over an array
// parameter for each call when its actual length is below its default
// estimate) is sent after the generic form of the set-up, which also sets
// plan_cache_mode to force_generic_plan for the transaction.
var sqlSetups = [2][2]string{ // [role switched][generic plan]
	{setupSQL(false, false), setupSQL(false, true)},
	{setupSQL(true, false), setupSQL(true, true)},
}

// setupSQL returns the set-up statement, with the role switch (its $1)
// or without, in its plain or its generic form.
func setupSQL(role, generic bool) string {
	n := 0
	arg := func() string { n++; return "$" + strconv.Itoa(n) }
	var calls []string
	if role {
		calls = append(calls, "set_config('role', "+arg()+", true)")
	}
	calls = append(calls, "set_config('mcp.principal', "+arg()+", true)", "set_config('mcp.claims', "+arg()+", true)",
		"set_config('statement_timeout', "+arg()+", true)", "set_config('transaction_read_only', 'on', true)")
	if generic {
		calls = append(calls, "set_config('plan_cache_mode', 'force_generic_plan', true)")
	}
	return "SELECT FROM (SELECT " + strings.Join(calls, ", ") + ") AS setup"
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// txBatch is the batch of one transaction, allocated at once: the set-up
// statement, the store's statement and the set-up's arguments.
type txBatch struct {
	b     pgx.Batch
	qs    [2]*pgx.QueuedQuery
	q     [2]pgx.QueuedQuery
	setup [4]any
}

// query runs sql with args as the one statement of a read-only implicit
// transaction, sent as one round trip (one batch), and calls each for every
// row it returns, in order, stopping at the first error. The transaction
// runs as the store's role with the request's principal set
// transaction-locally and a statement timeout taken from ctx's deadline.
// It returns classified errors. Every read of the stores goes through it.
func (s *session) query(ctx context.Context, sql string, args []any, each func(pgx.Rows) error) error {
	return s.queryPlanned(ctx, false, sql, args, each)
}

// queryPlanned is query, with the statement run on its generic plan when
// generic is set.
func (s *session) queryPlanned(ctx context.Context, generic bool, sql string, args []any, each func(pgx.Rows) error) error {
	t, err := s.begin(ctx, generic)
	if err != nil {
		return err
	}
	t.q[1] = pgx.QueuedQuery{SQL: sql, Arguments: args}
	t.b.QueuedQueries = append(t.b.QueuedQueries, &t.q[1])
	return s.run(ctx, &t.b, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := each(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	})
}

// begin returns a batch whose first statement makes the implicit
// transaction read-only, switches to the store's role, sets the principal,
// the claims (mcp.claims) and the statement timeout; query queues its statement after it.
func (s *session) begin(ctx context.Context, generic bool) (*txBatch, error) {
	if err := s.brokenErr(); err != nil {
		return nil, err
	}
	c, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	p := c.Principal
	timeout := s.timeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return nil, fmt.Errorf("postgres: %w", context.DeadlineExceeded)
		}
	}
	claims, err := claimsText(c.Claims)
	if err != nil {
		return nil, err
	}
	t := &txBatch{}
	t.b.QueuedQueries = t.qs[:0]
	ms := strconv.FormatInt(max(1, int64((timeout+time.Millisecond-1)/time.Millisecond)), 10)
	n := 3
	t.setup = [4]any{p, claims, ms}
	if s.role != "" {
		t.setup, n = [4]any{s.roleArg, p, claims, ms}, 4
	}
	t.q[0] = pgx.QueuedQuery{SQL: sqlSetups[b2i(s.role != "")][b2i(generic)], Arguments: t.setup[:n]}
	t.b.QueuedQueries = append(t.b.QueuedQueries, &t.q[0])
	return t, nil
}

// run sends b as one round trip (one implicit transaction) and lets scan
// read the result of the one statement query queued. It returns
// classified errors.
func (s *session) run(ctx context.Context, b *pgx.Batch, scan func(br pgx.BatchResults) error) error {
	if s.gate != nil {
		if err := s.gate.enter(ctx, b.QueuedQueries[len(b.QueuedQueries)-1].SQL); err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
		defer s.gate.leave()
	}
	br := s.db.SendBatch(ctx, b)
	err := func() error {
		if _, err := br.Exec(); err != nil { // set_config
			return err
		}
		return scan(br)
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.abandon(ctx)
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("postgres: %w: %w", ctx.Err(), err)
	}
	return classify(err)
}

// abandon rolls back a transaction that a failed batch left open on a
// single *pgx.Conn (a pool discards such a connection by itself), so that
// the next call does not run inside an aborted transaction. The store's
// batches end in a Sync, which ends their implicit transaction, so this
// only acts when a batch was cut off before its Sync was processed.
func (s *session) abandon(ctx context.Context) {
	c, ok := s.db.(*pgx.Conn)
	if !ok || c.IsClosed() || c.PgConn().TxStatus() == 'I' {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := c.Exec(rctx, "ROLLBACK"); err != nil {
		_ = c.Close(rctx)
	}
}
