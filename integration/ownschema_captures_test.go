package integration

import (
	"slices"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// TestOwnSchemaDecideSeesDecodedCaptures proves that the documents
// example's decide statement decides on the request's decoded captures
// ($captures), never on URI text: alice's document read at
// doc://tenants/%61cme/... (an encoded "acme") is served, and the same
// document addressed under globex, a tenant it does not belong to, is
// refused like a missing one.
func TestOwnSchemaDecideSeesDecodedCaptures(t *testing.T) {
	t.Parallel()
	r := newDocsRig(t)
	id := r.document(t, "acme", "Plan", "the plan", "", "", nil)
	alice := core.WithCaller(t.Context(), core.Caller{Principal: "alice"})
	res, err := r.res.Read(alice, "doc://tenants/%61cme/documents/"+id)
	if err != nil || res.Partial() || len(res.Items()) != 1 || res.Items()[0].Text() != "the plan" {
		t.Fatalf("alice reads her document under the encoded tenant: %v %v", res, err)
	}
	// The item answers with the document's canonical URI, the one the
	// tenant's bundle gives it, not the request's encoding (issue 45,
	// defect 10).
	if got, want := res.Items()[0].URI(), "doc://tenants/acme/documents/"+id; got != want {
		t.Errorf("item URI %q, want the canonical %q", got, want)
	}
	bundle, err := r.res.Read(alice, "doc://tenants/acme/documents")
	if err != nil || !slices.Contains(itemURIsOf(bundle), "doc://tenants/acme/documents/"+id) {
		t.Errorf("the bundle does not list %s: %v %v", "doc://tenants/acme/documents/"+id, itemURIsOf(bundle), err)
	}
	_, missing := r.res.Read(alice, "doc://tenants/acme/documents/00000000-0000-0000-0000-000000000000")
	_, err = r.res.Read(alice, "doc://tenants/globex/documents/"+id)
	if core.KindOf(err) != core.FailureUnavailable || err.Error() != missing.Error() {
		t.Fatalf("acme's document under globex: %v; want exactly what a missing document gets (%v)", err, missing)
	}
}

// TestSQLPolicyBindsTheDecodedCapturesAsJSON: a decide statement reads the
// pass's captures as one JSON object, $captures, with the decoded values;
// the same statement asked about one target, outside a pass, gets NULL.
func TestSQLPolicyBindsTheDecodedCapturesAsJSON(t *testing.T) {
	t.Parallel()
	r := newDocsRig(t)
	src, err := postgres.NewSource(r.pool, postgres.SourceOptions{Name: "docs", Role: "docs_reader"})
	if err != nil {
		t.Fatal(err)
	}
	policy, err := src.Policy(`SELECT k.key,
		coalesce($captures::jsonb ->> 'tenant' = 'acme', $captures IS NULL) AS visible, $captures IS NULL AS read
		FROM unnest($keys) AS k(key)`)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	tg, err := core.NewResourceTarget("doc://tenants/%61cme/documents/1", "body", nil)
	if err != nil {
		t.Fatal(err)
	}
	alice := core.WithCaller(t.Context(), core.Caller{Principal: "alice"})
	for _, c := range []struct {
		captures map[string]string
		visible  bool
	}{{map[string]string{"tenant": "acme", "id": "1"}, true}, {map[string]string{"tenant": "%61cme"}, false}, {nil, false}} {
		ds, err := policy.Decide(alice, core.PolicyPass{Stage: core.PassRecheck, Targets: []core.ResourceTarget{tg}, Captures: c.captures})
		if err != nil {
			t.Fatal(err)
		}
		if ds[0].Visible != c.visible || ds[0].Read {
			t.Errorf("captures %v: %+v, want visible %v and $captures not NULL", c.captures, ds[0], c.visible)
		}
	}
}

// itemURIsOf lists a result's item URIs, the warning's included.
func itemURIsOf(res *core.ResourceResult) []string {
	if res == nil {
		return nil
	}
	var out []string
	for _, it := range res.Items() {
		out = append(out, it.URI())
	}
	return out
}
