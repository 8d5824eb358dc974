package integration

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/core"
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
	}
	ctx := as(context.Background(), "alice")
	n0 := counter.count()
	as, errs := res.AuthorizeAll(ctx, uris)
	stmts := counter.since(n0)
	if len(as) != len(uris) || len(errs) != len(uris) {
		t.Fatalf("%d answers and %d errors for %d URIs", len(as), len(errs), len(uris))
	}
	// Four definitions (asset, project, body, projects): one statement each
	// at most, the concrete URI planned alone.
	if len(stmts) > 4 {
		t.Fatalf("%d statements for 4 definitions: %q", len(stmts), stmts)
	}
	if batched := strings.Count(strings.Join(stmts, "\n"), "mcpres_req"); batched < 3 {
		t.Fatalf("%d batch plan statements, want one for each of the 3 templates: %q", batched, stmts)
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
	for i, want := range map[int]bool{0: true, 1: true, 2: false, 3: true, 4: false, 5: true, 8: false, 9: true, 12: false} {
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
