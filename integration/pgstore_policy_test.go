package integration

import (
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
)

// TestPGStoreGrantsPolicyDecidesVisibilityAndReadFromTheGrantsTable proves
// the grants-backed policy: an asset without a grant is hidden from a
// bundle, a discover-only grant makes it a visible omission (unavailable,
// its URI disclosed only when the grant says so), a read grant serves it,
// and a caller without any grant in the project cannot open the bundle.
func TestPGStoreGrantsPolicyDecidesVisibilityAndReadFromTheGrantsTable(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	d.project(t, "p")
	for _, id := range []string{"hidden", "peek", "peek-quiet", "read"} {
		d.textAsset(t, "p", id, "body of "+id)
	}
	d.exec(t, `INSERT INTO mcpres.grants (principal, project_id, asset_id, can_discover, can_read, disclose_issue_uri) VALUES
		('alice', 'p', 'peek', true, false, true),
		('alice', 'p', 'peek-quiet', true, false, false),
		('alice', 'p', 'read', false, true, false)`)
	st := newStore(t, newPool(t, d.url, nil), nil)
	r := pgGateway(t, st.Bindings(), st.Policy())
	ctx := as(t.Context(), "alice")

	res, err := r.Read(ctx, "asset://project/p")
	if err != nil {
		t.Fatalf("read bundle: %v", err)
	}
	items := itemTexts(res)
	if len(items) != 2 || items["asset://project/p/asset/read"] == "" {
		t.Fatalf("items %v: want the warning and the readable asset only", items)
	}
	var codes []core.IssueCode
	var uris []string
	for _, is := range res.Issues() {
		codes, uris = append(codes, is.Code()), append(uris, is.ResourceURI())
	}
	if len(codes) != 2 || codes[0] != core.IssueUnavailable || codes[1] != core.IssueUnavailable ||
		uris[0] != "asset://project/p/asset/peek" || uris[1] != "" {
		t.Fatalf("issues %v %q: want peek (disclosed) and peek-quiet (undisclosed) unavailable, hidden absent", codes, uris)
	}

	if _, err := r.Read(ctx, "asset://project/p/asset/peek/body"); core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("a discover-only asset's body: %v, want unavailable", err)
	}
	if _, err := r.Read(ctx, "asset://project/p/asset/hidden"); core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("an ungranted asset: %v, want unavailable", err)
	}
	if got, err := r.Read(ctx, "asset://project/p/asset/read/body"); err != nil || got.Items()[0].Text() != "body of read" {
		t.Fatalf("a readable asset: %v", err)
	}
	if _, err := r.Read(as(t.Context(), "bob"), "asset://project/p"); core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("bob's bundle: %v, want unavailable", err)
	}
	if _, err := r.Read(t.Context(), "asset://projects"); core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("the index without a principal: %v, want unavailable", err)
	}
}
