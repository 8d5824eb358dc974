package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
)

// TestSessionSetUpHoldsForTheStatement proves, on the real server, that the
// set-up statement (which returns no columns) still sets everything for the
// statement after it: the role, the principal, the claims, the statement
// timeout and read-only, with and without a role switch, and that none of
// it outlives the transaction.
func TestSessionSetUpHoldsForTheStatement(t *testing.T) {
	t.Parallel()
	dbURL := harness.Postgres(t)
	pool, err := pgxpool.New(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	role := "r_" + strings.TrimPrefix(dbURL[strings.LastIndexByte(dbURL, '/')+1:], "mcpres_")
	if i := strings.IndexByte(role, '?'); i >= 0 {
		role = role[:i]
	}
	if _, err := pool.Exec(t.Context(), "CREATE ROLE "+pgx.Identifier{role}.Sanitize()+" NOLOGIN; GRANT "+pgx.Identifier{role}.Sanitize()+" TO current_user"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize()) })

	const probe = `SELECT current_user::text, current_setting('mcp.principal'), current_setting('mcp.claims'),
		current_setting('statement_timeout'), current_setting('transaction_read_only')`
	for _, tc := range []struct {
		name     string
		opts     sessionOptions
		wantUser string
	}{
		{"role", sessionOptions{Role: role, StatementTimeout: 1500 * time.Millisecond}, role},
		{"login role", sessionOptions{LoginRole: true, StatementTimeout: 1500 * time.Millisecond}, ""},
	} {
		s, err := newSession(pool, &tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		ctx := core.WithCaller(t.Context(), core.Caller{Principal: "alice", Claims: []byte(`{"tenant":"acme"}`)})
		var got [5]string
		n := 0
		if err := s.query(ctx, probe, nil, func(r pgx.Rows) error {
			n++
			return r.Scan(&got[0], &got[1], &got[2], &got[3], &got[4])
		}); err != nil || n != 1 {
			t.Fatalf("%s: %v (%d rows)", tc.name, err, n)
		}
		want := [5]string{tc.wantUser, "alice", `{"tenant":"acme"}`, "1500ms", "on"}
		if tc.wantUser == "" {
			want[0] = got[0] // the login role, whatever the harness connects as
			if got[0] == role {
				t.Errorf("%s: ran as %s", tc.name, role)
			}
		}
		if got != want {
			t.Errorf("%s: the statement saw %q, want %q", tc.name, got, want)
		}
	}
	// Nothing outlives the transaction: the next statement on the
	// connection sees the login role, no principal, the server's timeout
	// and a writable transaction.
	conn, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var user, principal, ro string
	if err := conn.QueryRow(t.Context(), `SELECT current_user::text, coalesce(current_setting('mcp.principal', true), ''), current_setting('transaction_read_only')`).Scan(&user, &principal, &ro); err != nil {
		t.Fatal(err)
	}
	if user == role || principal != "" || ro != "off" {
		t.Errorf("after the transaction: user %s, principal %q, read-only %s", user, principal, ro)
	}
}
