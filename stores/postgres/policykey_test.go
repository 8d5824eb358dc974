package postgres

import (
	"fmt"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
)

// TestSQLBindingFoldsThePolicyTheGatewayNames proves that a source with
// two policies folds the recheck of the one each request names into its
// bodies statement, and answers naming it: the grants policy's answers
// (a readable, b denied) under its key, the deny-all policy's under its
// own, whichever was made first (no policy count turns the fold off);
// under a key that is no policy of the source (another source's policy, a
// host's key, none) the reader offers no decision.
func TestSQLBindingFoldsThePolicyTheGatewayNames(t *testing.T) {
	t.Parallel()
	d := newBodiesDB(t)
	for _, id := range []string{"a", "b"} {
		d.doc(t, id, 1, []byte("body of "+id))
	}
	d.exec(t, `INSERT INTO grants VALUES ('alice', 'a', true, true, true), ('alice', 'b', true, false, true)`)
	bundle := docsBundle(bodyByKey)
	bundle.Bundle = `SELECT id AS key, version, 'text/plain' AS mime, id FROM docs WHERE $g IS NOT NULL ORDER BY id`
	src := d.sourceOf(t, SourceOptions{Name: "two"})
	b, err := src.Binding(bundle)
	if err != nil {
		t.Fatal(err)
	}
	grants, err := src.Policy(grantsDecide)
	if err != nil {
		t.Fatal(err)
	}
	denyAll, err := src.Policy(`SELECT doc AS key, true AS visible, false AS read FROM grants WHERE doc = ANY($keys)`)
	if err != nil {
		t.Fatal(err)
	}
	other := d.sourceOf(t, SourceOptions{Name: "other"})
	otherPolicy, err := other.Policy(grantsDecide)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx := core.WithCaller(t.Context(), core.Caller{Principal: "alice"})
	res, err := core.NewResources([]core.ResourceBinding{b}, grants)
	if err != nil {
		t.Fatal(err)
	}
	a, err := res.Authorize(ctx, "doc://b/all")
	if err != nil || a.Len() != 2 {
		t.Fatalf("authorize: %v", err)
	}
	read := func(key any) []core.ReadResult {
		req := core.ReadRequest{Budget: 1000, Policy: key}
		for i := range a.Len() {
			req.Items = append(req.Items, core.ReadItem{Target: a.Item(i), Limit: 100})
		}
		out, err := b.Reader.Read(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	g, n := grants.Key(b.Definition), denyAll.Key(b.Definition)
	if g == nil || n == nil || g == n {
		t.Fatalf("keys %v and %v: want two distinct keys", g, n)
	}
	for name, c := range map[string]struct {
		key  any
		read []bool // each item's Read; nil: no decisions
	}{
		"the grants policy":       {g, []bool{true, false}},
		"the deny-all policy":     {n, []bool{false, false}},
		"another source's policy": {otherPolicy.Key(b.Definition), nil},
		"a host's key":            {"host", nil},
		"no key":                  {nil, nil},
	} {
		t.Run(name, func(t *testing.T) {
			out := read(c.key)
			var got []bool
			for i, o := range out {
				if o.Err != nil || o.Payload.Text() != fmt.Sprint("body of ", []string{"a", "b"}[i]) {
					t.Fatalf("item %d: %v %q", i, o.Err, o.Payload.Text())
				}
				if o.Decision == nil {
					continue
				}
				if o.Decision.Policy != c.key {
					t.Fatalf("item %d: a decision naming %v, want %v", i, o.Decision.Policy, c.key)
				}
				got = append(got, o.Decision.Read)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.read) {
				t.Fatalf("decisions' Read %v, want %v", got, c.read)
			}
		})
	}
}
