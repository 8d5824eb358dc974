package integration

import (
	"errors"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// TestPGReferenceSourceServesOnlyOnceChecked proves the check of the
// reference file's source: on a database without the reference schema its
// Check is a *core.ConfigError and a read serves nothing (its statements
// are not checked); once the migrations are applied Check passes and the
// same gateway reads.
func TestPGReferenceSourceServesOnlyOnceChecked(t *testing.T) {
	t.Parallel()
	dbURL := harness.Postgres(t) // no migrations yet
	c := countedPool(t, dbURL, 1)
	st, err := newRefStore(c.pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ce *core.ConfigError
	if err := st.Check(t.Context()); !errors.As(err, &ce) {
		t.Fatalf("Check before the migrations: %v, want a *core.ConfigError", err)
	}
	t.Logf("the check before the migrations: %v", ce)
	r := pgGateway(t, st.Bindings(), st.Policy())
	ctx := as(t.Context(), "alice")
	if _, err := r.Read(ctx, "asset://project/p/asset/a/body"); !errors.Is(err, postgres.ErrNotChecked) {
		t.Fatalf("a read before a passed check: %v, want ErrNotChecked", err)
	}

	applyMigrations(t, dbURL)
	d := &pgDB{url: dbURL, admin: newPool(t, dbURL, nil)}
	d.project(t, "p")
	d.textAsset(t, "p", "a", "alpha")
	d.grant(t, "alice", "p", "")
	if err := st.Check(t.Context()); err != nil {
		t.Fatalf("Check after the migrations: %v", err)
	}
	res, err := r.Read(ctx, "asset://project/p/asset/a/body")
	if err != nil || res.Items()[0].Text() != "alpha" {
		t.Fatalf("read after the check: %v", err)
	}
}
