package integration

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// TestPGStoreRoundTripsPerReadUnderTheGrantsPolicy counts, with a pgx
// tracer and at the connection, the PostgreSQL round trips of one read of
// each kind of URI of the reference bindings under the store's own grants
// policy, objects joined from S3 as the reference server does: the plan
// carries the grant flags for the decision before the reads, and the
// recheck is folded into the bodies statement (the same snapshot as the
// bodies) or taken with the content a plan returned. One small body read
// costs 1 round trip (its plan returns it; it was 10 before Decide, 3 with
// a recheck statement of its own), a project bundle of any N 1 (its
// bundle statement returns each asset's fields; it was N + 2 while each
// item had its own statement), the index 1 (its plan returns it), an
// asset's fields and object 2 (the plan returns the fields; the object's
// recheck follows its read from S3). S3 requests are not counted here (the object store's own
// tests count them).
func TestPGStoreRoundTripsPerReadUnderTheGrantsPolicy(t *testing.T) {
	t.Parallel()
	const n = 8 // text assets; the project bundle also holds the object asset
	d := newPGDB(t)
	d.project(t, "p")
	for i := range n {
		d.textAsset(t, "p", fmt.Sprintf("a%03d", i), "body")
	}
	env := harness.S3(t)
	client := s3Client(t, env, &wire{})
	bucket, err := s3store.OpenBucket(t.Context(), client, env.Bucket, nil)
	if err != nil {
		t.Fatal(err)
	}
	obj := putObject(t, client, env.Bucket, "o.txt", "text/plain", []byte("object body"))
	d.exec(t, `INSERT INTO mcpres.assets (project_id, id, name, title, mime_type,
			object_bucket, object_key, object_etag, object_version_id, object_size)
		VALUES ('p', 'obj', 'o.txt', 'Object', 'text/plain', $1, $2, $3, NULL, $4)`,
		obj.Bucket, obj.Key, obj.ETag, obj.Size)
	d.grant(t, "alice", "p", "")

	c := countedPool(t, d.url, 1)
	st := newStore(t, c.pool, &refOptions{Objects: bucket, Keyed: true})
	batch := pgGateway(t, st.Bindings(), st.Policy(), objectsOf(bucket))
	ctx := as(t.Context(), "alice")

	kinds := []struct {
		name, uri string
		items     int   // application items of the read, or -1 for a list page
		want      int64 // plan (+ bodies over 8 KiB with their recheck) (+ the recheck of an object)
		max       int64 // the issue's bound: 2 for a body, 3 for a bundle of one source, 1 for the index
	}{
		{"index", "asset://projects", 1, 1, 1},
		// The requested bundle target is decided without a statement.
		{"project bundle", "asset://project/p", n + 1, 1, 3},
		{"joined asset", "asset://project/p/asset/obj", 2, 1 + 1, 2}, // the fields inline, the object read from S3
		{"asset body", "asset://project/p/asset/a003/body", 1, 1, 2}, // a small body inline
		{"asset object", "asset://project/p/asset/obj/object", 1, 1 + 1, 2},
		{"list page", "", -1, 0, 0},
	}
	do := func(r *core.Resources, uri string, items int) {
		t.Helper()
		if items < 0 {
			if _, err := r.List(ctx, core.ListRequest{ScopeKey: []byte("alice")}); err != nil {
				t.Fatalf("list: %v", err)
			}
			return
		}
		res, err := r.Read(ctx, uri)
		if err != nil || res.Partial() || len(res.Items()) != items {
			t.Fatalf("read %s: %v", uri, err)
		}
	}
	for _, k := range kinds { // the first use of a statement on the connection prepares it
		do(batch, k.uri, k.items)
	}
	for _, k := range kinds {
		for _, path := range []struct {
			name string
			r    *core.Resources
			want int64
		}{{"Decide", batch, k.want}} {
			b0, q0, p0, rt0 := c.tracer.batches.Load(), c.tracer.queries.Load(), c.tracer.prepares.Load(), c.wire.roundTrips.Load()
			do(path.r, k.uri, k.items)
			batches, queries, prepares, trips := c.tracer.batches.Load()-b0, c.tracer.queries.Load()-q0, c.tracer.prepares.Load()-p0, c.wire.roundTrips.Load()-rt0
			t.Logf("%-10s %-15s %-40s %d round trips (%d batches)", path.name, k.name, k.uri, trips, batches)
			if trips != path.want || batches != trips || queries != 0 || prepares != 0 {
				t.Errorf("%s, %s: %d round trips, %d batches, %d queries, %d prepares; want %d, one batch each",
					path.name, k.name, trips, batches, queries, prepares, path.want)
			}
		}
		if k.want > k.max {
			t.Errorf("%s: %d round trips with Decide is over the bound %d", k.name, k.want, k.max)
		}
	}
}

// TestPGStoreDecideAgreesWithTheGrantsTable checks, for every pass of real
// reads under a mix of grants (project-wide and per asset, discover-only,
// read-only, disclosing or not, other principals' and none), that Decide's
// answer for each target is what a pass of that target alone says of it, and that the decision before the reads, taken from the grant flags
// the plan carried, is what the grants table says when asked again.
func TestPGStoreDecideAgreesWithTheGrantsTable(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	for _, p := range []string{"p", "q"} {
		d.project(t, p)
		for _, id := range []string{"none", "peek", "quiet", "read", "loud"} {
			d.textAsset(t, p, id, "body of "+id)
		}
	}
	d.exec(t, `INSERT INTO mcpres.grants (principal, project_id, asset_id, can_discover, can_read, disclose_issue_uri) VALUES
		('alice', 'p', 'peek', true, false, true),
		('alice', 'p', 'quiet', true, false, false),
		('alice', 'p', 'read', false, true, false),
		('alice', 'p', 'loud', true, true, true),
		('bob', 'p', 'none', true, true, true),
		('alice', 'q', NULL, true, false, false),
		('alice', 'q', 'read', false, true, true)`)
	st := newStore(t, newPool(t, d.url, nil), nil)
	orig := st.Policy()
	passes := 0
	policy := orig
	policy.Decide = func(ctx context.Context, pass core.PolicyPass) ([]core.TargetDecision, error) {
		passes++
		ds, err := orig.Decide(ctx, pass)
		if err != nil {
			return ds, err
		}
		asked, err := orig.Decide(ctx, core.PolicyPass{Stage: core.PassRecheck, Definition: pass.Definition, Targets: pass.Targets})
		if err != nil {
			t.Errorf("recheck of the same targets: %v", err)
		}
		for i, tg := range pass.Targets {
			// Asked alone (a one-target pass, where an undiscoverable
			// target denies the pass): the same answer.
			var one core.TargetDecision
			alone, verr := orig.Decide(ctx, core.PolicyPass{Stage: core.PassRecheck, Definition: pass.Definition, Targets: []core.ResourceTarget{tg}})
			switch {
			case core.KindOf(verr) == core.FailureUnavailable:
				verr = nil
			case verr == nil:
				one = alone[0]
				one.Read = one.Visible && one.Read
			}
			got := ds[i]
			got.Read = got.Visible && got.Read
			if !got.Visible {
				got = core.TargetDecision{} // the gateway reads nothing else of a hidden target
			}
			if !one.Visible {
				one = core.TargetDecision{}
			}
			if verr != nil || got != one || (asked != nil && asked[i] != ds[i]) {
				t.Errorf("%v %s: Decide %+v, asked again %+v, per target %+v (%v)", pass.Stage, tg.URI(), ds[i], asked[i], one, verr)
			}
		}
		return ds, nil
	}
	r := pgGateway(t, st.Bindings(), policy)
	for _, who := range []string{"alice", "bob"} {
		ctx := as(t.Context(), who)
		for _, uri := range []string{"asset://projects", "asset://project/p", "asset://project/q"} {
			_, _ = r.Read(ctx, uri)
			for _, id := range []string{"none", "peek", "quiet", "read", "loud"} {
				for _, p := range []string{"p", "q"} {
					_, _ = r.Read(ctx, "asset://project/"+p+"/asset/"+id)
					_, _ = r.Read(ctx, "asset://project/"+p+"/asset/"+id+"/body")
				}
			}
		}
	}
	if passes < 20 {
		t.Fatalf("only %d passes decided", passes)
	}
}

// TestPGStoreRecheckAsksTheGrantsTableNow proves the recheck does not
// trust the flags the plan carried: a read grant revoked after the body
// reads and before the recheck removes the item (an unavailable issue),
// and a grant hidden then removes it silently, although both items were
// read under their planned flags.
func TestPGStoreRecheckAsksTheGrantsTableNow(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	d.project(t, "p")
	for _, id := range []string{"a", "b", "c"} {
		d.textAsset(t, "p", id, "body of "+id)
	}
	d.exec(t, `INSERT INTO mcpres.grants (principal, project_id, asset_id, can_discover, can_read, disclose_issue_uri) VALUES
		('alice', 'p', 'a', true, true, true), ('alice', 'p', 'b', true, true, true), ('alice', 'p', 'c', true, true, true)`)
	st := newStore(t, newPool(t, d.url, nil), nil)
	orig := st.Policy()
	policy := orig
	policy.Decide = func(ctx context.Context, pass core.PolicyPass) ([]core.TargetDecision, error) {
		if pass.Stage == core.PassRecheck {
			d.exec(t, `UPDATE mcpres.grants SET can_read = false WHERE principal = 'alice' AND asset_id = 'b'`)
			d.exec(t, `UPDATE mcpres.grants SET can_discover = false, can_read = false WHERE principal = 'alice' AND asset_id = 'c'`)
		}
		return orig.Decide(ctx, pass)
	}
	r := pgGateway(t, st.Bindings(), policy)
	res, err := r.Read(as(t.Context(), "alice"), "asset://project/p")
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	items := itemTexts(res)
	if len(items) != 2 || items["asset://project/p/asset/a"] == "" || !res.Partial() {
		t.Fatalf("items %v partial %v: want the warning and a", items, res.Partial())
	}
	if is := res.Issues(); len(is) != 1 || is[0].Code() != core.IssueUnavailable || is[0].ResourceURI() != "asset://project/p/asset/b" {
		t.Fatalf("issues %+v: want b revoked, c gone without a trace", is)
	}
}

// TestPGStoreFoldedRecheckSeesARevocationBeforeTheBodies proves the
// recheck folded into the bodies statement (its policy served by its key)
// answers for the state the bodies were read in, not the plan's: grants revoked after
// the decision before the reads and before the bodies statement remove a
// read-revoked item (an unavailable issue) and a hidden one silently,
// with no decide statement of their own.
func TestPGStoreFoldedRecheckSeesARevocationBeforeTheBodies(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	d.project(t, "p")
	for _, id := range []string{"a", "b", "c"} {
		d.textAsset(t, "p", id, "body of "+id)
	}
	d.exec(t, `INSERT INTO mcpres.grants (principal, project_id, asset_id, can_discover, can_read, disclose_issue_uri) VALUES
		('alice', 'p', 'a', true, true, true), ('alice', 'p', 'b', true, true, true), ('alice', 'p', 'c', true, true, true)`)
	// A bundle whose plan carries no content: the bodies statement reads
	// its items, with the recheck folded in.
	bodies, orig := bodiesBundle(t, newPool(t, d.url, nil), true)
	policy := orig
	var rechecks atomic.Int64
	policy.Decide = func(ctx context.Context, pass core.PolicyPass) ([]core.TargetDecision, error) {
		ds, err := orig.Decide(ctx, pass)
		switch pass.Stage {
		case core.PassBeforeReads: // decided; the bodies are read next
			d.exec(t, `UPDATE mcpres.grants SET can_read = false WHERE principal = 'alice' AND asset_id = 'b'`)
			d.exec(t, `UPDATE mcpres.grants SET can_discover = false, can_read = false WHERE principal = 'alice' AND asset_id = 'c'`)
		case core.PassRecheck:
			rechecks.Add(int64(len(pass.Targets) - 1)) // the items asked about, besides the bundle's own target
		}
		return ds, err
	}
	r := pgGateway(t, []core.ResourceBinding{bodies}, policy)
	res, err := r.Read(as(t.Context(), "alice"), "body://project/p")
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	items := itemTexts(res)
	if len(items) != 2 || items["asset://project/p/asset/a/body"] != "body of a" || !res.Partial() {
		t.Fatalf("items %v partial %v: want the warning and a", items, res.Partial())
	}
	if is := res.Issues(); len(is) != 1 || is[0].Code() != core.IssueUnavailable || is[0].ResourceURI() != "asset://project/p/asset/b/body" {
		t.Fatalf("issues %+v: want b revoked, c gone without a trace", is)
	}
	if n := rechecks.Load(); n != 0 {
		t.Errorf("the recheck asked Decide about %d items, want none: the bodies statement answered", n)
	}
}
