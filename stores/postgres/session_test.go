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
	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/core"
)

// countingDB fails every batch and counts how many were sent.
type countingDB struct{ sent atomic.Int64 }

func (d *countingDB) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	d.sent.Add(1)
	return pgx.FailedBatchResults(b, errors.New("countingDB sends nothing"))
}

// storeCalls are the ways into a Store that reach the database: a read
// through the gateway (the resolver), the reader, the policy's Decide and a
// completion. Each returns the store's error.
func storeCalls(t *testing.T, st *Store) map[string]func(ctx context.Context) error {
	t.Helper()
	res, err := core.NewResources(st.Bindings(), DatabaseDecides())
	if err != nil {
		t.Fatal(err)
	}
	planned := rowTarget(t, "asset://project/p/asset/a/body", "asset-body", "p/a")
	return map[string]func(ctx context.Context) error{
		"resolve": func(ctx context.Context) error { _, err := res.Read(ctx, "asset://project/p/asset/a/body"); return err },
		"read":    func(ctx context.Context) error { _, err := readOne(ctx, st.Reader(), whole(planned)); return err },
		"decide": func(ctx context.Context) error {
			_, err := st.Policy().Decide(ctx, core.PolicyPass{Stage: core.PassRecheck, Targets: []core.ResourceTarget{planned}})
			return err
		},
		"complete": func(ctx context.Context) error {
			_, err := st.BodyBinding().Completer.Complete(ctx, core.CompletionRequest{Variable: "asset", Prefix: "a", Limit: 5})
			return err
		},
	}
}

// rowTarget returns a target as binding of the store's Source plans it
// for the row with key.
func rowTarget(t *testing.T, uri, binding, key string) core.ResourceTarget {
	t.Helper()
	authz, _ := json.Marshal(sqlRef{Kind: refRow, Source: storeSource, Binding: binding, Key: key, Version: "1", MIME: "text/plain", Text: true})
	tg, err := core.NewResourceTarget(uri, ReprRow, authz)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// TestHostilePrincipalsAreRefusedBeforeTheDatabase proves a principal that
// is empty, too long, not UTF-8 or holds NUL is an Unavailable error whose
// cause is ErrInvalidPrincipal, on every way into the store, and no batch
// (not even the store's first check) is sent for it.
func TestHostilePrincipalsAreRefusedBeforeTheDatabase(t *testing.T) {
	bad := map[string]string{
		"NUL":      "alice\x00admin",
		"empty":    "",
		"too long": strings.Repeat("a", MaxPrincipalBytes+1),
		"not UTF8": "al\xffice",
	}
	for name, p := range bad {
		t.Run(name, func(t *testing.T) {
			db := &countingDB{}
			st, err := NewStore(db, &Options{Principal: func(context.Context) (string, error) { return p, nil }})
			if err != nil {
				t.Fatal(err)
			}
			for call, f := range storeCalls(t, st) {
				err := f(t.Context())
				if core.KindOf(err) != core.FailureUnavailable || (p != "" && !errors.Is(err, ErrInvalidPrincipal)) {
					t.Fatalf("%s with a %s principal: %v, want Unavailable(ErrInvalidPrincipal)", call, name, err)
				}
			}
			if n := db.sent.Load(); n != 0 {
				t.Fatalf("%d batches reached the database", n)
			}
		})
	}
}

// TestAMissingPrincipalIsUnavailable proves the default principal function
// denies a context without core.WithPrincipal, before the database.
func TestAMissingPrincipalIsUnavailable(t *testing.T) {
	db := &countingDB{}
	st, err := NewStore(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	for call, f := range storeCalls(t, st) {
		if err := f(t.Context()); !errors.Is(err, core.ErrNoPrincipal) {
			t.Fatalf("%s without principal: %v; want ErrNoPrincipal", call, err)
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
	st, _ := NewStore(db, nil)
	ctx, cancel := context.WithDeadline(core.WithPrincipal(t.Context(), "alice"), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := readOne(ctx, st.Reader(), whole(rowTarget(t, "asset://project/p/asset/a/body", "asset-body", "p/a"))); !errors.Is(err, context.DeadlineExceeded) || db.sent.Load() != 0 {
		t.Fatalf("expired deadline: %v after %d batches", err, db.sent.Load())
	}
}

// TestAStoreThatCannotBeCheckedServesNothing proves the store's statements
// serve only once checked: over a DB that cannot prepare statements, every
// way in fails with the check's *core.ConfigError and sends no statement,
// and so does an explicit Check.
func TestAStoreThatCannotBeCheckedServesNothing(t *testing.T) {
	db := &countingDB{}
	st, err := NewStore(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ce *core.ConfigError
	if err := st.Check(t.Context()); !errors.As(err, &ce) {
		t.Fatalf("Check over a DB that cannot prepare: %v, want a *core.ConfigError", err)
	}
	ctx := core.WithPrincipal(t.Context(), "alice")
	for call, f := range storeCalls(t, st) {
		if err := f(ctx); !errors.As(err, &ce) {
			t.Fatalf("%s unchecked: %v, want the check's *core.ConfigError", call, err)
		}
	}
	if db.sent.Load() != 0 {
		t.Fatalf("%d batches sent by an unchecked store", db.sent.Load())
	}
}

// TestAStoreWhoseDatabaseIsDownIsAnOutage proves a check that cannot reach
// the database is the retryable core.Outage matching ErrConnection, not a
// configuration error.
func TestAStoreWhoseDatabaseIsDownIsAnOutage(t *testing.T) {
	pool, err := pgxpool.New(t.Context(), "postgres://u@127.0.0.1:1/db?connect_timeout=2") // connects lazily
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st, err := NewStore(pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Check(t.Context())
	if core.KindOf(err) != core.FailureOutage || !errors.Is(err, ErrConnection) {
		t.Fatalf("Check with the database down: %v, want an Outage matching ErrConnection", err)
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
		"nil db":                  func() error { _, err := NewStore(nil, nil); return err },
		"simple protocol":         func() error { _, err := NewStore(simple, nil); return err },
		"negative timeout":        func() error { _, err := NewStore(db, &Options{StatementTimeout: -1}); return err },
		"negative max items":      func() error { _, err := NewStore(db, &Options{MaxPlanItems: -1}); return err },
		"NUL in role":             func() error { _, err := NewStore(db, &Options{Role: "a\x00b"}); return err },
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
	st, qr, db := storeAndNotes(t) // qr: a reader of another source, which plans none of these
	ctx := core.WithPrincipal(t.Context(), "alice")
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
		if _, err := readOne(ctx, st.Reader(), whole(target)); !errors.Is(err, ErrBadTarget) {
			t.Errorf("store reader with authz %q: %v, want ErrBadTarget", authz, err)
		}
		if _, err := readOne(ctx, qr, whole(target)); !errors.Is(err, ErrBadTarget) {
			t.Errorf("another source's reader with authz %q: %v, want ErrBadTarget", authz, err)
		}
	}
	if db.sent.Load() > 1 {
		t.Fatalf("%d batches sent for foreign targets", db.sent.Load())
	}
}

// storeAndNotes returns a reference store and the reader of a binding of
// another source ("notes") over one database that counts what reaches it.
func storeAndNotes(t testing.TB) (*Store, core.Reader, *countingDB) {
	t.Helper()
	db := &countingDB{}
	st, err := NewStore(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	src, err := NewSource(db, SourceOptions{Name: "notes", Role: "notes_reader"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := src.Binding(SQLBinding{Definition: core.ResourceDefinition{URITemplate: "note://all/{key}", Name: "note"},
		Plan: "SELECT $key AS key, 1 AS version, 'text/plain' AS mime", Body: "SELECT body, version FROM notes WHERE key = $key"})
	if err != nil {
		t.Fatal(err)
	}
	return st, b.Reader, db
}

// TestStoresOfOneGatewayKeepTheirTargetsApart: a store given its own Name
// plans under it, so its reader and policy refuse a default store's
// targets without sending a statement, and the default store refuses its.
func TestStoresOfOneGatewayKeepTheirTargetsApart(t *testing.T) {
	db := &countingDB{}
	named, err := NewStore(db, &Options{Name: "archive"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := core.WithPrincipal(t.Context(), "alice")
	theirs := rowTarget(t, "asset://project/p/asset/a/body", "asset-body", "p/a")
	if _, err := readOne(ctx, named.Reader(), whole(theirs)); !errors.Is(err, ErrBadTarget) {
		t.Fatalf("the named store read a default store's target: %v", err)
	}
	authz, _ := json.Marshal(sqlRef{Kind: refRow, Source: "archive", Binding: "asset-body", Key: "p/a", Version: "1", MIME: "text/plain"})
	ours, err := core.NewResourceTarget("asset://project/p/asset/a/body", ReprRow, authz)
	if err != nil {
		t.Fatal(err)
	}
	def, err := NewStore(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readOne(ctx, def.Reader(), whole(ours)); !errors.Is(err, ErrBadTarget) {
		t.Fatalf("the default store read the named store's target: %v", err)
	}
	if n := db.sent.Load(); n != 0 {
		t.Fatalf("%d batches sent for targets no store of theirs planned", n)
	}
}
