package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// TestSourceServesAReadWhoseStatementsItCheckedWhileCheckRuns: while the
// host's Source.Check is held (one of the file's statements reads a table
// an open transaction has locked), a read through another binding is
// served, its statements checked and proven alone; a read through a
// binding whose table has no row-level security is refused as the typed
// outage, and nothing of it is served; a read through the held binding
// waits with it, bounded by its own context. Once released, Check
// reports the unproven binding.
func TestSourceServesAReadWhoseStatementsItCheckedWhileCheckRuns(t *testing.T) {
	t.Parallel()
	url, admin := newDocsDB(t)
	id := acmeDocument(t, admin)
	heldTable(t, admin)
	applySQL(t, admin, `CREATE TABLE open_notes (id text PRIMARY KEY, body text NOT NULL); -- no row-level security
		GRANT SELECT ON open_notes TO docs_reader;
		INSERT INTO open_notes VALUES ('n', 'secret note')`)

	src, err := postgres.NewSource(newPool(t, url, nil), postgres.SourceOptions{Name: "docs", Role: "docs_reader"})
	if err != nil {
		t.Fatal(err)
	}
	bind := func(b postgres.SQLBinding) core.ResourceBinding {
		t.Helper()
		rb, err := src.Binding(b)
		if err != nil {
			t.Fatal(err)
		}
		return rb
	}
	res, err := core.NewResources([]core.ResourceBinding{
		bind(postgres.SQLBinding{
			Definition: core.ResourceDefinition{URITemplate: "held://x/{id}", Name: "held"},
			Plan:       `SELECT id AS key, 1 AS version, 'text/plain' AS mime, true AS text FROM held WHERE id = $id`,
			Body:       `SELECT body, 1 AS version FROM held WHERE id = $key`,
			Public:     true,
		}),
		bind(postgres.SQLBinding{
			Definition: core.ResourceDefinition{URITemplate: "doc://tenants/{tenant}/documents/{id}", Name: "document"},
			Plan: `SELECT d.id AS key, d.xmin AS version, d.content_type AS mime
				FROM documents d WHERE d.tenant_id = $tenant AND d.id::text = $id`,
			Body: `SELECT d.body, d.xmin AS version FROM documents d WHERE d.id::text = $key`,
		}),
		bind(postgres.SQLBinding{
			Definition: core.ResourceDefinition{URITemplate: "note://x/{id}", Name: "note"},
			Plan:       `SELECT id AS key, 1 AS version, 'text/plain' AS mime, true AS text FROM open_notes WHERE id = $id`,
			Body:       `SELECT body, 1 AS version FROM open_notes WHERE id = $key`,
			Public:     true,
		}),
	}, postgres.DatabaseDecides())
	if err != nil {
		t.Fatal(err)
	}

	lock := lockTable(t, admin, "held") // preparing a statement of held waits for it: Check is held
	checked := make(chan error, 1)
	go func() { checked <- src.Check(context.Background()) }()
	waitFor(t, func() bool { // Check waits on the lock
		var n int
		err := admin.QueryRow(t.Context(), `SELECT count(*) FROM pg_locks WHERE relation = 'held'::regclass AND NOT granted`).Scan(&n)
		return err == nil && n > 0
	})

	alice := core.WithCaller(t.Context(), core.Caller{Principal: "alice"})
	got, err := res.Read(alice, docURI("acme", id))
	if err != nil || len(got.Items()) != 1 || got.Items()[0].Text() != "the plan" {
		t.Fatalf("the document read while Check is held: %v %+v", err, got)
	}
	select {
	case err := <-checked:
		t.Fatalf("Check ended (%v) before its lock was released", err)
	default:
	}

	got, err = res.Read(alice, "note://x/n")
	if err == nil || core.KindOf(err) != core.FailureOutage || !errors.Is(err, postgres.ErrNotChecked) {
		t.Fatalf("the read of a table without row-level security while Check runs: %v (%v) %+v, want the outage of ErrNotChecked", err, core.KindOf(err), got)
	}

	short, cancel := context.WithTimeout(alice, 300*time.Millisecond)
	defer cancel()
	if _, err := res.Read(short, "held://x/h"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the read of the held table while Check is held: %v, want its own deadline", err)
	}

	if err := lock.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	err = <-checked
	var ce *core.ConfigError
	if !errors.As(err, &ce) || ce.Path.Binding != "note" {
		t.Fatalf("Check: %v, want the note binding's refusal", err)
	}
	// The document's statements were proven on their own: they serve.
	if got, err := res.Read(alice, docURI("acme", id)); err != nil || got.Items()[0].Text() != "the plan" {
		t.Fatalf("the document read after Check: %v", err)
	}
	// Check refused note: it serves nothing, as before a check.
	if _, err := res.Read(alice, "note://x/n"); !errors.Is(err, postgres.ErrNotChecked) {
		t.Fatalf("the note read after Check refused it: %v, want ErrNotChecked", err)
	}
}

// TestServeReadsWhileTheStartupCheckOfItsFileIsHeld: serve --config over
// HTTP, whose file's check waits on a table an open transaction has
// locked, answers a read through another resource of the file before the
// check ends, while /readyz still says the checks run; released, the
// check passes and /readyz is ready. Not parallel: the server takes the
// database's URL from the environment.
func TestServeReadsWhileTheStartupCheckOfItsFileIsHeld(t *testing.T) {
	url, admin := newDocsDB(t)
	id := acmeDocument(t, admin)
	heldTable(t, admin)
	t.Setenv("HELD_DATABASE_URL", url) // a URL with a password may not be written in the file
	file := filepath.Join(t.TempDir(), "resources.yaml")
	if err := os.WriteFile(file, []byte(`version: 1
sources:
  docs:
    postgres:
      url: ${HELD_DATABASE_URL}
      role: docs_reader
policy: database
resources:
  document:
    template: doc://tenants/{tenant}/documents/{id}
    source: docs
    plan: |
      SELECT d.id AS key, d.xmin AS version, d.content_type AS mime
      FROM documents d WHERE d.tenant_id = $tenant AND d.id::text = $id
    body: SELECT d.body, d.xmin AS version FROM documents d WHERE d.id::text = $key
  held:
    template: held://x/{id}
    source: docs
    public: true
    plan: SELECT id AS key, 1 AS version, 'text/plain' AS mime FROM held WHERE id = $id
    body: SELECT body, 1 AS version FROM held WHERE id = $key
`), 0o600); err != nil {
		t.Fatal(err)
	}
	lock := lockTable(t, admin, "held")

	srv := startListening(t, "--config="+file, "--principal=alice")
	cs := srv.connect(t, "")
	rctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // a read held with the check would wait for ever
	defer cancel()
	res, err := cs.ReadResource(rctx, &mcp.ReadResourceParams{URI: docURI("acme", id)})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "the plan" {
		t.Fatalf("the read while the check is held: %v %+v", err, res)
	}
	if code, body := srv.get(t, "/readyz"); code != 503 || !strings.Contains(body, "the start-up checks of the storage are running") {
		t.Fatalf("/readyz while the check is held: %d %s", code, body)
	}
	if err := lock.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { code, _ := srv.get(t, "/readyz"); return code == 200 })
}

// acmeDocument adds tenant acme, alice as its member and one document
// whose body is "the plan" to the documents schema of db, and returns the
// document's id.
func acmeDocument(t *testing.T, db *pgxpool.Pool) string {
	t.Helper()
	applySQL(t, db, `INSERT INTO tenants (id, name) VALUES ('acme', 'Acme');
		INSERT INTO memberships (user_id, tenant_id) VALUES ('alice', 'acme')`)
	var id string
	if err := db.QueryRow(t.Context(), `INSERT INTO documents (tenant_id, title, body) VALUES ('acme', 't', 'the plan') RETURNING id::text`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// heldTable adds table held, which docs_reader reads whole under
// row-level security, with row h.
func heldTable(t *testing.T, db *pgxpool.Pool) {
	t.Helper()
	applySQL(t, db, `CREATE TABLE held (id text PRIMARY KEY, body text NOT NULL);
		ALTER TABLE held ENABLE ROW LEVEL SECURITY;
		CREATE POLICY held_read ON held FOR SELECT TO docs_reader USING (true);
		GRANT SELECT ON held TO docs_reader;
		INSERT INTO held VALUES ('h', 'held body')`)
}

// lockTable locks table in an open transaction of db, which the test
// rolls back to release it (or the cleanup does).
func lockTable(t *testing.T, db *pgxpool.Pool, table string) pgx.Tx {
	t.Helper()
	tx, err := db.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	if _, err := tx.Exec(t.Context(), `LOCK TABLE `+table+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	return tx
}
