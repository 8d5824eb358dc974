package integration

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
	"go.phpboyscout.uk/mcp/resources/stores/storetest"
)

// TestPGStoreServesAnAssetAsFieldsAndBodyUnderDistinctURIs proves the ready
// bindings: the body with the row's MIME type, the fields as JSON under
// another URI, the project bundle and the index, all as the principal.
func TestPGStoreServesAnAssetAsFieldsAndBodyUnderDistinctURIs(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	d.project(t, "p1")
	d.project(t, "p2")
	d.textAsset(t, "p1", "a", "alpha body")
	d.exec(t, `INSERT INTO mcpres.assets (project_id, id, name, mime_type, body, object_bucket, object_key, object_etag, object_size)
		VALUES ('p1', 'b', 'b.bin', 'application/octet-stream', '\x00ff'::bytea, 'bkt', 'k/b', '"e1"', 2)`)
	d.grant(t, "alice", "p1", "")
	st := newStore(t, newPool(t, d.url, nil), nil)
	r := pgGateway(t, st.Bindings(), pgAllowAll(nil))
	ctx := as(t.Context(), "alice")

	body, err := r.Read(ctx, "asset://project/p1/asset/a/body")
	if err != nil || body.Partial() {
		t.Fatalf("read body: %v", err)
	}
	it := body.Items()[0]
	if it.URI() != "asset://project/p1/asset/a/body" || it.Text() != "alpha body" || it.MIMEType() != "text/plain" {
		t.Fatalf("body item %s %q %s", it.URI(), it.Text(), it.MIMEType())
	}
	blob, err := r.Read(ctx, "asset://project/p1/asset/b/body")
	if err != nil || !blob.Items()[0].IsBlob() || string(blob.Items()[0].Blob()) != "\x00\xff" {
		t.Fatalf("read blob body: %v", err)
	}

	fields, err := r.Read(ctx, "asset://project/p1/asset/b")
	if err != nil {
		t.Fatalf("read fields: %v", err)
	}
	fi := fields.Items()[0]
	if fi.URI() == blob.Items()[0].URI() || fi.MIMEType() != "application/json" {
		t.Fatalf("fields item %s %s: want its own URI and application/json", fi.URI(), fi.MIMEType())
	}
	var f struct {
		Project, ID, Name, MimeType string
		Version, BodySize           int64
		Body                        string
		Object                      struct {
			URI  string
			Size int64
		}
	}
	if err := json.Unmarshal([]byte(fi.Text()), &f); err != nil {
		t.Fatalf("fields JSON %s: %v", fi.Text(), err)
	}
	if f.Project != "p1" || f.ID != "b" || f.Version != 1 || f.BodySize != 2 || f.Body != "asset://project/p1/asset/b/body" ||
		f.Object.URI != "asset://project/p1/asset/b/object" || f.Object.Size != 2 {
		t.Fatalf("fields %+v from %s", f, fi.Text())
	}
	for _, private := range []string{"bkt", "k/b", "e1"} {
		if strings.Contains(fi.Text(), private) {
			t.Fatalf("the fields %s reveal the object's storage identity %q", fi.Text(), private)
		}
	}

	bundle, err := r.Read(ctx, "asset://project/p1")
	if err != nil || bundle.Partial() || len(bundle.Items()) != 2 {
		t.Fatalf("project bundle: %v, %d items", err, len(bundle.Items()))
	}
	if bundle.Items()[0].URI() != "asset://project/p1/asset/a" || bundle.Items()[1].URI() != "asset://project/p1/asset/b" {
		t.Fatalf("bundle items %s, %s: want the fields of a then b", bundle.Items()[0].URI(), bundle.Items()[1].URI())
	}

	index, err := r.Read(ctx, "asset://projects")
	if err != nil {
		t.Fatalf("index: %v", err)
	}
	if got, want := index.Items()[0].Text(), `{"projects" : [{"id" : "p1", "title" : "Project p1", "uri" : "asset://project/p1"}]}`; got != want {
		t.Fatalf("index = %s\nwant %s (p2 has no grant of alice)", got, want)
	}

	if _, err := r.Read(ctx, "asset://project/p2"); core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("ungranted project: %v, want unavailable", err)
	}
	if _, err := r.Read(as(t.Context(), "bob"), "asset://project/p1/asset/a/body"); core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("bob, without grants: %v, want unavailable", err)
	}
}

// TestPGStoreRevokedGrantBetweenPlanAndReadIsUnavailable proves Postgres
// enforces access: under a gateway policy that allows everything, a grant
// deleted after planning leaves that item unavailable without its body,
// while its sibling is served. The bundle's plan carries no content
// (bodiesBundle), so its bodies are read after the plan.
func TestPGStoreRevokedGrantBetweenPlanAndReadIsUnavailable(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	d.project(t, "p")
	d.textAsset(t, "p", "kept", "kept body")
	d.textAsset(t, "p", "revoked", "REVOKED-CANARY")
	d.grant(t, "alice", "p", "kept")
	d.grant(t, "alice", "p", "revoked")
	pool := newPool(t, d.url, nil)
	st := newStore(t, pool, nil)
	bodies, _ := bodiesBundle(t, pool, false)

	var once atomic.Bool
	r := pgGateway(t, []core.ResourceBinding{bodies}, pgAllowAll(func(ctx context.Context, _ core.ResourceTarget) {
		if once.CompareAndSwap(false, true) { // planned, not yet read
			d.revoke(t, "alice", "p", "revoked")
		}
	}))
	res, err := r.Read(as(t.Context(), "alice"), "body://project/p")
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	items, issues := itemTexts(res), issueCodes(res)
	if _, ok := items["asset://project/p/asset/kept/body"]; !ok {
		t.Fatalf("sibling not served: %v", items)
	}
	if _, ok := items["asset://project/p/asset/revoked/body"]; ok {
		t.Fatal("the revoked item was served")
	}
	if issues["asset://project/p/asset/revoked/body"] != core.IssueUnavailable {
		t.Fatalf("issues %v, want the revoked item unavailable", issues)
	}
	for _, text := range items {
		if strings.Contains(text, "REVOKED-CANARY") {
			t.Fatal("the revoked item's body reached the result")
		}
	}

	// The same through the reader alone: the target planned before the
	// revocation is refused by the storage request itself.
	d.grant(t, "alice", "p", "revoked")
	target := planned(t, as(t.Context(), "alice"), pgGateway(t, st.Bindings(), pgAllowAll(nil)), "asset://project/p/asset/revoked/body")
	d.revoke(t, "alice", "p", "revoked")
	p, err := storetest.ReadOne(as(t.Context(), "alice"), st.Reader(), whole(target))
	if core.KindOf(err) != core.FailureUnavailable || !p.IsZero() {
		t.Fatalf("reader after revocation: %v, payload %v; want Unavailable and no body", err, p.Text())
	}
}

// TestPGStoreUpdatedAssetIsNeverServedInItsNewVersionUnderTheOldPlan proves
// Postgres enforces identity: an update between plan and read makes that
// item read_failed (retryable) and its new content never appears, and a
// fresh read serves the new version. The bundle's plan carries no content
// (bodiesBundle), so its bodies are read after the plan.
func TestPGStoreUpdatedAssetIsNeverServedInItsNewVersionUnderTheOldPlan(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	d.project(t, "p")
	d.textAsset(t, "p", "a", "version one")
	d.textAsset(t, "p", "b", "sibling")
	d.grant(t, "alice", "p", "")
	pool := newPool(t, d.url, nil)
	st := newStore(t, pool, nil)
	bodies, _ := bodiesBundle(t, pool, false)

	var once atomic.Bool
	r := pgGateway(t, []core.ResourceBinding{bodies, st.BodyBinding()}, pgAllowAll(func(ctx context.Context, _ core.ResourceTarget) {
		if once.CompareAndSwap(false, true) {
			d.exec(t, `UPDATE mcpres.assets SET body = 'NEW-VERSION-CANARY' WHERE project_id = 'p' AND id = 'a'`)
		}
	}))
	res, err := r.Read(as(t.Context(), "alice"), "body://project/p")
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if code := issueCodes(res)["asset://project/p/asset/a/body"]; code != core.IssueReadFailed {
		t.Fatalf("changed item: issue %q, want read_failed", code)
	}
	for uri, text := range itemTexts(res) {
		if strings.Contains(text, "NEW-VERSION-CANARY") {
			t.Fatalf("%s served the new version under the old plan", uri)
		}
	}
	if !res.Issues()[0].Retryable() {
		t.Fatal("a changed item should be retryable")
	}

	// The reader alone, with a plan made before the update.
	d.exec(t, `UPDATE mcpres.assets SET body = 'version three' WHERE project_id = 'p' AND id = 'b'`)
	target := planned(t, as(t.Context(), "alice"), r, "asset://project/p/asset/b/body")
	d.exec(t, `UPDATE mcpres.assets SET body = 'version four' WHERE project_id = 'p' AND id = 'b'`)
	if _, err := storetest.ReadOne(as(t.Context(), "alice"), st.Reader(), whole(target)); !errors.Is(err, postgres.ErrChanged) {
		t.Fatalf("reader after update: %v, want ErrChanged", err)
	}
	fresh, err := r.Read(as(t.Context(), "alice"), "asset://project/p/asset/b/body")
	if err != nil || fresh.Items()[0].Text() != "version four" {
		t.Fatalf("fresh read: %v", err)
	}
}

// TestPGStoreChangedBodyIsNotTransferred proves the version pin is in the
// statement, not only in Go: reading a 1 MiB body whose asset changed after
// planning returns ErrChanged while the connection receives under 64 KiB.
func TestPGStoreChangedBodyIsNotTransferred(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	d.project(t, "p")
	d.exec(t, `INSERT INTO mcpres.assets (project_id, id, name, mime_type, body)
		VALUES ('p', 'a', 'a.bin', 'application/octet-stream', decode(repeat(md5('x'), 65536), 'hex'))`)
	d.grant(t, "alice", "p", "")
	c := countedPool(t, d.url, 1)
	st := newStore(t, c.pool, nil)
	ctx := as(t.Context(), "alice")
	target := planned(t, ctx, pgGateway(t, st.Bindings(), pgAllowAll(nil)), "asset://project/p/asset/a/body")
	if p, err := storetest.ReadOne(ctx, st.Reader(), whole(target)); err != nil || len(p.Blob()) != 1<<20 {
		t.Fatalf("read before the change: %v", err) // also prepares the statement
	}
	d.exec(t, `UPDATE mcpres.assets SET name = 'renamed.bin' WHERE project_id = 'p' AND id = 'a'`)
	before := c.wire.received.Load()
	_, err := storetest.ReadOne(ctx, st.Reader(), whole(target))
	if received := c.wire.received.Load() - before; !errors.Is(err, postgres.ErrChanged) || received >= 64<<10 {
		t.Fatalf("read after the change: %v with %d bytes received; want ErrChanged under 64 KiB", err, received)
	}
}
