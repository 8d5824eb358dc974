package integration

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/mcpsdk"
	"go.phpboyscout.uk/mcp/resources/mcpsdk/audit"
	"go.phpboyscout.uk/mcp/resources/migrations"
)

// auditPageQueries returns the SQL blocks of docs/audit.md's section "Who
// read document X this week?", as the page shows them.
func auditPageQueries(t *testing.T) []string {
	t.Helper()
	page, err := os.ReadFile("../docs/audit.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(page), "\n## Who read document X this week?\n")
	if !ok {
		t.Fatal(`docs/audit.md has no section "Who read document X this week?"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var out []string
	for _, m := range regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(section, -1) {
		out = append(out, m[1])
	}
	if len(out) != 2 {
		t.Fatalf("the section shows %d SQL blocks, want the document's readers and the principal's reads", len(out))
	}
	return out
}

// The page's "who read document X this week" query, run exactly as the
// page shows it on rows the sink wrote, answers with the principal who was
// served the document this week, at the version and size served; not a
// reader of another document, nor a read of the document last week. The
// page's "everything one principal read" query lists that principal's
// reads of the period.
func TestAuditPageQueriesAnswerWhoReadADocument(t *testing.T) {
	t.Parallel()
	queries := auditPageQueries(t)
	const doc = "asset://project/handbook/asset/welcome/body"
	if !strings.Contains(queries[0], `'[{"uri": "`+doc+`"}]'`) || !strings.Contains(queries[0], "i->>'uri' = '"+doc+"'") {
		t.Fatalf("the page's query no longer asks for %s: update this test with it:\n%s", doc, queries[0])
	}
	if !strings.Contains(queries[1], "e.principal = 'alice'") {
		t.Fatalf("the page's second query no longer asks for alice's reads:\n%s", queries[1])
	}
	dbURL, _, flags := migratedAndSeeded(t)
	srv := startServer(t, append(flags, "--tokens="+tokensFile(t, "alice", "bob"), "--audit-postgres="+dbURL, "--audit-on-failure=refuse")...)
	ctx := t.Context()

	// Last week, alice read it too: the sink writes that row as it was.
	pool := newPool(t, dbURL, nil)
	sink, err := audit.NewPostgres(pool, audit.PostgresOptions{Table: migrations.AuditTable, Role: migrations.AuditorRole})
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Write(ctx, []*mcpsdk.AuditEvent{{Time: time.Now().Add(-8 * 24 * time.Hour), Method: mcpsdk.MethodReadResource,
		URI: doc, Principal: "alice", Revision: "old", Result: "complete", Items: []mcpsdk.AuditItem{{URI: doc, Version: "0", Size: 1}}}}); err != nil {
		t.Fatal(err)
	}
	// This week: alice reads the document, bob another one.
	res, err := srv.connect(t, "alice-token").ReadResource(ctx, &mcp.ReadResourceParams{URI: doc})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].URI != doc {
		t.Fatalf("alice's read: %+v, %v", res, err)
	}
	size := int64(len(res.Contents[0].Text))
	if _, err := srv.connect(t, "bob-token").ReadResource(ctx, &mcp.ReadResourceParams{URI: "asset://project/handbook/asset/architecture/object"}); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, dbURL)
	var version string
	if err := conn.QueryRow(ctx, `SELECT version::text FROM mcpres.assets WHERE project_id = 'handbook' AND id = 'welcome'`).Scan(&version); err != nil {
		t.Fatal(err)
	}

	rows, err := conn.Query(ctx, queries[0])
	if err != nil {
		t.Fatalf("the page's query fails: %v\n%s", err, queries[0])
	}
	readers, err := pgx.CollectRows(rows, pgx.RowToMap)
	if err != nil {
		t.Fatal(err)
	}
	if len(readers) != 1 {
		t.Fatalf("the page's query answers %d rows, want alice's read this week: %v", len(readers), readers)
	}
	r := readers[0]
	if r["principal"] != "alice" || r["client"] != "server-test/1" || r["version"] != version || r["size"] != size ||
		r["etag"] != nil || r["version_id"] != nil || r["issuer"] != nil || r["subject"] != nil {
		t.Fatalf("the page's query answers %v; want alice, at version %s, %d bytes", r, version, size)
	}
	if at, ok := r["at"].(time.Time); !ok || time.Since(at) > time.Minute {
		t.Fatalf("the page's query answers the read at %v, want now", r["at"])
	}

	rows, err = conn.Query(ctx, queries[1])
	if err != nil {
		t.Fatalf("the page's second query fails: %v\n%s", err, queries[1])
	}
	reads, err := pgx.CollectRows(rows, pgx.RowToMap)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range reads {
		uris = append(uris, r["uri"].(string))
		if r["method"] != mcpsdk.MethodReadResource || r["result"] != "complete" || r["items"] != int32(1) {
			t.Errorf("the page's second query answers %v, want one complete read of one item", r)
		}
	}
	if !slices.Equal(uris, []string{doc}) {
		t.Fatalf("the page's second query answers alice's reads %q, want this week's read of %s", uris, doc)
	}
}
