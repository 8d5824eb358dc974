package integration

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/pressly/goose/v3"

	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
	"go.phpboyscout.uk/mcp/resources/mcpsdk/audit"
	"go.phpboyscout.uk/mcp/resources/migrations"
)

// auditTableColumns reads an event back from its row, one field per
// column, in the order the rows were written.
const auditTableColumns = `SELECT at, duration_us, method, coalesce(tool, ''), coalesce(uri, ''), uris, uris_omitted,
	coalesce(principal, ''), coalesce(issuer, ''), coalesce(subject, ''), coalesce(session_id, ''), coalesce(client, ''),
	coalesce(transport, ''), revision, coalesce(trace_id, ''), result, coalesce(error_kind, ''), items, missing,
	missing_uncounted, removed
	FROM mcpres.audit_events ORDER BY id`

func auditTableEvents(t *testing.T, dbURL string) []mcpsdk.AuditEvent {
	t.Helper()
	rows, err := connect(t, dbURL).Query(t.Context(), auditTableColumns)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (mcpsdk.AuditEvent, error) {
		var e mcpsdk.AuditEvent
		var us int64
		err := r.Scan(&e.Time, &us, &e.Method, &e.Tool, &e.URI, &e.URIs, &e.URIsOmitted, &e.Principal, &e.Issuer, &e.Subject,
			&e.Session, &e.Client, &e.Transport, &e.Revision, &e.TraceID, &e.Result, &e.ErrorKind, &e.Items, &e.Missing,
			&e.MissingUncounted, &e.Removed)
		e.Time, e.Duration = e.Time.UTC(), time.Duration(us)*time.Microsecond
		return e, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The PostgreSQL sink writes every field of an event to a column of its
// own and reads back as the same event: removed (what decided each
// removal) and a listen's uris included. An event that removed nothing
// says so ([]), and a row written before version 5 stays as it was, with
// removed NULL: unknown, not "nothing".
func TestAuditPostgresSinkWritesEveryField(t *testing.T) {
	t.Parallel()
	dbURL := harness.Postgres(t)
	ctx := t.Context()
	migrateUpTo(t, dbURL, 4)
	conn := connect(t, dbURL)
	if _, err := conn.Exec(ctx, `INSERT INTO mcpres.audit_events (at, duration_us, method, revision, result)
		VALUES (now(), 1, 'resources/read', 'before-5', 'complete')`); err != nil {
		t.Fatal(err)
	}
	if applied := applyMigrations(t, dbURL); !slices.Equal(applied, []int64{5}) {
		t.Fatalf("applied %v over version 4, want [5]", applied)
	}

	now := time.Now().UTC().Truncate(time.Microsecond)
	full := mcpsdk.AuditEvent{Time: now, Duration: 1234 * time.Microsecond, Method: mcpsdk.MethodReadResource, Tool: "read_resource",
		URI: "doc://a", URIs: []string{"doc://a", "doc://b"}, URIsOmitted: 2, Principal: "alice", Issuer: "https://issuer", Subject: "sub-1",
		Session: "s1", Client: "c/1", Transport: "http", Revision: "rev", TraceID: "0af7651916cd43dd8448eb211c80319c",
		Result: "partial", ErrorKind: "unavailable",
		Items:   []mcpsdk.AuditItem{{URI: "doc://a/1", Version: "7", ETag: `"e"`, VersionID: "v1", Size: 12, MIMEType: "text/plain"}},
		Missing: map[string]int{"read_failed": 1}, MissingUncounted: 3,
		Removed: []mcpsdk.AuditRemoved{
			{Kind: "requested", Stage: "plan", DecidedBy: "grant statement on docs", Count: 1},
			{Kind: "hidden", Stage: "recheck", DecidedBy: "policy.decide on docs", Count: 2},
			{Kind: "read_failed", Stage: "read", Count: 1},
		}}
	// Every field is set, so that a field the sink does not write fails
	// the comparison below.
	v := reflect.ValueOf(full)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the test event leaves %s unset", v.Type().Field(i).Name)
		}
	}
	listen := mcpsdk.AuditEvent{Time: now, Method: mcpsdk.MethodSubscriptionsListen, URIs: []string{"doc://a"}, Revision: "rev", Result: "complete"}
	list := mcpsdk.AuditEvent{Time: now, Method: mcpsdk.MethodListResources, Revision: "rev", Result: "complete"}

	sink, err := audit.NewPostgres(newPool(t, dbURL, nil), audit.PostgresOptions{Table: migrations.AuditTable, Role: migrations.AuditorRole})
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Write(ctx, []*mcpsdk.AuditEvent{&full, &listen, &list}); err != nil {
		t.Fatal(err)
	}
	got := auditTableEvents(t, dbURL)
	if len(got) != 4 {
		t.Fatalf("%d rows, want the one before version 5 and three", len(got))
	}
	// What the sink writes for "none": no items and no removals are [],
	// the rest absent.
	listen.Items, listen.Removed = []mcpsdk.AuditItem{}, []mcpsdk.AuditRemoved{}
	list.Items, list.Removed = []mcpsdk.AuditItem{}, []mcpsdk.AuditRemoved{}
	for i, want := range []mcpsdk.AuditEvent{full, listen, list} {
		if !reflect.DeepEqual(got[i+1], want) {
			t.Errorf("row %d reads back as\n%+v\nwant\n%+v", i+1, got[i+1], want)
		}
	}
	if old := got[0]; old.Revision != "before-5" || old.Removed != nil || old.URIs != nil || old.URIsOmitted != 0 {
		t.Errorf("the row written before version 5 reads back as %+v, want removed and uris NULL", old)
	}
}

// A read refused end to end lands in the table with what decided it: the
// removed column names the requested target, its stage and check's words
// for the grant that refused it.
func TestAuditTableSaysWhatDecidedARefusedRead(t *testing.T) {
	t.Parallel()
	dbURL, _, flags := migratedAndSeeded(t)
	srv := startServer(t, append(flags, "--tokens="+tokensFile(t, "bob"), "--audit-postgres="+dbURL, "--audit-on-failure=refuse")...)
	bob := srv.connect(t, "bob-token")
	const salaries = "asset://project/handbook/asset/salaries"
	if _, err := bob.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: salaries}); err == nil {
		t.Fatal("bob read the salaries")
	}
	var got []mcpsdk.AuditRemoved
	var result, errorKind string
	if err := connect(t, dbURL).QueryRow(t.Context(), `SELECT removed, result, coalesce(error_kind, '') FROM mcpres.audit_events
		WHERE method = 'resources/read' AND uri = $1 AND principal = 'bob'`, salaries).Scan(&got, &result, &errorKind); err != nil {
		t.Fatal(err)
	}
	if result != "error" || errorKind != "unavailable" || len(got) != 1 || got[0].Kind != "requested" || got[0].Count != 1 ||
		(got[0].Stage != "plan" && got[0].Stage != "decide") || got[0].DecidedBy == "" {
		t.Fatalf("bob's refused read: %s %s, removed %+v; want one requested target with its stage and decider", result, errorKind, got)
	}
}

// The sink's Check says, before any event, that a database at version 4
// lacks the columns of version 5 (naming them), that one without the
// audit table lacks it, that a role that does not exist is named, and
// that it passes once the migrations are applied.
func TestAuditPostgresCheckNamesWhatTheTableLacks(t *testing.T) {
	t.Parallel()
	dbURL := harness.Postgres(t)
	ctx := t.Context()
	sink, err := audit.NewPostgres(newPool(t, dbURL, nil), audit.PostgresOptions{Table: migrations.AuditTable, Role: migrations.AuditorRole})
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Check(ctx); !errors.Is(err, audit.ErrTable) || !strings.Contains(err.Error(), "no table mcpres.audit_events") {
		t.Fatalf("Check before any migration: %v, want no table", err)
	}
	migrateUpTo(t, dbURL, 4)
	if err := sink.Check(ctx); !errors.Is(err, audit.ErrTable) || !strings.Contains(err.Error(), "no column removed, uris, uris_omitted") {
		t.Fatalf("Check at version 4: %v, want the columns of version 5 named", err)
	}
	if applied := applyMigrations(t, dbURL); !slices.Equal(applied, []int64{5}) {
		t.Fatalf("applied %v over version 4, want [5]", applied)
	}
	if err := sink.Check(ctx); err != nil {
		t.Fatalf("Check after the migrations: %v", err)
	}
	other, err := audit.NewPostgres(newPool(t, dbURL, nil), audit.PostgresOptions{Table: migrations.AuditTable, Role: "no_such_auditor"})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Check(ctx); !errors.Is(err, audit.ErrTable) || !strings.Contains(err.Error(), "no role no_such_auditor") {
		t.Fatalf("Check with a role that does not exist: %v", err)
	}
}

// migrateUpTo applies the module's migrations to the database of dbURL up
// to version v, as an older release left it.
func migrateUpTo(t *testing.T, dbURL string, v int64) {
	t.Helper()
	p, err := goose.NewProvider(goose.DialectPostgres, openSQL(t, dbURL), migrations.FS(),
		goose.WithTableName(migrations.VersionTable), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(t.Context(), v); err != nil {
		t.Fatal(err)
	}
}
