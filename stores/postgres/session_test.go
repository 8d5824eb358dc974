package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/wire"
	"go.phpboyscout.uk/mcp/resources/stores/storetest"
)

// countingDB fails every batch and counts how many were sent.
type countingDB struct{ sent atomic.Int64 }

func (d *countingDB) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	d.sent.Add(1)
	return pgx.FailedBatchResults(b, errors.New("countingDB sends nothing"))
}

// notesSource is a source named "postgres" over db with one binding,
// asset-body (a body, completions of "asset") and a decide policy, every
// statement accepted as Source.Check would accept it (accept): what the
// tests below need of a checked source without a database.
func notesSource(t testing.TB, db DB, opts SourceOptions) (*Source, core.ResourceBinding, core.ResourcePolicy) {
	t.Helper()
	if opts.Role == "" {
		opts.Role = ReaderRole
	}
	src, err := NewSource(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := src.Binding(SQLBinding{
		Definition: core.ResourceDefinition{Name: "asset-body", URITemplate: "asset://project/{project}/asset/{asset}/body"},
		Plan:       `SELECT $project || '/' || $asset AS key, 1 AS version, 'text/plain' AS mime`,
		Body:       `SELECT body, version FROM notes WHERE key = $key`,
		Complete:   map[string]string{"asset": `SELECT id AS value FROM notes WHERE starts_with(id, $prefix)`},
	})
	if err != nil {
		t.Fatal(err)
	}
	policy, err := src.Policy(`SELECT k AS key, true AS visible, true AS read FROM unnest($keys) AS k`)
	if err != nil {
		t.Fatal(err)
	}
	accept(t, src)
	return src, b, policy
}

// accept marks every statement of src as checked, as Source.Check does
// once the database describes it: each with the columns of its kind, as
// text (booleans for a decision's flags).
func accept(t testing.TB, src *Source) {
	t.Helper()
	fields := func(names ...string) []pgconn.FieldDescription {
		fs := make([]pgconn.FieldDescription, len(names))
		for i, n := range names {
			fs[i] = pgconn.FieldDescription{Name: n, DataTypeOID: pgtype.TextOID}
			if n == "visible" || n == "read" {
				fs[i].DataTypeOID = pgtype.BoolOID
			}
		}
		return fs
	}
	for _, st := range src.stmts {
		var f []pgconn.FieldDescription
		switch {
		case st.kind == "plan":
			f = fields("key", "version", "mime")
		case st.kind == "body":
			f = fields("body", "version")
		case st.kind == "decide":
			f = fields("key", "visible", "read")
		case strings.HasPrefix(st.kind, "complete"):
			f = fields("value")
		default:
			t.Fatalf("accept: no columns for a %s statement", st.kind)
		}
		p, err := st.prepare(&pgconn.StatementDescription{Fields: f})
		if err != nil {
			t.Fatalf("accept %s: %v", st.path, err)
		}
		st.ready.Store(p)
	}
}

// sourceCalls are the ways into a checked source that reach the database:
// a read through the gateway (the resolver), the reader, the policy's
// Decide and a completion. Each returns the source's error.
func sourceCalls(t *testing.T, b core.ResourceBinding, policy core.ResourcePolicy) map[string]func(ctx context.Context) error {
	t.Helper()
	res, err := core.NewResources([]core.ResourceBinding{b}, DatabaseDecides())
	if err != nil {
		t.Fatal(err)
	}
	planned := rowTarget(t, "asset://project/p/asset/a/body", "asset-body", "p/a")
	return map[string]func(ctx context.Context) error{
		"resolve": func(ctx context.Context) error { _, err := res.Read(ctx, "asset://project/p/asset/a/body"); return err },
		"read": func(ctx context.Context) error {
			_, err := storetest.ReadOne(ctx, b.Reader, whole(planned))
			return err
		},
		"decide": func(ctx context.Context) error {
			_, err := policy.Decide(ctx, core.PolicyPass{Stage: core.PassRecheck, Targets: []core.ResourceTarget{planned}})
			return err
		},
		"complete": func(ctx context.Context) error {
			_, err := b.Complete(ctx, core.CompletionRequest{Variable: "asset", Prefix: "a", Limit: 5})
			return err
		},
	}
}

// rowTarget returns a target as binding of the source "postgres" plans it
// for the row with key.
func rowTarget(t *testing.T, uri, binding, key string) core.ResourceTarget {
	t.Helper()
	authz, _ := json.Marshal(sqlRef{Kind: refRow, Source: "postgres", Binding: binding, Key: key, Version: "1", MIME: "text/plain", Text: true})
	tg, err := core.NewResourceTarget(uri, ReprRow, authz)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// TestHostilePrincipalsAreRefusedBeforeTheDatabase proves a principal that
// is empty, too long, not UTF-8 or holds NUL is an Unavailable error whose
// cause is core.ErrInvalidPrincipal, on every way into a checked source, and
// no batch is sent for it.
func TestHostilePrincipalsAreRefusedBeforeTheDatabase(t *testing.T) {
	bad := map[string]string{
		"NUL":      "alice\x00admin",
		"empty":    "",
		"too long": strings.Repeat("a", wire.MaxPrincipalBytes+1),
		"not UTF8": "al\xffice",
	}
	for name, p := range bad {
		t.Run(name, func(t *testing.T) {
			db := &countingDB{}
			_, b, policy := notesSource(t, db, SourceOptions{Caller: func(context.Context) (core.Caller, error) { return core.Caller{Principal: p}, nil }})
			for call, f := range sourceCalls(t, b, policy) {
				err := f(t.Context())
				if core.KindOf(err) != core.FailureUnavailable || (p != "" && !errors.Is(err, core.ErrInvalidPrincipal)) {
					t.Fatalf("%s with a %s principal: %v, want Unavailable(core.ErrInvalidPrincipal)", call, name, err)
				}
			}
			if n := db.sent.Load(); n != 0 {
				t.Fatalf("%d batches reached the database", n)
			}
		})
	}
}

// TestAMissingPrincipalIsUnavailable proves the default principal function
// denies a context without core.WithCaller, before the database.
func TestAMissingPrincipalIsUnavailable(t *testing.T) {
	_, none := core.CallerFrom(t.Context())
	noPrincipal := errors.Unwrap(none)
	db := &countingDB{}
	_, b, policy := notesSource(t, db, SourceOptions{})
	for call, f := range sourceCalls(t, b, policy) {
		if err := f(t.Context()); !errors.Is(err, noPrincipal) {
			t.Fatalf("%s without principal: %v; want core.CallerFrom's, caused by %v", call, err, noPrincipal)
		}
	}
	if db.sent.Load() != 0 {
		t.Fatalf("%d batches sent without a principal", db.sent.Load())
	}
}

// TestAnExpiredDeadlineIsATimeoutBeforeTheDatabase proves a read whose
// deadline has passed sends nothing and reports a deadline.
func TestAnExpiredDeadlineIsATimeoutBeforeTheDatabase(t *testing.T) {
	db := &countingDB{}
	_, b, _ := notesSource(t, db, SourceOptions{})
	ctx, cancel := context.WithDeadline(core.WithCaller(t.Context(), core.Caller{Principal: "alice"}), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := storetest.ReadOne(ctx, b.Reader, whole(rowTarget(t, "asset://project/p/asset/a/body", "asset-body", "p/a"))); !errors.Is(err, context.DeadlineExceeded) || db.sent.Load() != 0 {
		t.Fatalf("expired deadline: %v after %d batches", err, db.sent.Load())
	}
}

// TestConstructorsRefuseBadConfiguration proves that a nil db, a pool in
// simple-protocol mode, bad options and bad host SQL are *core.ConfigError.
func TestConstructorsRefuseBadConfiguration(t *testing.T) {
	cfg, err := pgxpool.ParseConfig("postgres://u@127.0.0.1:1/db")
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	simple, err := pgxpool.NewWithConfig(t.Context(), cfg) // connects lazily
	if err != nil {
		t.Fatal(err)
	}
	defer simple.Close()
	db := &countingDB{}
	src, err := NewSource(db, SourceOptions{Name: "notes", Role: "notes_reader"})
	if err != nil {
		t.Fatal(err)
	}
	note := func(plan, bundle, itemURI, body string) error {
		_, err := src.Binding(SQLBinding{Definition: core.ResourceDefinition{URITemplate: "note://all/{key}", Name: "note"},
			Plan: plan, Bundle: bundle, ItemURI: itemURI, Body: body})
		return err
	}
	const body = `SELECT body, version FROM notes WHERE key = $key`
	cases := map[string]func() error{
		"nil db":          func() error { _, err := NewSource(nil, SourceOptions{Role: ReaderRole}); return err },
		"simple protocol": func() error { _, err := NewSource(simple, SourceOptions{Role: ReaderRole}); return err },
		"negative timeout": func() error {
			_, err := NewSource(db, SourceOptions{Role: ReaderRole, StatementTimeout: -1})
			return err
		},
		"negative max items":      func() error { _, err := NewSource(db, SourceOptions{Role: ReaderRole, MaxPlanItems: -1}); return err },
		"NUL in role":             func() error { _, err := NewSource(db, SourceOptions{Role: "a\x00b"}); return err },
		"tab in role":             func() error { _, err := NewSource(db, SourceOptions{Role: "a\tb"}); return err },
		"role too long":           func() error { _, err := NewSource(db, SourceOptions{Role: strings.Repeat("r", 64)}); return err },
		"empty plan SQL":          func() error { return note(" ", "", "", body) },
		"two statements":          func() error { return note("SELECT 1 AS key; SELECT 2", "", "", body) },
		"bundle without ItemURI":  func() error { return note("", "SELECT key, 1 AS version, 'text/plain' AS mime FROM notes", "", body) },
		"body SQL with semicolon": func() error { return note("SELECT $key AS key, 1 AS version, 'text/plain' AS mime", "", "", body+" ;") },
	}
	for name, f := range cases {
		var ce *core.ConfigError
		if err := f(); !errors.As(err, &ce) {
			t.Errorf("%s: %v, want *core.ConfigError", name, err)
		}
	}
}

// TestReaderRefusesTargetsItDidNotPlan proves a target with foreign or
// malformed authorization data is an error, not a read of something else.
func TestReaderRefusesTargetsItDidNotPlan(t *testing.T) {
	db := &countingDB{}
	_, b, _ := notesSource(t, db, SourceOptions{})
	_, qb, _ := notesSource(t, db, SourceOptions{Name: "notes", Role: "notes_reader"}) // another source, which plans none of these
	ctx := core.WithCaller(t.Context(), core.Caller{Principal: "alice"})
	for _, authz := range []string{``, `null`, `{"k":"fields"}`, `{"k":"q"}`, `[1]`,
		`{"k":"row","s":"billing","b":"asset-body","key":"p/a","v":"1"}`, // another source's
		`{"k":"row","s":"postgres","b":"invoice","key":"p/a","v":"1"}`,   // no such binding
		`{"k":"lease","s":"postgres","b":"asset-body","key":"p/a"}`,      // no such kind
	} {
		var raw []byte
		if authz != "" {
			raw = []byte(authz)
		}
		target, err := core.NewResourceTarget("asset://project/p/asset/a/body", ReprRow, raw)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := storetest.ReadOne(ctx, b.Reader, whole(target)); !errors.Is(err, ErrBadTarget) {
			t.Errorf("the source's reader with authz %q: %v, want ErrBadTarget", authz, err)
		}
		if _, err := storetest.ReadOne(ctx, qb.Reader, whole(target)); !errors.Is(err, ErrBadTarget) {
			t.Errorf("another source's reader with authz %q: %v, want ErrBadTarget", authz, err)
		}
	}
	if db.sent.Load() > 1 {
		t.Fatalf("%d batches sent for foreign targets", db.sent.Load())
	}
}

// TestSourcesOfOneGatewayKeepTheirTargetsApart: a source given its own
// Name plans under it, so its reader refuses a default source's targets
// without sending a statement, and the default source refuses its.
func TestSourcesOfOneGatewayKeepTheirTargetsApart(t *testing.T) {
	db := &countingDB{}
	_, named, _ := notesSource(t, db, SourceOptions{Name: "archive"})
	ctx := core.WithCaller(t.Context(), core.Caller{Principal: "alice"})
	theirs := rowTarget(t, "asset://project/p/asset/a/body", "asset-body", "p/a")
	if _, err := storetest.ReadOne(ctx, named.Reader, whole(theirs)); !errors.Is(err, ErrBadTarget) {
		t.Fatalf("the named source read a default source's target: %v", err)
	}
	authz, _ := json.Marshal(sqlRef{Kind: refRow, Source: "archive", Binding: "asset-body", Key: "p/a", Version: "1", MIME: "text/plain"})
	ours, err := core.NewResourceTarget("asset://project/p/asset/a/body", ReprRow, authz)
	if err != nil {
		t.Fatal(err)
	}
	_, def, _ := notesSource(t, db, SourceOptions{})
	if _, err := storetest.ReadOne(ctx, def.Reader, whole(ours)); !errors.Is(err, ErrBadTarget) {
		t.Fatalf("the default source read the named source's target: %v", err)
	}
	if n := db.sent.Load(); n != 0 {
		t.Fatalf("%d batches sent for targets no source of theirs planned", n)
	}
}
