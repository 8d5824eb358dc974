package integration

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// AuthorizeAll over the reference store answers every URI exactly as
// Authorize does, one statement per definition: single rows, bundles, a
// concrete URI, missing and ungranted rows, and an unmatched URI.
func TestPGAuthorizeAllAnswersAsAuthorizeInOneStatementPerDefinition(t *testing.T) {
	t.Parallel()
	d := liveDB(t)
	d.project(t, "q")
	d.textAsset(t, "q", "b1", "three")
	d.grant(t, "alice", "q", "b1")
	d.project(t, "hidden")
	d.textAsset(t, "hidden", "h1", "four")
	for i := range 6 { // with the 4 below, 10 bundles: more than one batch statement holds (7)
		id := "c" + strconv.Itoa(i)
		d.project(t, id)
		d.textAsset(t, id, "x", "five")
		d.grant(t, "alice", id, "")
	}
	counter := &statementCounter{}
	pool := newPool(t, d.url, func(c *pgxpool.Config) { c.ConnConfig.Tracer = counter })
	st := newStore(t, pool, nil)
	res := pgGateway(t, st.Bindings(), st.Policy())
	uris := []string{
		"asset://project/p/asset/a1", "asset://project/p/asset/a2", "asset://project/p/asset/missing",
		"asset://project/q/asset/b1", "asset://project/hidden/asset/h1",
		"asset://project/p", "asset://project/q", "asset://project/hidden", "asset://project/none",
		"asset://project/p/asset/a1/body", "asset://project/p/asset/a2/body",
		"asset://projects", "nothing://here",
		"asset://project/c0", "asset://project/c1", "asset://project/c2", "asset://project/c3", "asset://project/c4", "asset://project/c5",
	}
	ctx := as(context.Background(), "alice")
	n0 := counter.count()
	as, errs := res.AuthorizeAll(ctx, uris)
	stmts := counter.since(n0)
	if len(as) != len(uris) || len(errs) != len(uris) {
		t.Fatalf("%d answers and %d errors for %d URIs", len(as), len(errs), len(uris))
	}
	// Four definitions (asset, project, body, projects): one statement each,
	// the concrete URI planned alone, and the 10 bundles in two (at most 7
	// bundles of at most 1,025 rows each fit planBatchRows).
	if len(stmts) != 5 {
		t.Fatalf("%d statements for 4 definitions, one of them in two batches: %q", len(stmts), stmts)
	}
	batched := 0
	for _, s := range stmts {
		if strings.Contains(s, "mcpres_req") {
			batched++
		}
	}
	if batched != 4 {
		t.Fatalf("%d batch plan statements, want 4: %q", batched, stmts)
	}
	for i, uri := range uris {
		a, err := res.Authorize(ctx, uri)
		if (err == nil) != (errs[i] == nil) {
			t.Fatalf("%s: AuthorizeAll error %v, Authorize error %v", uri, errs[i], err)
		}
		if err != nil {
			if core.KindOf(err) != core.KindOf(errs[i]) || err.Error() != errs[i].Error() {
				t.Fatalf("%s: AuthorizeAll error %v, Authorize error %v", uri, errs[i], err)
			}
			continue
		}
		sameAuthorization(t, uri, as[i], a)
	}
	for i, want := range map[int]bool{0: true, 1: true, 2: false, 3: true, 4: false, 5: true, 8: false, 9: true, 12: false, 13: true, 18: true} {
		if (errs[i] == nil) != want {
			t.Errorf("%s: error %v, want success %v", uris[i], errs[i], want)
		}
	}
}

func sameAuthorization(t *testing.T, uri string, got, want core.Authorization) {
	t.Helper()
	same := func(a, b core.ResourceTarget) bool {
		return a.URI() == b.URI() && a.Representation() == b.Representation() && bytes.Equal(a.AuthorizationData(), b.AuthorizationData())
	}
	if !same(got.Requested(), want.Requested()) || got.Len() != want.Len() {
		t.Fatalf("%s: AuthorizeAll and Authorize disagree on the plan", uri)
	}
	for i := range got.Len() {
		if !same(got.Item(i), want.Item(i)) || got.Readable(i) != want.Readable(i) {
			t.Fatalf("%s: item %d: AuthorizeAll and Authorize disagree", uri, i)
		}
	}
}

// A plan statement that PostgreSQL refuses in the batch form (an aggregate
// of a variable alone, which becomes an aggregate of the requests) is
// planned one request at a time, with the same answers.
func TestPGAuthorizeAllPlansOneAtATimeWhenTheBatchFormIsRefused(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	counter := &statementCounter{}
	pool := newPool(t, d.url, func(c *pgxpool.Config) { c.ConnConfig.Tracer = counter })
	b := hostBinding(t, pool, postgres.SourceOptions{}, postgres.SQLBinding{
		Definition: core.ResourceDefinition{URITemplate: "odd://note/{id}", Name: "odd"},
		Plan:       `SELECT max($id) AS key, '1' AS version, 'text/plain' AS mime, true AS text WHERE $principal IS NOT NULL`,
		Body:       `SELECT 'x'::bytea AS body, '1' AS version WHERE $key IS NOT NULL AND $principal IS NOT NULL`,
	})
	res := pgGateway(t, []core.ResourceBinding{b}, postgres.DatabaseDecides())
	ctx := as(context.Background(), "alice")
	uris := []string{"odd://note/1", "odd://note/2", "odd://note/3"}
	for round := range 2 {
		n0 := counter.count()
		as, errs := res.AuthorizeAll(ctx, uris)
		stmts := counter.since(n0)
		for i, uri := range uris {
			if errs[i] != nil {
				t.Fatalf("round %d: %s: %v", round, uri, errs[i])
			}
			a, err := res.Authorize(ctx, uri)
			if err != nil {
				t.Fatal(err)
			}
			sameAuthorization(t, uri, as[i], a)
		}
		// The first round tries the batch form once; later rounds do not.
		want := len(uris) + 1 - round
		if len(stmts) != want {
			t.Fatalf("round %d: %d statements, want %d: %q", round, len(stmts), want, stmts)
		}
	}
}
