package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/proofhook"
)

// This file proves, from PostgreSQL's own catalog, that storage enforces
// access for every statement a [Source] runs (DESIGN.md section 14). The
// proof finds what a statement reads from the database itself, not from
// its text: in a transaction that is rolled back, as the source's role, it
// creates a temporary view of each host statement (each $name replaced by
// a NULL of the parameter's type) and walks pg_depend and pg_rewrite from
// the views, recursively, through the views and SQL functions they use.
//
// Every relation a statement reads must have row-level security enabled,
// must not be owned by the role (directly or through membership) unless
// row-level security is forced, and must have at least one permissive
// SELECT policy that applies to the role. No view may run as its owner
// (only security_invoker views pass), and no function may be SECURITY
// DEFINER. A function whose body the catalog records nothing of (PL/pgSQL,
// C, or LANGUAGE sql with a string body) is refused too: the proof cannot
// see what it reads, and an invoker function that reads a table without
// row-level security would hide it. System objects of pg_catalog and
// information_schema functions are accepted. Anything else must be
// exempted by name (SourceOptions.Exempt).
//
// A statement is caller-dependent when it binds $principal, names
// mcp.principal or mcp.claims itself, calls a function whose body does, or
// reads a relation whose row-level security does: the relation's
// applicable permissive policies all depend on the caller, or one of its
// restrictive ones does. A policy depends on the caller when its USING
// expression (pg_policy.polqual) names mcp.principal or mcp.claims, calls
// a function whose body does, or reads a relation one of whose SELECT
// policies does so directly (one level). A policy such as USING (true) is
// caller-free.

// ErrNotProven is the cause of the core.FailureOutage that every resolve, read,
// policy decision and completion of a [Source] fails with while the last
// [Source.Prove] failed: the catalog no longer shows that the database
// enforces access, so nothing is served until a later Prove succeeds.
var ErrNotProven = errors.New("postgres: the proof that storage enforces access failed")

// proofOff turns the proof off, for the benchmarks that measure its cost:
// this package's (export_test.go) and the command's start-up
// (internal/proofhook); nothing else sets it.
var proofOff = &proofhook.Off

// proofFailure is the source's broken state: why the last Prove failed.
type proofFailure struct{ err error }

// stmtProof is what the proof found for one statement.
type stmtProof struct {
	callerFree bool
	exempted   []string // the exempt names it reads or calls, sorted
}

// Exemption is one relation or function that [SourceOptions].Exempt lets
// through the proof, with the reason the host gave.
type Exemption struct {
	// Name is the qualified name: schema.table, schema.view or
	// schema.function.
	Name string
	// Reason says why the proof may let it through.
	Reason string
}

// Exemptions returns the source's exemptions, by name.
func (src *Source) Exemptions() []Exemption {
	out := make([]Exemption, 0, len(src.exempt))
	for n, r := range src.exempt {
		out = append(out, Exemption{Name: n, Reason: r})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// BindingProof is what the proof found for the statements of one binding
// (or grant) of a [Source]: see [Source.Proof].
type BindingProof struct {
	// CallerFree says that one of its statements answers alike for every
	// caller (SQLBinding.Public let it through).
	CallerFree bool
	// Exempted are the exempt relations and functions its statements read
	// or call, sorted.
	Exempted []string
}

// Proof returns what the last proof found for the statements of the
// binding named binding (a grant's statements are under the name the
// grant was made with); ok is false before [Source.Check] has proved any.
func (src *Source) Proof(binding string) (BindingProof, bool) {
	src.mu.Lock()
	stmts := append([]*statement(nil), src.byBinding[binding]...)
	src.mu.Unlock()
	var out BindingProof
	found := false
	for _, st := range stmts {
		if st.path.Binding != binding || st.derived {
			continue
		}
		pr := st.proof.Load()
		if pr == nil {
			continue
		}
		found = true
		out.CallerFree = out.CallerFree || pr.callerFree
		for _, e := range pr.exempted {
			if !slices.Contains(out.Exempted, e) {
				out.Exempted = append(out.Exempted, e)
			}
		}
	}
	sort.Strings(out.Exempted)
	return out, found
}

// Prove runs the proof again on every statement [Source.Check] has
// accepted, and checks the role again: that the catalog still shows that
// the database enforces access for each. A host runs it on a schedule and
// after reconnects. While the last Prove failed (for any reason, an
// unreachable database included), every resolve, read, policy decision
// and completion of the source fails with a retryable core.FailureOutage whose
// cause matches [ErrNotProven], and nothing is served; a later Prove that
// succeeds restores serving. It returns the first refusal as one
// *core.ConfigError, as Check does.
func (src *Source) Prove(ctx context.Context) error {
	src.proveMu.Lock()
	defer src.proveMu.Unlock()
	err := src.prove(ctx)
	if err != nil {
		src.s.broken.Store(&proofFailure{err: err})
		return err
	}
	src.s.broken.Store(nil)
	return nil
}

func (src *Source) prove(ctx context.Context) error {
	conn, release, err := src.roleConn(ctx)
	if err != nil {
		return err
	}
	defer release()
	src.mu.Lock()
	var stmts []*statement
	for _, st := range src.stmts {
		if !st.derived && st.ready.Load() != nil {
			stmts = append(stmts, st)
		}
	}
	src.mu.Unlock()
	return src.proveStatements(ctx, conn, stmts, func() {})
}

// proveStatements proves stmts (none derived) in one transaction that is
// rolled back, and records what it found in each; progress is called as
// each of its statements is answered.
func (src *Source) proveStatements(ctx context.Context, conn *pgx.Conn, stmts []*statement, progress func()) error {
	if proofOff.Load() || len(stmts) == 0 {
		return nil
	}
	// One view per distinct statement: stmt[i] is proved by view of[i].
	var views []string
	var first []*statement // the statement each view was made for
	of := make([]int, len(stmts))
	seen := map[string]int{}
	for i, st := range stmts {
		body, err := nullParams(st.named)
		if err != nil {
			return st.configError("cannot be proven: "+err.Error(), err)
		}
		if v, ok := seen[body]; ok {
			of[i] = v
			continue
		}
		views, first = append(views, "CREATE TEMPORARY VIEW mcpres_proof_"+strconv.Itoa(len(views)+1)+" AS SELECT 1 FROM ("+body+"\n) AS q"), append(first, st)
		seen[body], of[i] = len(views)-1, len(views)-1
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: source %s: prove: %w", src.name, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if src.s.role != "" {
		if _, err := tx.Exec(ctx, "SELECT set_config('role', $1, true)", src.s.role); err != nil {
			return fmt.Errorf("postgres: source %s: prove: %w", src.name, err)
		}
	}
	exempt := make([]string, 0, len(src.exempt))
	for n := range src.exempt {
		exempt = append(exempt, n)
	}
	found := make([][]proofRow, len(views))
	// proofChunk views at a time, each chunk's views dropped (rolled back
	// to a savepoint) before the next: the catalog walk joins pg_depend,
	// which would otherwise hold every view made so far, so that each
	// chunk's walk would grow with the file.
	for from := 1; from <= len(views); from += proofChunk {
		to := min(from+proofChunk-1, len(views))
		if err := src.proveChunk(ctx, tx, from > 1, views[from-1:to], first[from-1:to], progress); err != nil {
			return err
		}
		if err := src.walkViews(ctx, tx, from, to, exempt, found); err != nil {
			return err
		}
		progress()
	}
	if err := src.checkExemptions(ctx, tx); err != nil {
		return err
	}
	proofs := make([]*stmtProof, len(stmts))
	for i, st := range stmts {
		pr, err := src.judge(st, slices.Clone(found[of[i]]))
		if err != nil {
			return err
		}
		proofs[i] = pr
	}
	for i, st := range stmts {
		st.proof.Store(proofs[i])
	}
	return nil
}

// proofChunk bounds the views made at once, and so the views one walk of
// the catalog (sqlProof) starts from.
const proofChunk = 256

// proveChunk makes views, first[i]'s view each, in one round trip (the
// simple protocol runs them in order and stops at the first that fails,
// which names the statement). It first sets the savepoint the views are
// made after, or, when later is set, rolls back to it, which drops the
// chunk before (the transaction's rollback drops the last).
func (src *Source) proveChunk(ctx context.Context, tx pgx.Tx, later bool, views []string, first []*statement, progress func()) error {
	start := "SAVEPOINT mcpres_proof"
	if later {
		start = "ROLLBACK TO SAVEPOINT mcpres_proof"
	}
	var results []*pgconn.Result
	mrr := tx.Conn().PgConn().Exec(ctx, start+";\n"+strings.Join(views, ";\n"))
	for mrr.NextResult() {
		results = append(results, mrr.ResultReader().Read())
		progress()
	}
	err := mrr.Close()
	if err == nil {
		return nil
	}
	if statementError(err) == nil {
		return fmt.Errorf("postgres: source %s: prove: %w", src.name, classify(err))
	}
	results = results[min(1, len(results)):] // start's
	st := first[min(len(results), len(first)-1)]
	for i, r := range results {
		if r.Err != nil {
			st = first[i]
			break
		}
	}
	return st.configError("cannot be proven: PostgreSQL does not accept it as a temporary view as "+src.roleWords()+": "+pgMessage(err), err)
}

// walkViews runs sqlProof from views from to to, adding what each reads
// and calls to found.
func (src *Source) walkViews(ctx context.Context, tx pgx.Tx, from, to int, exempt []string, found [][]proofRow) error {
	rows, err := tx.Query(ctx, sqlProof, to, exempt, from)
	if err != nil {
		return fmt.Errorf("postgres: source %s: prove: %w", src.name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var r proofRow
		if err := rows.Scan(&r.view, &r.kind, &r.name, &r.relkind, &r.exempt, &r.rls, &r.force, &r.owned, &r.invoker,
			&r.permissive, &r.dependent, &r.secdef, &r.transparent, &r.language); err != nil {
			return fmt.Errorf("postgres: source %s: prove: %w", src.name, err)
		}
		if r.view >= from && r.view <= to {
			found[r.view-1] = append(found[r.view-1], r)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres: source %s: prove: %w", src.name, err)
	}
	return nil
}

// roleWords names the role statements run as, for a message.
func (src *Source) roleWords() string {
	if src.s.role == "" {
		return "the login role"
	}
	return "role " + src.s.role
}

// proofRow is one relation or function a statement reads or calls.
type proofRow struct {
	view        int
	kind        string // "r" relation, "f" function
	name        string
	relkind     string
	exempt      bool
	rls, force  bool
	owned       bool
	invoker     bool
	permissive  int64
	dependent   bool // a relation's row-level security, a function's body, depends on the caller
	secdef      bool
	transparent bool
	language    string
}

// judge applies the proof's rules to what st reads, and returns the first
// refusal as st's *core.ConfigError.
func (src *Source) judge(st *statement, rows []proofRow) (*stmtProof, error) {
	sort.Slice(rows, func(i, j int) bool { return rows[i].kind+rows[i].name < rows[j].kind+rows[j].name })
	pr := &stmtProof{}
	dependent := st.named.paramIndex("principal") != 0 || callerSetting(st.named.SQL)
	role := src.roleWords()
	for _, r := range rows {
		if r.exempt {
			if !slices.Contains(pr.exempted, r.name) {
				pr.exempted = append(pr.exempted, r.name)
			}
			continue
		}
		refuse := func(format string, args ...any) (*stmtProof, error) {
			return nil, st.configError(fmt.Sprintf(format, args...)+", or exempt "+r.name+" with a reason", nil)
		}
		if r.kind == "f" {
			switch {
			case r.secdef:
				return refuse("calls function %s, which is SECURITY DEFINER and reads as its owner, past the caller's row-level security: ALTER FUNCTION %s SECURITY INVOKER", r.name, r.name)
			case !r.transparent:
				return refuse("calls function %s (LANGUAGE %s), whose body the catalog records nothing of, so the proof cannot see what it reads: write it as LANGUAGE sql with a BEGIN ATOMIC body", r.name, r.language)
			}
			dependent = dependent || r.dependent
			continue
		}
		switch r.relkind {
		case "v":
			if !r.invoker {
				return refuse("reads view %s, which runs as its owner, past the caller's row-level security: ALTER VIEW %s SET (security_invoker = true)", r.name, r.name)
			}
			continue // what it reads is walked
		case "m":
			return refuse("reads materialized view %s, which cannot have row-level security: read its tables instead", r.name)
		case "r", "p", "f":
		default:
			continue // sequences, composite types
		}
		switch {
		case !r.rls:
			return refuse("reads table %s, which has row-level security disabled, so every row is served: ALTER TABLE %s ENABLE ROW LEVEL SECURITY (with a policy for %s)", r.name, r.name, role)
		case r.owned && !r.force:
			return refuse("reads table %s, which %s owns (directly or through membership), so its row-level security does not apply: ALTER TABLE %s FORCE ROW LEVEL SECURITY, or give it another owner", r.name, role, r.name)
		case r.permissive == 0:
			return refuse("reads table %s, which has no SELECT policy for %s, so every row is hidden: CREATE POLICY ... ON %s FOR SELECT TO ... USING (...)", r.name, role, r.name)
		}
		dependent = dependent || r.dependent
	}
	pr.callerFree = !dependent
	if pr.callerFree && st.callerBound {
		what := "its answer cannot depend on the caller"
		fix := "bind $principal (or read a table whose row-level security reads mcp.principal or mcp.claims)"
		if st.kind == "grant" {
			return nil, st.configError(what+": it binds no $principal and reads no table whose row-level security depends on the caller, "+
				"so it grants every token holder alike: "+fix+"; for objects meant for everyone, write public: true instead of a grant", nil)
		}
		return nil, st.configError(what+": it binds no $principal and reads no table whose row-level security depends on the caller, "+
			"so every token holder reads alike: "+fix+", or, for a resource meant for everyone, say so with public: true", nil)
	}
	return pr, nil
}

// callerSetting reports whether sql names the settings that carry the
// caller (mcp.principal, mcp.claims) outside a bound value.
func callerSetting(sql string) bool {
	return strings.Contains(sql, "mcp.principal") || strings.Contains(sql, "mcp.claims")
}

// checkExemptions refuses an exemption that names no relation or
// function of the database.
func (src *Source) checkExemptions(ctx context.Context, tx pgx.Tx) error {
	if len(src.exempt) == 0 {
		return nil
	}
	names := make([]string, 0, len(src.exempt))
	for n := range src.exempt {
		names = append(names, n)
	}
	sort.Strings(names)
	rows, err := tx.Query(ctx, sqlExemptKnown, names)
	if err != nil {
		return fmt.Errorf("postgres: source %s: prove: %w", src.name, err)
	}
	known := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		known[n] = true
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres: source %s: prove: %w", src.name, err)
	}
	for _, n := range names {
		if !known[n] {
			return core.ConfigPath{Source: src.name, Field: "Exempt", Key: n}.Reject(fmt.Sprintf("names %s, which is no table, view or function of the database (write schema.name as the catalog spells it)", n), nil)
		}
	}
	return nil
}

// nullParams returns n's SQL with each positional parameter that
// rewriteNamed wrote, ($n::TYPE), replaced by a NULL of its type.
func nullParams(n namedSQL) (string, error) {
	var out strings.Builder
	cursor, delta := 0, 0
	for _, u := range n.Uses {
		at := u.Offset + delta
		head := "($" + strconv.Itoa(n.paramIndex(u.Name)) + "::"
		if at < cursor || !strings.HasPrefix(n.SQL[at:], head) {
			return "", fmt.Errorf("parameter $%s at offset %d was not rewritten", u.Name, u.Offset)
		}
		end := strings.IndexByte(n.SQL[at:], ')')
		if end < 0 {
			return "", fmt.Errorf("parameter $%s at offset %d was not rewritten", u.Name, u.Offset)
		}
		out.WriteString(n.SQL[cursor:at])
		out.WriteString("(NULL::")
		out.WriteString(n.SQL[at+len(head) : at+end+1])
		cursor = at + end + 1
		delta += end + 1 - (1 + len(u.Name))
	}
	out.WriteString(n.SQL[cursor:])
	return out.String(), nil
}

// sqlExemptKnown returns those of $1 that name a relation or function.
const sqlExemptKnown = `SELECT x FROM unnest($1::text[]) AS x
WHERE EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname || '.' || c.relname = x)
   OR EXISTS (SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname || '.' || p.proname = x)`

// sqlProof walks what the temporary views mcpres_proof_$3 ... _$1 read and
// call, and returns one row per relation or function of each (view), with
// what the rules need; $2 are the exempt names, whose views and functions
// are not walked. Objects of pg_catalog and information_schema are pinned
// (pg_depend records nothing of them) or left out.
const sqlProof = `WITH RECURSIVE
setting AS (SELECT 'mcp\.(principal|claims)' AS re),
views AS (
  SELECT v.n::int AS view, c.oid
  FROM generate_series($3::int, $1::int) AS v(n)
  JOIN pg_class c ON c.oid = to_regclass('pg_temp.mcpres_proof_' || v.n)),
obj(view, cls, oid) AS (
  SELECT view, 'pg_class'::regclass::oid, oid FROM views
  UNION
  SELECT o.view, d.refclassid, d.refobjid
  FROM obj o
  LEFT JOIN pg_class c ON o.cls = 'pg_class'::regclass AND c.oid = o.oid AND c.relkind = 'v'
  LEFT JOIN pg_namespace cn ON cn.oid = c.relnamespace
  LEFT JOIN pg_rewrite r ON r.ev_class = c.oid AND r.rulename = '_RETURN'
  LEFT JOIN pg_proc p ON o.cls = 'pg_proc'::regclass AND p.oid = o.oid
  LEFT JOIN pg_namespace pn ON pn.oid = p.pronamespace
  JOIN pg_depend d ON d.deptype = 'n' AND (
       (d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid)
    OR (o.cls IN ('pg_proc'::regclass, 'pg_operator'::regclass) AND d.classid = o.cls AND d.objid = o.oid))
  WHERE d.refclassid IN ('pg_class'::regclass, 'pg_proc'::regclass, 'pg_operator'::regclass)
    AND NOT coalesce(cn.nspname || '.' || c.relname = ANY ($2::text[]), false)
    AND NOT coalesce(pn.nspname || '.' || p.proname = ANY ($2::text[]), false)
    AND NOT coalesce(p.prosecdef, false)),
rels AS (SELECT DISTINCT oid FROM obj WHERE cls = 'pg_class'::regclass),
polrels AS (
  SELECT oid FROM rels
  UNION
  SELECT d.refobjid FROM pg_policy pol JOIN rels ON rels.oid = pol.polrelid
  JOIN pg_depend d ON d.classid = 'pg_policy'::regclass AND d.objid = pol.oid AND d.refclassid = 'pg_class'::regclass),
pols AS (SELECT pol.* FROM pg_policy pol JOIN polrels ON polrels.oid = pol.polrelid WHERE pol.polcmd IN ('r', '*')),
fns AS (
  SELECT oid FROM obj WHERE cls = 'pg_proc'::regclass
  UNION
  SELECT d.refobjid FROM pols JOIN pg_depend d ON d.classid = 'pg_policy'::regclass AND d.objid = pols.oid AND d.refclassid = 'pg_proc'::regclass),
fnbody AS (
  SELECT p.oid, coalesce(p.prosrc, '') || coalesce(pg_get_function_sqlbody(p.oid), '') ~ (SELECT re FROM setting) AS reads
  FROM fns JOIN pg_proc p ON p.oid = fns.oid JOIN pg_namespace n ON n.oid = p.pronamespace
  WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')),
pdirect AS (
  SELECT pol.oid, pol.polrelid,
         coalesce(pg_get_expr(pol.polqual, pol.polrelid), '') ~ (SELECT re FROM setting)
         OR EXISTS (SELECT 1 FROM pg_depend pd JOIN fnbody f ON f.oid = pd.refobjid
                    WHERE pd.classid = 'pg_policy'::regclass AND pd.objid = pol.oid AND pd.refclassid = 'pg_proc'::regclass AND f.reads) AS direct
  FROM pols pol),
pdep AS (
  SELECT pd0.oid, pd0.direct
         OR EXISTS (SELECT 1 FROM pg_depend d JOIN pdirect o ON o.polrelid = d.refobjid
                    WHERE d.classid = 'pg_policy'::regclass AND d.objid = pd0.oid AND d.refclassid = 'pg_class'::regclass
                      AND d.refobjid <> pd0.polrelid AND o.direct) AS dependent
  FROM pdirect pd0)
SELECT o.view, 'r', n.nspname || '.' || c.relname, c.relkind::text,
       n.nspname || '.' || c.relname = ANY ($2::text[]),
       c.relrowsecurity, c.relforcerowsecurity, pg_has_role(current_user, c.relowner, 'MEMBER'),
       EXISTS (SELECT 1 FROM unnest(c.reloptions) AS ro(opt)
               WHERE split_part(ro.opt, '=', 1) = 'security_invoker'
                 AND lower(split_part(ro.opt, '=', 2)) IN ('true', 'on', 'yes', '1', 't', 'y', 'tr', 'tru', 'ye')),
       coalesce(pol.permissive, 0), coalesce(pol.dependent, false), false, true, ''
FROM obj o
JOIN pg_class c ON o.cls = 'pg_class'::regclass AND c.oid = o.oid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN LATERAL (
  SELECT count(*) FILTER (WHERE p.polpermissive) AS permissive,
         coalesce(bool_and(x.dependent) FILTER (WHERE p.polpermissive), false)
           OR coalesce(bool_or(x.dependent) FILTER (WHERE NOT p.polpermissive), false) AS dependent
  FROM pg_policy p JOIN pdep x ON x.oid = p.oid
  WHERE p.polrelid = c.oid
    AND (p.polroles = '{0}' OR EXISTS (SELECT 1 FROM unnest(p.polroles) AS pr(r) WHERE pg_has_role(current_user, pr.r, 'MEMBER')))) pol ON true
WHERE c.oid NOT IN (SELECT oid FROM views)
UNION ALL
SELECT o.view, 'f', n.nspname || '.' || p.proname, '',
       n.nspname || '.' || p.proname = ANY ($2::text[]),
       false, false, false, false, 0, coalesce(f.reads, false), p.prosecdef,
       p.prosqlbody IS NOT NULL OR p.prokind = 'a', l.lanname
FROM obj o
JOIN pg_proc p ON o.cls = 'pg_proc'::regclass AND p.oid = o.oid
JOIN pg_namespace n ON n.oid = p.pronamespace
JOIN pg_language l ON l.oid = p.prolang
LEFT JOIN fnbody f ON f.oid = p.oid
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')`

// brokenErr returns the outage of a source whose last Prove failed, or nil.
func (s *session) brokenErr() error {
	if f := s.broken.Load(); f != nil {
		return core.NewFailure(core.FailureOutage, fmt.Errorf("%w: %w", ErrNotProven, f.err))
	}
	return nil
}
