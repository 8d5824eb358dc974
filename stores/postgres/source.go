package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/core"
)

// SourceOptions configure a [Source]. Unlike [Options], nothing defaults
// to the reference schema: Role is required unless LoginRole is set.
type SourceOptions struct {
	// Name names the source in targets, errors and [Source.Policy]; empty
	// means "postgres". Give each database of a host its own name.
	Name string
	// Role is the role every statement runs as, switched to with
	// set_config('role', $1, true) in the statement's own implicit
	// transaction. It is required unless LoginRole is set. [Source.Check]
	// verifies that it exists, that the pool's login role is a member of
	// it, and that it is neither a superuser nor BYPASSRLS.
	Role string
	// LoginRole keeps the pool's login role instead of switching roles;
	// [Source.Check] then verifies that the login role is neither a
	// superuser nor BYPASSRLS.
	LoginRole bool
	// Caller returns the caller of the request in ctx: its principal is
	// set as mcp.principal for every statement and bound as $principal
	// where a statement names it, its claims are set as mcp.claims. Nil
	// means [core.CallerFrom].
	Caller func(context.Context) (core.Caller, error)
	// StatementTimeout bounds each statement when the context has no
	// deadline, and each statement of [Source.Check] (the check ends when
	// the database answers none for that long). Zero means
	// [DefaultStatementTimeout].
	StatementTimeout time.Duration
	// MaxPlanItems bounds the items one plan or bundle statement plans (a
	// row with an object item is two). A bundle with more is cut there,
	// after the last row whose items fit, and its plan is truncated
	// (core.ResourceReadPlan.Truncated): the read is partial, with a
	// budget_exceeded issue, never silently short; a plan statement that
	// returns more rows fails. Zero means [DefaultMaxPlanItems]; give at
	// most the gateway's MaxPlanItems, which refuses a longer plan.
	MaxPlanItems int
	// Objects are the object sources that plan rows may reference, by the
	// name a row's object_source column (or a binding's
	// [SQLBinding].ObjectSource) gives, each with the bucket it names (""
	// for any): a row whose object_bucket names another bucket has no
	// object item. An object item is a target with a [core.ObjectRef]
	// naming the source; the host registers the source's reader (package
	// s3store's *Bucket) with core.WithObjectSource under the same name.
	// Without any, every row stands alone (see [SQLBinding]).
	Objects map[string]string
	// UnusableGrantRows, when set, is told when a key grant
	// ([Source.KeyGrant], [Source.PrefixGrant]) refused a key while its
	// statement returned rows that can never grant one (a NULL or empty
	// key, a prefix that is NULL, empty or not ending in '/'), with the
	// grant's binding and how many such rows there were, so that a host
	// can say why a legitimate key is refused. It is called on the read's
	// goroutine and must not block.
	UnusableGrantRows func(binding string, rows int64)
	// Exempt lets the relations and functions it names through the proof
	// that storage enforces access (see [Source.Check]), each by its
	// qualified name as the catalog spells it (public.tenants,
	// app.current_tenant) with the reason it may be read without
	// row-level security: a lookup table of tenant names, say. An exempt
	// view or function is not walked into, and an exempt relation makes
	// no statement depend on the caller. A name that is no relation or
	// function of the database is refused by Check.
	Exempt map[string]string
	// Logger receives the one ERROR line of a source whose host never
	// called [Source.Check] and whose check at first use failed (see
	// [Source]). Nil means slog.Default(), so that the line is seen.
	Logger *slog.Logger
	// Standbys are hot standbys of the database (streaming replicas, read
	// replicas of a managed PostgreSQL), usually a *pgxpool.Pool each that
	// the host opens on a standby's URL; each gets its own session under
	// the same Role, LoginRole, Principal, claims and StatementTimeout as
	// the primary. Only the bodies of the bindings' reads go to them, and
	// only while the policy in force is a decide statement of this source
	// ([Source.Policy]): plans, decide statements, grants, listing,
	// completion, the recheck and LISTEN stay on the primary. A body is
	// pinned to its planned version: one a standby does not hold at that
	// version is read on the primary within the same read, so an old
	// version is never served. A standby whose replay lags more than
	// StandbyMaxLag, or that is down, is skipped; [Source.Check] runs the
	// role check on each it reaches ([Source.StandbyStats] reports them).
	Standbys []DB
	// StandbyMaxLag is the replay lag past which a standby is not used
	// until it catches up. Zero means [DefaultStandbyMaxLag].
	StandbyMaxLag time.Duration
	// StandbyProbeInterval is how often, while reads arrive, each
	// standby's lag is probed (in the background, each probe bounded in
	// time). Zero means [DefaultStandbyProbeInterval].
	StandbyProbeInterval time.Duration
}

// Source is one PostgreSQL database that a host's own SQL statements serve:
// bindings ([Source.Binding]) and a policy ([Source.Policy]) defined by
// statements, every one of which runs as the configured role with the
// request's principal set, in one read-only implicit transaction sent as
// one round trip (see the package documentation).
//
// Statements are checked against the database by [Source.Check], which
// prepares each one, checks its parameters and result columns, and checks
// the role. A statement serves no request before a check has accepted it.
// A host calls Check at start-up, to refuse a mistake before it serves;
// a host that never calls it is not left serving nothing: the first read
// through a statement no check has accepted runs the check itself (one at
// a time: concurrent reads wait for it, each bounded by its own context,
// and the check by that context and 10 seconds), and the read is served
// when it passes. When it fails, the source writes one ERROR line to
// SourceOptions.Logger naming the source and why, and its reads answer
// with the typed outage (core.FailureOutage, wrapping [ErrNotChecked] and the
// reason) at once; a read tries the check again 5 seconds after the last
// failure. Once the host has called Check, reads never check the whole
// source: while Check runs, a read through a statement it has not accepted
// yet checks and proves that statement first (with its binding's others
// and the policies'), on another connection of the pool, and is served
// once they pass ([Source.CheckStarted]; a
// statement found wrong fails the read as the typed outage, and Check
// reports it); once Check has returned, a statement it did not accept
// fails with [ErrNotChecked]. A Source is safe for concurrent use.
type Source struct {
	s       *session
	name    string
	objects map[string]string // object source name -> bucket ("" any)
	// unusable is SourceOptions.UnusableGrantRows.
	unusable func(binding string, rows int64)

	mu        sync.Mutex
	stmts     []*statement
	byBinding map[string][]*statement // the host statements of stmts, by path.Binding
	listen    map[string]string       // binding name -> channel
	// bodied are the bindings with a body statement, policies the
	// policies made by [Source.Policy]: each binding has a bodies statement
	// with each policy's recheck folded in (see [Source.fold]).
	bodied   []*sqlBinding
	policies []*sqlPolicy

	exempt  map[string]string // SourceOptions.Exempt
	proveMu sync.Mutex        // one Check or Prove at a time
	first   firstUse          // the check at first use, for a host that never calls Check
	ahead   checkAhead        // a read's own statements, checked while Check runs
	// standbys are SourceOptions.Standbys; nil without any.
	standbys *standbys
}

// fold registers the statement that reads sb's bodies with p's recheck
// folded in, which sb's reads send when the gateway names p as the policy
// in force (see [sqlBinding.Read]), unless p's statement binds the
// request's captures, which a reader is not given. src.mu is held.
func (src *Source) fold(sb *sqlBinding, p *sqlPolicy) {
	if p.st.named.paramIndex("captures") != 0 {
		return
	}
	st := &statement{kind: "body", path: sb.body.path, named: sb.body.named, derived: true, callerBound: sb.body.callerBound}
	st.prepare = func(*pgconn.StatementDescription) (*prepared, error) { return sb.prepareFolded(p) }
	sb.folded.Store(p, st)
	src.stmts = append(src.stmts, st)
}

// own returns key as a policy of this source, if it is one.
func (src *Source) own(key any) (*sqlPolicy, bool) {
	p, ok := key.(*sqlPolicy)
	return p, ok && p.src == src
}

// watch records that the binding name's changes arrive on channel, if any.
func (src *Source) watch(name, channel string) {
	if channel == "" {
		return
	}
	src.mu.Lock()
	if src.listen == nil {
		src.listen = map[string]string{}
	}
	src.listen[name] = channel
	src.mu.Unlock()
}

// ErrNotChecked is the cause of a resolve, read, policy decision or
// completion through a statement that no check has accepted (see
// [Source]).
var ErrNotChecked = errors.New("postgres: the statement has not been checked; call Source.Check")

// NewSource returns the source of db. It makes no request: [Source.Check]
// does. db is usually a *pgxpool.Pool, which Check can prepare statements
// on; a *pgx.Conn works too. Errors are *core.ConfigError values.
func NewSource(db DB, opts SourceOptions) (*Source, error) {
	if opts.Name == "" {
		opts.Name = "postgres"
	}
	if err := CheckSource(opts); err != nil {
		return nil, err
	}
	so := &sessionOptions{Caller: opts.Caller, Role: opts.Role, LoginRole: opts.LoginRole,
		StatementTimeout: opts.StatementTimeout, MaxPlanItems: opts.MaxPlanItems}
	s, err := newSession(db, so)
	if err != nil {
		var ce *core.ConfigError
		if errors.As(err, &ce) {
			ce.Path.Source = opts.Name
		}
		return nil, err
	}
	objs := make(map[string]string, len(opts.Objects))
	for name, bucket := range opts.Objects {
		if name == "" {
			return nil, core.ConfigPath{Source: opts.Name, Field: "Objects", Key: name}.Reject("an object source needs a name", nil)
		}
		objs[name] = bucket
	}
	src := &Source{s: s, name: opts.Name, objects: objs, unusable: opts.UnusableGrantRows, exempt: maps.Clone(opts.Exempt),
		ahead: checkAhead{begun: make(chan struct{})}}
	src.first.log = cmp.Or(opts.Logger, slog.Default())
	if len(opts.Standbys) > 0 {
		if src.standbys, err = newStandbys(opts, so); err != nil {
			return nil, err
		}
	}
	return src, nil
}

// CheckSource checks opts as NewSource does, without a database: Role is
// required unless LoginRole is set, and is a role name, 1 to 63 bytes of
// UTF-8 without control characters; StatementTimeout and MaxPlanItems are
// not negative (zero picks the default), nor are StandbyMaxLag and
// StandbyProbeInterval; each Exempt name is qualified
// (schema.name) and has a reason.
func CheckSource(opts SourceOptions) error {
	for _, name := range slices.Sorted(maps.Keys(opts.Exempt)) {
		schema, rel, ok := strings.Cut(name, ".")
		switch {
		case !ok || schema == "" || rel == "" || strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f }):
			return core.ConfigPath{Source: opts.Name, Field: "Exempt", Key: name}.Reject("is not a qualified name such as public.tenants (schema.table, schema.view or schema.function)", nil)
		case strings.TrimSpace(opts.Exempt[name]) == "":
			return core.ConfigPath{Source: opts.Name, Field: "Exempt", Key: name}.Reject("needs a reason: say why it may be read without row-level security", nil)
		}
	}
	switch {
	case opts.StatementTimeout < 0:
		return core.ConfigPath{Source: opts.Name, Field: "StatementTimeout"}.Reject("must not be negative", nil)
	case opts.MaxPlanItems < 0:
		return core.ConfigPath{Source: opts.Name, Field: "MaxPlanItems"}.Reject("must not be negative", nil)
	case opts.StandbyMaxLag < 0:
		return core.ConfigPath{Source: opts.Name, Field: "StandbyMaxLag"}.Reject("must not be negative", nil)
	case opts.StandbyProbeInterval < 0:
		return core.ConfigPath{Source: opts.Name, Field: "StandbyProbeInterval"}.Reject("must not be negative", nil)
	case opts.LoginRole:
		return nil
	case opts.Role == "":
		return core.ConfigPath{Source: opts.Name, Field: "Role"}.Reject("is required: the role every statement runs as, of which the login is a member (or run them as the login role)", nil)
	case len(opts.Role) > 63 || !utf8.ValidString(opts.Role) || strings.ContainsFunc(opts.Role, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return core.ConfigPath{Source: opts.Name, Field: "Role"}.Reject("a role name is 1 to 63 bytes of UTF-8 without control characters", nil)
	}
	return nil
}

// Name returns the source's name.
func (src *Source) Name() string { return src.name }

// statement is one host statement of a source: its rewritten SQL, what it
// must return, and, once Check accepted it, the statement the store sends.
type statement struct {
	kind  string // "plan", "body", "complete \"id\"", "decide"
	path  core.ConfigPath
	named namedSQL
	// prepare checks the description of the host's statement and returns
	// the statement the store sends and the columns it returns.
	prepare func(desc *pgconn.StatementDescription) (*prepared, error)
	ready   atomic.Pointer[prepared]
	// derived is a statement built from statements checked before it
	// (their checked forms): Check prepares no host SQL of its own, and
	// prepare gets a nil description.
	derived bool
	// callerBound says the statement's answer must depend on the caller
	// (a grant, or a statement of a binding that is not Public).
	callerBound bool
	// proof is what the last proof found for the statement.
	proof atomic.Pointer[stmtProof]
}

// prepared is a checked statement as the store sends it.
type prepared struct {
	sql  string
	cols []column // the host statement's columns the store selects, in order
	has  map[string]bool
	// bodies is a body statement's bodies statement, whose SQL sql is.
	bodies *bodiesStatement
	// sentReason says why sql may not prepare when the host's statement
	// did; empty means the generic reason.
	sentReason string
}

func (st *statement) configError(reason string, err error) *core.ConfigError {
	return st.path.Reject(reason, err)
}

func (src *Source) add(st *statement) {
	src.mu.Lock()
	src.stmts = append(src.stmts, st)
	if src.byBinding == nil {
		src.byBinding = map[string][]*statement{}
	}
	src.byBinding[st.path.Binding] = append(src.byBinding[st.path.Binding], st)
	src.mu.Unlock()
}

// load returns the checked form of st, or ErrNotChecked.
func (st *statement) load() (*prepared, error) {
	p := st.ready.Load()
	if p == nil {
		return nil, fmt.Errorf("%w (%s)", ErrNotChecked, st.path)
	}
	return p, nil
}

// Check verifies the source against its database: that the role exists,
// that the pool's login role is a member of it, and that neither bypasses
// row-level security; then it prepares every statement of every binding
// and policy made from src that it has not accepted yet, checks each
// statement's parameters and result columns (names and types), and runs
// each once as the role with every parameter NULL and no row fetched, so a
// missing privilege shows here too. Then it proves, from the catalog, that
// the database enforces access for each (see [Source.Prove] and
// SourceOptions.Exempt): every relation a statement reads, through views
// and SQL functions, has row-level security enabled, is not owned by the
// role unless that is forced, and has a SELECT policy for the role; no
// view runs as its owner; no function is SECURITY DEFINER or has a body
// the catalog cannot see into (PL/pgSQL, C, a LANGUAGE sql string body:
// exempt it, or write it with a BEGIN ATOMIC body); and a grant, or a
// statement of a binding that is not [SQLBinding].Public, depends on the
// caller. It returns the first mistake as one *core.ConfigError naming the
// source, the binding, the statement and the column, relation, view,
// function or grant, or an error wrapping the database's when the database
// cannot be reached. A statement it accepts starts serving. Once Check has
// been called, reads no longer check the whole source at first use; while
// it runs, each read checks its own statements ahead of it (see [Source]).
//
// The statements are sent in pipelined batches, each distinct text once.
// Each is bounded by SourceOptions.StatementTimeout (the check ends with
// an error when the database answers nothing for that long); the check
// as a whole is bounded only by ctx, however many statements it holds.
func (src *Source) Check(ctx context.Context) error {
	src.first.explicit.Store(true)
	defer src.ahead.begin()()
	return src.check(ctx)
}

// check is [Source.Check] without marking the host's call.
func (src *Source) check(ctx context.Context) (err error) {
	src.proveMu.Lock()
	defer src.proveMu.Unlock()
	ctx, progress, stop := stallGuard(ctx, src.s.timeout)
	defer stop()
	defer func() { err = stalled(ctx, src.name, err) }()
	conn, release, err := src.roleConn(ctx)
	if err != nil {
		return err
	}
	defer release()
	progress()
	src.mu.Lock()
	stmts := append([]*statement(nil), src.stmts...)
	src.mu.Unlock()
	var hosts, derived []*statement
	for _, st := range stmts {
		switch {
		case st.ready.Load() != nil:
		case st.derived:
			derived = append(derived, st) // the statements built from checked ones
		default:
			hosts = append(hosts, st)
		}
	}
	// The proof runs on a second connection of a pool while the statements
	// are prepared on the first, so that it adds little to the start-up;
	// a mistake of the prepare loop is reported before the proof's.
	proved := make(chan error, 1)
	if conn2, release2, ok := src.secondConn(ctx, len(hosts)); ok {
		go func() {
			defer release2()
			proved <- src.proveStatements(ctx, conn2, hosts, progress)
		}()
	} else {
		proved = nil
	}
	c := src.newChecker(conn, progress)
	checked, err := c.checkStatements(ctx, hosts)
	if err != nil {
		if proved != nil {
			<-proved
		}
		return err
	}
	if proved != nil {
		err = <-proved
	} else {
		err = src.proveStatements(ctx, conn, hosts, progress)
	}
	if err != nil {
		return err
	}
	for i, st := range hosts {
		st.ready.Store(checked[i])
	}
	checked, err = c.checkStatements(ctx, derived)
	if err != nil {
		return err
	}
	for i, st := range derived {
		st.ready.Store(checked[i])
	}
	return src.probeStandbys(ctx)
}

// roleConn returns a connection to check or prove statements on, once
// the role has passed checkRole.
func (src *Source) roleConn(ctx context.Context) (*pgx.Conn, func(), error) {
	conn, release, err := dbConn(ctx, src.s.db, src.name)
	if err != nil {
		return nil, nil, err
	}
	if err := src.checkRole(ctx, conn, src.s.role); err != nil {
		release()
		return nil, nil, err
	}
	return conn, release, nil
}

// dbConn returns a connection of db, a DB of the source name, to check
// statements on.
func dbConn(ctx context.Context, db DB, name string) (*pgx.Conn, func(), error) {
	switch db := db.(type) {
	case *pgx.Conn:
		return db, func() {}, nil
	case interface { // a *pgxpool.Pool
		Acquire(ctx context.Context) (*pgxpool.Conn, error)
	}:
		c, err := db.Acquire(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("postgres: source %s: acquire a connection to check: %w", name, err)
		}
		return c.Conn(), c.Release, nil
	}
	return nil, nil, core.ConfigPath{Source: name, Field: "db"}.Reject("cannot be checked: pass a *pgxpool.Pool or a *pgx.Conn", nil)
}

// parallelProof is the fewest statements whose proof runs on a second
// connection: below it, connecting costs more than the overlap saves.
var parallelProof = 12

// secondConn returns another connection of a pool, for the proof of n
// statements to run beside the prepare loop; ok is false for a single
// connection, for fewer than parallelProof statements, or when the pool
// has none to spare.
func (src *Source) secondConn(ctx context.Context, n int) (*pgx.Conn, func(), bool) {
	pool, ok := src.s.db.(interface {
		Acquire(ctx context.Context) (*pgxpool.Conn, error)
		Stat() *pgxpool.Stat
	})
	if !ok || proofOff.Load() || n < parallelProof || pool.Stat().MaxConns() < 2 {
		return nil, nil, false
	}
	c, err := pool.Acquire(ctx)
	if err != nil {
		return nil, nil, false
	}
	return c.Conn(), c.Release, true
}

const sqlCheckRole = `SELECT current_user::text, l.rolsuper, l.rolbypassrls,
	r.rolname IS NOT NULL, coalesce(r.rolsuper OR r.rolbypassrls, false),
	r.rolname IS NOT NULL AND pg_has_role(current_user, r.oid, 'MEMBER')
FROM pg_roles l LEFT JOIN pg_roles r ON r.rolname = $1::text
WHERE l.rolname = current_user`

// checkRole checks role ("" for the login role) on conn, a connection of
// the primary or of a standby.
func (src *Source) checkRole(ctx context.Context, conn *pgx.Conn, role string) error {
	var (
		login                            string
		loginSuper, loginBypass          bool
		exists, roleBypasses, memberOfIt bool
	)
	if err := conn.QueryRow(ctx, sqlCheckRole, role).Scan(&login, &loginSuper, &loginBypass, &exists, &roleBypasses, &memberOfIt); err != nil {
		return fmt.Errorf("postgres: source %s: check the role: %w", src.name, err)
	}
	if role == "" { // LoginRole
		if loginSuper || loginBypass {
			return core.ConfigPath{Source: src.name, Field: "LoginRole"}.Reject(fmt.Sprintf("the login role %q bypasses row-level security (superuser or BYPASSRLS); use a Role that does not", login), nil)
		}
		return nil
	}
	switch {
	case !exists:
		return core.ConfigPath{Source: src.name, Field: "Role"}.Reject(fmt.Sprintf("role %q does not exist", role), nil)
	case roleBypasses:
		return core.ConfigPath{Source: src.name, Field: "Role"}.Reject(fmt.Sprintf("role %q bypasses row-level security (superuser or BYPASSRLS)", role), nil)
	case !memberOfIt:
		return core.ConfigPath{Source: src.name, Field: "Role"}.Reject(fmt.Sprintf("the login role %q is not a member of role %q (GRANT %s TO %s)", login, role, role, login), nil)
	}
	return nil
}

// checkStatement prepares st's host SQL, lets st check its description,
// then prepares the statement the store sends and runs it once, as the
// role, with NULL parameters and no row fetched.
func (src *Source) checkStatement(ctx context.Context, conn *pgx.Conn, st *statement) (*prepared, error) {
	var desc *pgconn.StatementDescription
	if !st.derived {
		var err error
		if desc, err = conn.PgConn().Prepare(ctx, "", st.named.SQL, nil); err != nil {
			return nil, st.configError("does not prepare: "+pgMessage(err), err)
		}
	}
	p, err := st.prepare(desc)
	if err != nil {
		return nil, err
	}
	sent, err := conn.PgConn().Prepare(ctx, "", p.sql, nil)
	if err != nil {
		reason := p.sentReason
		if reason == "" {
			reason = "does not prepare as the store sends it"
		}
		return nil, st.configError(reason+": "+pgMessage(err), err)
	}
	if err := src.probe(ctx, conn, p.sql, len(sent.ParamOIDs)); err != nil {
		role := src.s.role
		if role == "" {
			role = "the login role"
		}
		return nil, st.configError(fmt.Sprintf("does not run as %s: %s", role, pgMessage(err)), err)
	}
	return p, nil
}

// probe runs sql once in a read-only transaction as the source's role with
// every one of its n parameters NULL, fetching no row, and rolls back.
func (src *Source) probe(ctx context.Context, conn *pgx.Conn, sql string, n int) error {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if src.s.role != "" {
		if _, err := tx.Exec(ctx, "SELECT set_config('role', $1, true)", src.s.role); err != nil {
			return err
		}
	}
	rows, err := tx.Query(ctx, "SELECT 1 FROM ("+sql+"\n) AS probe LIMIT 0", make([]any, n)...)
	if err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

// pgMessage returns the server's message (and detail) for a PostgreSQL
// error, else the error's text.
func pgMessage(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		if pe.Hint != "" {
			return pe.Message + " (" + pe.Hint + ")"
		}
		return pe.Message
	}
	return err.Error()
}
