package integration

import (
	"errors"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// TestPGStoreChecksItselfOnceOnFirstUse proves the check of a store that
// the host never checked explicitly: on a database without the reference
// schema the first read fails with the check's *core.ConfigError (behind
// the gateway's failure) and nothing is served; once the migrations are
// applied the next read checks again and succeeds; and after that no read
// sends the check's queries again.
func TestPGStoreChecksItselfOnceOnFirstUse(t *testing.T) {
	t.Parallel()
	dbURL := harness.Postgres(t) // no migrations yet
	c := countedPool(t, dbURL, 1)
	st, err := postgres.NewStore(c.pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := pgGateway(t, st.Bindings(), st.Policy())
	ctx := as(t.Context(), "alice")
	var ce *core.ConfigError
	if _, err := r.Read(ctx, "asset://project/p/asset/a/body"); !errors.As(err, &ce) {
		t.Fatalf("a read before the migrations: %v, want the check's *core.ConfigError", err)
	}
	t.Logf("the check before the migrations: %v", ce)

	applyMigrations(t, dbURL)
	d := &pgDB{url: dbURL, admin: newPool(t, dbURL, nil)}
	d.project(t, "p")
	d.textAsset(t, "p", "a", "alpha")
	d.grant(t, "alice", "p", "")
	read := func() int64 {
		t.Helper()
		q0 := c.tracer.queries.Load()
		res, err := r.Read(ctx, "asset://project/p/asset/a/body")
		if err != nil || res.Items()[0].Text() != "alpha" {
			t.Fatalf("read after the migrations: %v", err)
		}
		return c.tracer.queries.Load() - q0
	}
	if q := read(); q == 0 {
		t.Fatal("the first read after a failed check sent no query: it did not check again")
	}
	if q := read(); q != 0 {
		t.Fatalf("a read after a successful check sent %d plain queries: the check ran again", q)
	}
	if err := st.Check(t.Context()); err != nil {
		t.Fatalf("Check after the store checked itself: %v", err)
	}
}
