package integration

import (
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// TestOwnSchemaAnchoredBundleTellsAMissingTenantFromAnEmptyOne: a bundle
// that selects from the tenant's row LEFT JOINed with its documents is
// unavailable for a tenant that does not exist (or whose row the caller may
// not see) and an empty bundle for one without documents, while the same
// statement without Anchored answers both with an empty bundle.
func TestOwnSchemaAnchoredBundleTellsAMissingTenantFromAnEmptyOne(t *testing.T) {
	r := newDocsRig(t)
	r.document(t, "acme", "Plan", "the plan", "", "", nil)
	src, err := postgres.NewSource(r.pool, postgres.SourceOptions{Name: "docs", Role: "docs_reader", Exempt: map[string]string{"public.tenants": "tenant names, the same for every caller"}})
	if err != nil {
		t.Fatal(err)
	}
	bundle := `SELECT d.id AS key, d.xmin AS version, d.content_type AS mime, t.id AS tenant_id, d.id
		FROM tenants t LEFT JOIN documents d ON d.tenant_id = t.id
		WHERE t.id = $tenant ORDER BY d.id`
	var bs []core.ResourceBinding
	for _, b := range []struct {
		name     string
		anchored bool
	}{{"anchored", true}, {"plain", false}} {
		bundle := bundle
		if !b.anchored {
			bundle = `SELECT d.id AS key, d.xmin AS version, d.content_type AS mime, d.tenant_id, d.id
				FROM documents d WHERE d.tenant_id = $tenant ORDER BY d.id`
		}
		binding, err := src.Binding(postgres.SQLBinding{
			Definition: core.ResourceDefinition{URITemplate: "doc://" + b.name + "/{tenant}", Name: b.name},
			Bundle:     bundle, Anchored: b.anchored,
			ItemURI: "doc://tenants/{tenant_id}/documents/{id}",
			Body:    `SELECT d.body, d.xmin AS version FROM documents d WHERE d.id::text = $key`,
		})
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, binding)
	}
	if err := src.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := core.NewResources(bs, postgres.DatabaseDecides())
	if err != nil {
		t.Fatal(err)
	}
	alice := core.WithCaller(t.Context(), core.Caller{Principal: "alice"})
	for _, c := range []struct {
		uri   string
		items int // -1: unavailable
	}{
		{"doc://anchored/acme", 1},
		{"doc://anchored/globex", 0},
		{"doc://anchored/nobody", -1},
		{"doc://plain/acme", 1},
		{"doc://plain/globex", 0},
		{"doc://plain/nobody", 0},
	} {
		got, err := res.Read(alice, c.uri)
		switch {
		case c.items < 0 && core.KindOf(err) != core.FailureUnavailable:
			t.Errorf("%s: %v, want unavailable", c.uri, err)
		case c.items >= 0 && err != nil:
			t.Errorf("%s: %v, want %d items", c.uri, err, c.items)
		case c.items >= 0 && len(got.Items()) != c.items:
			t.Errorf("%s: %d items, want %d", c.uri, len(got.Items()), c.items)
		}
	}
}
