package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/core"
)

// sourceOf returns a checked-later Source over d's pool that runs as a role
// of its own (a member of the login role's, reading docs).
func (d *bodiesDB) sourceOf(t *testing.T, opts SourceOptions) *Source {
	t.Helper()
	var db string
	if err := d.pool.QueryRow(t.Context(), `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	name := "r_" + db[max(0, len(db)-20):] + "_" + opts.Name
	role := pgx.Identifier{name}.Sanitize()
	d.exec(t, `CREATE ROLE `+role+` NOLOGIN`)
	t.Cleanup(func() { _, _ = d.pool.Exec(context.Background(), `DROP OWNED BY `+role+`; DROP ROLE IF EXISTS `+role) })
	d.exec(t, `GRANT `+role+` TO current_user`)
	d.exec(t, `GRANT SELECT ON docs, grants TO `+role)
	opts.Role = name
	src, err := NewSource(d.pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// docsBundle is a bundle of the docs whose id starts with the capture.
func docsBundle(body string) SQLBinding {
	return SQLBinding{
		Definition: core.ResourceDefinition{Name: "docs", URITemplate: "doc://b/{g}"},
		Bundle:     `SELECT id AS key, version, 'text/plain' AS mime, id FROM docs WHERE starts_with(id, $g) ORDER BY id`,
		ItemURI:    "doc://d/{id}",
		Body:       body,
	}
}

// TestSQLBindingReadsARequestInOneStatement proves the binding's reader
// is a native batch reader: the row items of a request are read by one
// statement in one round trip, each pinned to its planned version and
// bounded by its limit, the bodies together by the budget; an item the
// binding did not plan is ErrBadTarget and costs nothing; a request of
// more items than MaxPlanItems is read in statements of at most that many,
// the budget running on across them.
func TestSQLBindingReadsARequestInOneStatement(t *testing.T) {
	t.Parallel()
	d := newBodiesDB(t)
	for _, id := range []string{"a1", "a2", "a3", "b1", "b2"} {
		d.doc(t, id, 1, []byte("body of "+id))
	}
	src := d.sourceOf(t, SourceOptions{MaxPlanItems: 3})
	b, err := src.Binding(docsBundle(bodyByKey))
	if err != nil {
		t.Fatal(err)
	}
	other, err := src.Binding(SQLBinding{
		Definition: core.ResourceDefinition{Name: "doc", URITemplate: "doc://one/{id}"},
		Plan:       `SELECT id AS key, version, 'text/plain' AS mime FROM docs WHERE id = $id`,
		Body:       bodyByKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx := core.WithCaller(t.Context(), core.Caller{Principal: "alice"})
	res, err := core.NewResources([]core.ResourceBinding{b, other}, DatabaseDecides())
	if err != nil {
		t.Fatal(err)
	}
	targets := func(uri string) []core.ResourceTarget {
		a, err := res.Authorize(ctx, uri)
		if err != nil {
			t.Fatalf("authorize %s: %v", uri, err)
		}
		out := make([]core.ResourceTarget, a.Len())
		for i := range out {
			out[i] = a.Item(i)
		}
		return out
	}
	as, bs, one := targets("doc://b/a"), targets("doc://b/b"), targets("doc://one/a1")
	d.doc(t, "a2", 2, []byte("changed"))

	// One request: a1 a2(changed) a3 [doc a1: another binding's] b1 b2,
	// a3's limit below its size, a budget that b2 overflows.
	item := func(tg core.ResourceTarget, limit int64) core.ReadItem {
		return core.ReadItem{Target: tg, Limit: limit}
	}
	req := core.ReadRequest{Items: []core.ReadItem{item(as[0], 100), item(as[1], 100), item(as[2], 5), item(one[0], 100), item(bs[0], 100), item(bs[1], 100)},
		Budget: int64(len("body of a1") + len("body of b1") + 3)}
	if _, err := b.Reader.Read(ctx, req); err != nil { // prepares the statement on the connection
		t.Fatal(err)
	}
	b0, t0 := d.w.batches.Load(), d.w.trips.Load()
	out, err := b.Reader.Read(ctx, req)
	if err != nil || len(out) != len(req.Items) {
		t.Fatalf("read: %v, %d results", err, len(out))
	}
	// Six items, five of them the binding's, MaxPlanItems 3: two statements.
	if batches, trips := d.w.batches.Load()-b0, d.w.trips.Load()-t0; batches != 2 || trips != 2 {
		t.Errorf("%d batches, %d round trips; want 2, 2 (two statements of at most MaxPlanItems items)", batches, trips)
	}
	if out[0].Err != nil || out[0].Payload.Text() != "body of a1" {
		t.Errorf("a1: %q, %v", out[0].Payload.Text(), out[0].Err)
	}
	if !errors.Is(out[1].Err, ErrChanged) {
		t.Errorf("a2: %v, want ErrChanged", out[1].Err)
	}
	if tl, ok := errors.AsType[*core.TooLargeError](out[2].Err); !ok || tl.Size != int64(len("body of a3")) {
		t.Errorf("a3: %v, want TooLarge(%d)", out[2].Err, len("body of a3"))
	}
	if !errors.Is(out[3].Err, ErrBadTarget) {
		t.Errorf("another binding's item: %v, want ErrBadTarget", out[3].Err)
	}
	if out[4].Err != nil || out[4].Payload.Text() != "body of b1" {
		t.Errorf("b1: %q, %v", out[4].Payload.Text(), out[4].Err)
	}
	if tl, ok := errors.AsType[*core.TooLargeError](out[5].Err); !ok || tl.Size != int64(len("body of b2")) {
		t.Errorf("b2: %v, want TooLarge(%d): past the budget", out[5].Err, len("body of b2"))
	}

	// A request of nothing the binding planned sends nothing.
	b0 = d.w.batches.Load()
	if out, err := b.Reader.Read(ctx, core.ReadRequest{Items: []core.ReadItem{item(one[0], 100)}, Budget: 100}); err != nil || !errors.Is(out[0].Err, ErrBadTarget) {
		t.Errorf("another binding's item alone: %v, %v", out, err)
	}
	if n := d.w.batches.Load() - b0; n != 0 {
		t.Errorf("another binding's item alone cost %d batches", n)
	}

	// Through the gateway, a bundle of three costs the plan and one
	// statement for the bodies.
	b0 = d.w.batches.Load()
	r, err := res.Read(ctx, "doc://b/a")
	if err != nil || len(r.Items()) != 3 || r.Items()[2].Text() != "body of a3" {
		t.Fatalf("read the bundle: %v", err)
	}
	if n := d.w.batches.Load() - b0; n != 2 {
		t.Errorf("a bundle of 3 cost %d batches, want 2", n)
	}
}

// TestSQLBindingBodyThatCannotReadABundleIsAConfigMistake proves that a
// body statement that prepares alone but not as the statement that reads
// many items (it uses $key where PostgreSQL takes no column of the items) is
// refused by Check as a mistake of the binding's Body, with its path.
func TestSQLBindingBodyThatCannotReadABundleIsAConfigMistake(t *testing.T) {
	t.Parallel()
	d := newBodiesDB(t)
	src := d.sourceOf(t, SourceOptions{Name: "docs"})
	// count($key) alone is an aggregate of the items' column, which
	// PostgreSQL refuses in the FROM clause it is read in.
	if _, err := src.Binding(docsBundle(`SELECT min(body::text) AS body, max(version) AS version FROM docs WHERE id = $key HAVING count($key) = 1`)); err != nil {
		t.Fatal(err)
	}
	err := src.Check(t.Context())
	ce, ok := errors.AsType[*core.ConfigError](err)
	if !ok || ce.Path != (core.ConfigPath{Source: "docs", Binding: "docs", Field: "Body"}) || !strings.Contains(ce.Reason, "reads a bundle's items at once") {
		t.Fatalf("Check = %v (%+v), want a ConfigError at the binding's Body saying it cannot read a bundle's items at once", err, ce)
	}
	if !strings.Contains(err.Error(), "aggregate functions are not allowed") {
		t.Errorf("%v: the server's message is missing", err)
	}
}

// grantsDecide is a decide statement over the grants table.
const grantsDecide = `SELECT doc AS key, visible, read, disclose FROM grants WHERE principal = $principal AND doc = ANY($keys)`

// TestSQLBindingFoldsThePolicysRecheck proves that when the gateway names
// the source's policy as the one in force (core.ReadRequest.Policy), the
// bodies statement evaluates its decide statement for each item in the
// same statement and returns its answer as the item's Decision, naming
// the policy (readable, visible but denied, hidden for a key it has no row
// for), so that a bundle read under the source's policy costs the plan and
// the bodies statement alone; under another policy (the same callbacks
// without the key), or with a decide statement that binds $captures, the
// reader returns no Decision and the recheck is a statement of its own.
func TestSQLBindingFoldsThePolicysRecheck(t *testing.T) {
	t.Parallel()
	d := newBodiesDB(t)
	for _, id := range []string{"a", "b", "c"} {
		d.doc(t, id, 1, []byte("body of "+id))
	}
	d.exec(t, `INSERT INTO grants VALUES ('alice', 'a', true, true, true), ('alice', 'b', true, false, true)`)
	bundle := docsBundle(bodyByKey)
	bundle.Bundle = `SELECT id AS key, version, 'text/plain' AS mime, id, true AS visible, true AS read, true AS disclose FROM docs WHERE $g IS NOT NULL ORDER BY id`
	ctx := core.WithCaller(t.Context(), core.Caller{Principal: "alice"})
	for i, tc := range []struct {
		name   string
		other  bool // served under another policy: the callbacks without the key
		decide string
		folded bool
	}{
		{"folded", false, grantsDecide, true},
		{"under another policy", true, grantsDecide, false},
		{"a decide statement with $captures", false, grantsDecide + ` AND $captures IS NOT NULL`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := d.sourceOf(t, SourceOptions{Name: fmt.Sprint("s", i)})
			b, err := src.Binding(bundle)
			if err != nil {
				t.Fatal(err)
			}
			policy, err := src.Policy(tc.decide)
			if err != nil {
				t.Fatal(err)
			}
			if err := src.Check(t.Context()); err != nil {
				t.Fatal(err)
			}
			key := policy.Key(b.Definition)
			if tc.other {
				policy.Key, key = nil, nil
			}
			res, err := core.NewResources([]core.ResourceBinding{b}, policy)
			if err != nil {
				t.Fatal(err)
			}
			read := func() (*core.ResourceResult, int64) {
				b0 := d.w.batches.Load()
				r, err := res.Read(ctx, "doc://b/all")
				if err != nil {
					t.Fatalf("read: %v", err)
				}
				return r, d.w.batches.Load() - b0
			}
			read() // prepares the statements on the connection
			r, batches := read()
			want := int64(2) // the plan, the bodies with their recheck
			if !tc.folded {
				want = 3 // and the decide statement
			}
			if batches != want {
				t.Errorf("%d batches, want %d", batches, want)
			}
			items := r.Items()
			if !r.Partial() || len(items) != 2 || items[1].URI() != "doc://d/a" || items[1].Text() != "body of a" {
				t.Fatalf("items %v, partial %v: want the warning and a", items, r.Partial())
			}
			if is := r.Issues(); len(is) != 1 || is[0].Code() != core.IssueUnavailable || is[0].ResourceURI() != "doc://d/b" {
				t.Errorf("issues %+v: want b denied, c hidden without a trace", is)
			}

			a, err := res.Authorize(ctx, "doc://b/all")
			if err != nil || a.Len() != 3 {
				t.Fatalf("authorize: %v", err)
			}
			req := core.ReadRequest{Budget: 1000, Policy: key}
			for i := range a.Len() {
				req.Items = append(req.Items, core.ReadItem{Target: a.Item(i), Limit: 100})
			}
			out, err := b.Reader.Read(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			wantDecisions := []*core.TargetDecision{
				{Visibility: core.Visibility{Visible: true, DiscloseIssueURI: true}, Read: true, Policy: key},
				{Visibility: core.Visibility{Visible: true, DiscloseIssueURI: true}, Policy: key},
				{Policy: key},
			}
			for i, o := range out {
				switch {
				case !tc.folded && o.Decision != nil:
					t.Errorf("item %d: Decision %+v, want none", i, *o.Decision)
				case tc.folded && (o.Decision == nil || *o.Decision != *wantDecisions[i]):
					t.Errorf("item %d: Decision %+v, want %+v", i, o.Decision, *wantDecisions[i])
				}
			}
		})
	}
}

// TestSQLBindingPlansSmallContentInline proves that a plan's content
// column plans the item with its content, so a read costs the plan alone;
// that under a gateway policy other than the source's (one that allows
// everything) an item the plan's read column denies is not served: its
// content is not planned and the reader refuses it without a statement;
// that content over the inline bound is not transferred and the body
// statement reads the item; and that a content column without visible and
// read is a mistake Check reports at the plan.
func TestSQLBindingPlansSmallContentInline(t *testing.T) {
	t.Parallel()
	d := newBodiesDB(t)
	d.doc(t, "small", 1, []byte("small body"))
	d.doc(t, "big", 1, body(inlineMaxBytes+1, 'x'))
	d.doc(t, "denied", 1, []byte("DENIED-CANARY"))
	src := d.sourceOf(t, SourceOptions{Name: "docs"})
	b, err := src.Binding(SQLBinding{
		Definition: core.ResourceDefinition{Name: "doc", URITemplate: "doc://one/{id}"},
		Plan: `SELECT id AS key, version, 'text/plain' AS mime, true AS text, true AS visible, id <> 'denied' AS read, false AS disclose,
			body AS content FROM docs WHERE id = $id`,
		Body: bodyByKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx := core.WithCaller(t.Context(), core.Caller{Principal: "alice"})
	res, err := core.NewResources([]core.ResourceBinding{b}, DatabaseDecides())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id      string
		size    int
		batches int64
	}{{"small", len("small body"), 1}, {"big", inlineMaxBytes + 1, 2}} {
		res.Read(ctx, "doc://one/"+tc.id) // prepares
		b0 := d.w.batches.Load()
		r, err := res.Read(ctx, "doc://one/"+tc.id)
		if err != nil || len(r.Items()) != 1 || len(r.Items()[0].Text()) != tc.size {
			t.Fatalf("read %s: %v", tc.id, err)
		}
		if n := d.w.batches.Load() - b0; n != tc.batches {
			t.Errorf("read %s: %d batches, want %d", tc.id, n, tc.batches)
		}
	}

	b0 := d.w.batches.Load()
	if _, err := res.Read(ctx, "doc://one/denied"); core.KindOf(err) != core.FailureUnavailable {
		t.Errorf("read the denied item: %v, want unavailable", err)
	}
	if n := d.w.batches.Load() - b0; n != 1 {
		t.Errorf("read the denied item: %d batches, want the plan alone", n)
	}

	bad := d.sourceOf(t, SourceOptions{Name: "bad"})
	if _, err := bad.Binding(SQLBinding{
		Definition: core.ResourceDefinition{Name: "doc", URITemplate: "doc://one/{id}"},
		Plan:       `SELECT id AS key, version, 'text/plain' AS mime, body AS content FROM docs WHERE id = $id`,
		Body:       bodyByKey,
	}); err != nil {
		t.Fatal(err)
	}
	err = bad.Check(t.Context())
	if ce, ok := errors.AsType[*core.ConfigError](err); !ok || ce.Path != (core.ConfigPath{Source: "bad", Binding: "doc", Field: "Plan"}) || !strings.Contains(ce.Reason, `"visible" and "read"`) {
		t.Errorf("content without visible and read: Check = %v, want a ConfigError at the plan", err)
	}
}
