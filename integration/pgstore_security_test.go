package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/migrations"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
	"go.phpboyscout.uk/mcp/resources/stores/storetest"
)

// probeBinding returns a binding of template probe://x/{key}, planned
// without a table, whose body is whatever expr (text) computes inside the
// store's transaction.
func probeBinding(t testing.TB, db postgres.DB, expr string) core.ResourceBinding {
	t.Helper()
	return hostBinding(t, db, postgres.SourceOptions{Name: "probe"}, postgres.SQLBinding{
		Definition: core.ResourceDefinition{URITemplate: "probe://x/{key}", Name: "probe"},
		Plan:       `SELECT $key AS key, 1 AS version, 'text/plain' AS mime, true AS text`,
		Body:       `SELECT 1 AS version, ` + expr + ` AS body WHERE $key IS NOT NULL`,
		Public:     true, // it reads no table: every caller reads alike
	})
}

// TestPGStoreReadsRunAsTheReaderRole proves the statement of a read runs as
// mcpres_reader even when the pool logs in as a superuser, and that this
// switch is what makes row-level security bind such a pool.
func TestPGStoreReadsRunAsTheReaderRole(t *testing.T) {
	t.Parallel()
	if postgres.ReaderRole != migrations.ReaderRole {
		t.Fatalf("store role %q, migrations role %q", postgres.ReaderRole, migrations.ReaderRole)
	}
	d := newPGDB(t)
	pool := newPool(t, d.url, nil)
	r := pgGateway(t, []core.ResourceBinding{probeBinding(t, pool,
		`current_user::text || ' as ' || session_user::text || ' ro=' || current_setting('transaction_read_only')`)}, pgAllowAll(nil))
	res, err := r.Read(as(t.Context(), "alice"), "probe://x/who")
	if err != nil {
		t.Fatal(err)
	}
	var session string
	if err := pool.QueryRow(t.Context(), `SELECT session_user::text`).Scan(&session); err != nil {
		t.Fatal(err)
	}
	if got, want := res.Items()[0].Text(), "mcpres_reader as "+session+" ro=on"; got != want {
		t.Fatalf("the read ran as %q, want %q", got, want)
	}

	// Without the switch the superuser login would see an ungranted asset;
	// with it, the store does not.
	d.project(t, "p")
	d.textAsset(t, "p", "a", "secret")
	ctx := as(t.Context(), "alice")
	st := newStore(t, pool, nil)
	if _, err := pgGateway(t, st.Bindings(), pgAllowAll(nil)).Read(ctx, "asset://project/p/asset/a"); core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("as mcpres_reader: %v, want unavailable (no grant)", err)
	}
	var seen int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM mcpres.assets`).Scan(&seen); err != nil || seen != 1 {
		t.Fatalf("the superuser login sees %d assets (%v); this test expects it to bypass RLS", seen, err)
	}
	// So a store that keeps this login is refused by its check, before
	// any read.
	login, err := newRefStore(pool, &refOptions{LoginRole: true})
	if err != nil {
		t.Fatal(err)
	}
	var ce *core.ConfigError
	if err := login.Check(t.Context()); !errors.As(err, &ce) || !strings.Contains(err.Error(), "bypasses row-level security") {
		t.Fatalf("Check of a store on a superuser login without the switch: %v, want a *core.ConfigError", err)
	}
	if _, err := pgGateway(t, login.Bindings(), pgAllowAll(nil)).Read(ctx, "asset://project/p/asset/a"); !errors.Is(err, postgres.ErrNotChecked) {
		t.Fatalf("a read through the refused source: %v, want ErrNotChecked", err)
	}
}

// loginAsReader creates a login role of t's own that is a member of
// mcpres_reader (GRANT mcpres_reader TO login: the deployment the store
// recommends) and nothing else, and
// returns the URL of d's database for it.
func loginAsReader(t *testing.T, d *pgDB) string {
	t.Helper()
	var random [6]byte
	_, _ = rand.Read(random[:])
	name := "mcpres_app_" + hex.EncodeToString(random[:])
	// A password, because a server may ask for one (the official postgres
	// image's pg_hba has scram-sha-256 for every host); trust ignores it.
	password := "pw_" + hex.EncodeToString(random[:])
	d.exec(t, `CREATE ROLE `+name+` LOGIN PASSWORD '`+password+`' IN ROLE mcpres_reader`)
	t.Cleanup(func() { _, _ = d.admin.Exec(context.Background(), `DROP ROLE IF EXISTS `+name) })
	u, err := url.Parse(d.url)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(name, password)
	return u.String()
}

// TestPGStoreReaderRoleCannotBypassRowLevelSecurity proves mcpres_reader
// is no superuser, has no BYPASSRLS and owns no table, and that a session
// of a login that is only a reader cannot turn row security off, disable
// it, become another role or write itself a grant, while the store serves
// it exactly its grants.
func TestPGStoreReaderRoleCannotBypassRowLevelSecurity(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	d.project(t, "p")
	d.textAsset(t, "p", "a", "one")
	d.textAsset(t, "p", "b", "two")
	d.grant(t, "alice", "p", "a")
	ctx := t.Context()

	var super, bypass bool
	var owned int
	if err := d.admin.QueryRow(ctx, `SELECT rolsuper, rolbypassrls,
		(SELECT count(*) FROM pg_tables WHERE schemaname = 'mcpres' AND tableowner = 'mcpres_reader')
		FROM pg_roles WHERE rolname = 'mcpres_reader'`).Scan(&super, &bypass, &owned); err != nil {
		t.Fatal(err)
	}
	if super || bypass || owned != 0 {
		t.Fatalf("mcpres_reader: superuser %v, bypassrls %v, owns %d tables; want none", super, bypass, owned)
	}

	pool := newPool(t, loginAsReader(t, d), nil)
	st := newStore(t, pool, nil)
	gw := pgGateway(t, st.Bindings(), pgAllowAll(nil))
	if _, err := gw.Read(as(ctx, "alice"), "asset://project/p/asset/a"); err != nil {
		t.Fatalf("the reader login reads alice's grant: %v (%v)", err, errors.Unwrap(err))
	}
	if _, err := gw.Read(as(ctx, "alice"), "asset://project/p/asset/b"); core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("the reader login reads beyond alice's grant: %v", err)
	}

	// asReader runs stmts in one transaction as mcpres_reader with principal
	// p and returns the count the last one selects.
	asReader := func(p string, stmts ...string) (int, error) {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.Background())
		if _, err := tx.Exec(ctx, `SELECT set_config('role', 'mcpres_reader', true), set_config('mcp.principal', $1, true)`, p); err != nil {
			t.Fatal(err)
		}
		for _, s := range stmts[:len(stmts)-1] {
			if _, err := tx.Exec(ctx, s); err != nil {
				return 0, err
			}
		}
		var n int
		err = tx.QueryRow(ctx, stmts[len(stmts)-1]).Scan(&n)
		return n, err
	}
	if n, err := asReader("", `SELECT count(*) FROM mcpres.assets`); err != nil || n != 0 {
		t.Fatalf("without a principal the reader sees %d assets (%v), want 0", n, err)
	}
	if n, err := asReader("alice", `SELECT count(*) FROM mcpres.assets`); err != nil || n != 1 {
		t.Fatalf("alice sees %d assets (%v), want her 1", n, err)
	}
	if n, err := asReader("alice", `RESET ROLE`, `SELECT count(*) FROM mcpres.assets`); err != nil || n != 1 {
		t.Fatalf("back as the bare login alice sees %d assets (%v), want her 1", n, err)
	}
	denied := map[string][]string{
		"turn row security off": {`SET LOCAL row_security = off`, `SELECT count(*) FROM mcpres.assets`},
		"disable row security":  {`ALTER TABLE mcpres.assets DISABLE ROW LEVEL SECURITY`, `SELECT 1`},
		"drop the policy":       {`DROP POLICY assets_granted ON mcpres.assets`, `SELECT 1`},
		"become a superuser":    {`SELECT set_config('role', 'postgres', true)`, `SELECT count(*) FROM mcpres.assets`},
		"grant itself access":   {`INSERT INTO mcpres.grants (principal, project_id) VALUES ('alice', 'p')`, `SELECT 1`},
	}
	for what, stmts := range denied {
		_, err := asReader("alice", stmts...)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
			t.Errorf("the reader could %s: %v, want insufficient_privilege (42501)", what, err)
		}
	}
}

// hostile principals and captures: quotes, wildcards, statement breaks,
// comments, placeholders and unicode.
var hostile = []string{
	`alice' OR '1'='1`,
	`%`,
	`alice%`,
	`_lice`,
	`'; SET ROLE postgres; --`,
	`-- x`,
	`$1`,
	`$2::text`,
	`"); DELETE FROM mcpres.grants; --`,
	`ålice ☃ 𝄞 \u0000`,
	`alice`, // not hostile: the control, who holds the grants
}

// TestPGStoreHostilePrincipalIsOnlyABindArgument proves a principal full of
// SQL syntax reaches Postgres byte for byte as a bind argument and sees only
// what it was granted: nothing of alice's, and its own single asset.
func TestPGStoreHostilePrincipalIsOnlyABindArgument(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	d.project(t, "p")
	d.textAsset(t, "p", "a", "alice's")
	d.textAsset(t, "p", "b", "granted to the quote")
	d.grant(t, "alice", "p", "")
	d.grant(t, hostile[0], "p", "b")
	pool := newPool(t, d.url, nil)
	st := newStore(t, pool, nil)
	echo := pgGateway(t, []core.ResourceBinding{probeBinding(t, pool, `current_setting('mcp.principal')`)}, pgAllowAll(nil))
	r := pgGateway(t, st.Bindings(), pgAllowAll(nil))

	for _, p := range hostile[:len(hostile)-1] {
		ctx := as(t.Context(), p)
		got, err := echo.Read(ctx, "probe://x/echo")
		if err != nil {
			t.Fatalf("principal %q: %v", p, err)
		}
		if text := got.Items()[0].Text(); text != p {
			t.Fatalf("principal %q reached Postgres as %q", p, text)
		}
		if _, err := r.Read(ctx, "asset://project/p/asset/a/body"); core.KindOf(err) != core.FailureUnavailable {
			t.Errorf("principal %q read alice's asset: %v", p, err)
		}
		index, err := r.Read(ctx, "asset://projects")
		wantIndex := `{"projects" : []}`
		if p == hostile[0] {
			wantIndex = `{"projects" : [{"id" : "p", "title" : "Project p", "uri" : "asset://project/p"}]}`
		}
		if err != nil || index.Items()[0].Text() != wantIndex {
			t.Errorf("principal %q: index %v %v, want %s", p, index, err, wantIndex)
		}
	}
	res, err := r.Read(as(t.Context(), hostile[0]), "asset://project/p/asset/b/body")
	if err != nil || res.Items()[0].Text() != "granted to the quote" {
		t.Fatalf("the quoted principal's own grant: %v", err)
	}
	var grants int
	if err := d.admin.QueryRow(t.Context(), `SELECT count(*) FROM mcpres.grants`).Scan(&grants); err != nil || grants != 2 {
		t.Fatalf("grants after the hostile reads: %d (%v), want 2", grants, err)
	}
}

// TestPGStorePrincipalWithNULIsRefusedBeforeTheDatabase proves a principal
// with a NUL byte is an Unavailable error and nothing is sent for it.
func TestPGStorePrincipalWithNULIsRefusedBeforeTheDatabase(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	d.project(t, "p")
	d.textAsset(t, "p", "a", "alice's")
	d.grant(t, "alice", "p", "")
	c := countedPool(t, d.url, 1)
	st := newStore(t, c.pool, nil)
	target := planned(t, as(t.Context(), "alice"), pgGateway(t, st.Bindings(), pgAllowAll(nil)), "asset://project/p/asset/a/body")
	batches, trips := c.tracer.batches.Load(), c.wire.roundTrips.Load()
	ctx := as(t.Context(), "alice\x00' OR true --")
	if _, err := storetest.ReadOne(ctx, st.Reader(), whole(target)); core.KindOf(err) != core.FailureUnavailable || !errors.Is(err, core.ErrInvalidPrincipal) {
		t.Fatalf("read with a NUL principal: %v, want Unavailable(ErrInvalidPrincipal)", err)
	}
	r := pgGateway(t, st.Bindings(), st.Policy())
	if _, err := r.Read(ctx, "asset://project/p/asset/a/body"); core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("gateway read with a NUL principal: %v, want unavailable", err)
	}
	if b, rt := c.tracer.batches.Load()-batches, c.wire.roundTrips.Load()-trips; b != 0 || rt != 0 {
		t.Fatalf("a NUL principal cost %d batches and %d round trips, want none", b, rt)
	}
}

// TestPGStoreCapturesWithSQLSyntaxAreOnlyBindArguments proves captures full
// of SQL syntax select exactly the row whose key they are, byte for byte,
// in a host schema (query-driven) and in the reference schema, and change
// nothing.
func TestPGStoreCapturesWithSQLSyntaxAreOnlyBindArguments(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	d.exec(t, `CREATE TABLE notes (key text PRIMARY KEY, version int NOT NULL DEFAULT 1, body text NOT NULL)`)
	d.exec(t, `GRANT SELECT ON notes TO mcpres_reader`)
	d.exec(t, callerRLS("notes"))
	keys := []string{
		`x' OR '1'='1`,
		`a; DROP TABLE notes; --`,
		`$1`,
		`$2::text`,
		`'); DELETE FROM notes; --`,
		`" OR ""="`,
		`%27`,
		`ünï ☃ 𝄞`,
		`*`,
		`x`,
	}
	for i, k := range keys {
		d.exec(t, `INSERT INTO notes (key, body) VALUES ($1, $2)`, k, "body of "+k+" #"+string(rune('0'+i)))
	}
	pool := newPool(t, d.url, nil)
	note := hostBinding(t, pool, postgres.SourceOptions{Name: "notes"}, postgres.SQLBinding{
		Definition: core.ResourceDefinition{URITemplate: "note://all/{key}", Name: "note"},
		Plan:       `SELECT key, version, 'text/plain' AS mime, true AS text FROM notes WHERE key = $key`,
		Body:       `SELECT version, body FROM notes WHERE key = $key`,
	})
	d.project(t, "p")
	d.textAsset(t, "p", "x", "reference x")
	d.grant(t, "alice", "p", "")
	st := newStore(t, pool, nil)
	r := pgGateway(t, append(st.Bindings(), note), pgAllowAll(nil))
	ctx := as(t.Context(), "alice")

	for i, k := range keys {
		t.Run(k, func(t *testing.T) {
			uri := "note://all/" + url.PathEscape(k)
			got, err := r.Read(ctx, uri)
			if err != nil {
				t.Fatalf("read %s: %v", uri, err)
			}
			if want := "body of " + k + " #" + string(rune('0'+i)); got.Items()[0].Text() != want {
				t.Fatalf("capture %q read %q, want %q", k, got.Items()[0].Text(), want)
			}
			if k == "x" {
				return
			}
			for _, ref := range []string{"asset://project/" + url.PathEscape(k) + "/asset/x", "asset://project/p/asset/" + url.PathEscape(k) + "/body"} {
				if _, err := r.Read(ctx, ref); core.KindOf(err) != core.FailureUnavailable {
					t.Fatalf("reference capture %q: %v, want unavailable", ref, err)
				}
			}
			if _, err := r.Read(ctx, "note://all/"+url.PathEscape(k+"' OR 'a'='a")); core.KindOf(err) != core.FailureUnavailable {
				t.Fatalf("a key that is not stored selected something: %v", err)
			}
		})
	}
	var notes, assets int
	if err := d.admin.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM notes), (SELECT count(*) FROM mcpres.assets)`).Scan(&notes, &assets); err != nil {
		t.Fatal(err)
	}
	if notes != len(keys) || assets != 1 {
		t.Fatalf("after the reads: %d notes, %d assets; want %d and 1", notes, assets, len(keys))
	}
}

// TestPGStoreLeavesNoPrincipalOrRoleOnThePooledConnection proves the
// principal, role and statement timeout a read sets are transaction-local:
// the next use of the same pooled connection sees none of them.
func TestPGStoreLeavesNoPrincipalOrRoleOnThePooledConnection(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	d.project(t, "p")
	d.textAsset(t, "p", "a", "alice's")
	d.grant(t, "alice", "p", "")
	c := countedPool(t, d.url, 1) // one connection: the next query reuses it
	st := newStore(t, c.pool, &refOptions{StatementTimeout: 1234 * time.Millisecond})
	if _, err := pgGateway(t, st.Bindings(), pgAllowAll(nil)).Read(as(t.Context(), "alice"), "asset://project/p/asset/a"); err != nil {
		t.Fatal(err)
	}
	var principal, role, timeout string
	if err := c.pool.QueryRow(t.Context(), `SELECT coalesce(current_setting('mcp.principal', true), ''), current_user::text, current_setting('statement_timeout')`).
		Scan(&principal, &role, &timeout); err != nil {
		t.Fatal(err)
	}
	if principal != "" || role == postgres.ReaderRole || timeout == "1234ms" {
		t.Fatalf("after a read the pooled connection has principal %q, role %q, statement_timeout %q", principal, role, timeout)
	}
}
