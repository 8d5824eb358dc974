package postgres

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/core"
)

// TestStoreListenerReachesTheTargetsEachTriggerPayloadConcerns proves the
// reference store's listener LISTENs on ReferenceKeyChannel only and that
// each payload migration 3 sends changes exactly the store's targets it
// concerns, built as its bindings build them: an asset's key its fields,
// body and object (the object joined to the row and the object alone) and
// its project's bundle; PROJECT/* (a project-wide grant, the project's
// row) every asset of the project and not another project's; "projects"
// the index and not an asset. A target of another source has no keys.
func TestStoreListenerReachesTheTargetsEachTriggerPayloadConcerns(t *testing.T) {
	st, err := NewStore(&countingDB{}, &Options{Objects: "assets"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Listener(nil, nil); err == nil {
		t.Fatal("a nil configuration was accepted")
	}
	l, err := st.Listener(mustConfig(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.channels, []string{ReferenceKeyChannel}) {
		t.Fatalf("channels %q, want %q", l.channels, ReferenceKeyChannel)
	}
	target := func(uri string, r sqlRef) core.ResourceTarget {
		r.Source = storeSource
		authz, _ := json.Marshal(r)
		tg, err := core.NewResourceTarget(uri, ReprRow, authz)
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	fields := target("asset://project/p1/asset/x", sqlRef{Kind: refRow, Binding: "asset", Key: "p1/x"})
	body := target("asset://project/p1/asset/x/body", sqlRef{Kind: refRow, Binding: "asset-body", Key: "p1/x"})
	joined := target("asset://project/p1/asset/x/object", sqlRef{Kind: refObject, Binding: "asset", Key: "p1/x"})
	object := target("asset://project/p1/asset/x/object", sqlRef{Kind: refObject, Binding: "asset-object", Key: "p1/x"})
	other := target("asset://project/p1/asset/y", sqlRef{Kind: refRow, Binding: "asset", Key: "p1/y"})
	elsewhere := target("asset://project/p10/asset/x", sqlRef{Kind: refRow, Binding: "asset", Key: "p10/x"})
	project := target("asset://project/p1", sqlRef{Kind: refBundle, Binding: "project"})
	index := target(IndexURI, sqlRef{Kind: refRow, Binding: "projects", Key: "projects"})
	foreign, _ := core.NewResourceTarget("asset://project/p1/asset/x", ReprRow, []byte(`{"k":"row","s":"docs","b":"asset","key":"p1/x"}`))
	if k := l.ChangeKeys(foreign); k != nil {
		t.Errorf("a target of another source has keys %q", k)
	}
	all := map[string]core.ResourceTarget{"fields": fields, "body": body, "joined object": joined, "object alone": object,
		"other asset": other, "other project's asset": elsewhere, "project bundle": project, "index": index}
	for _, c := range []struct {
		payload string
		changes []string
	}{
		{"p1/x", []string{"fields", "body", "joined object", "object alone", "project bundle"}},
		{"p1/*", []string{"fields", "body", "joined object", "object alone", "other asset", "project bundle"}},
		{"projects", []string{"index", "project bundle"}},
		{"*", []string{"fields", "body", "joined object", "object alone", "other asset", "other project's asset", "project bundle", "index"}},
	} {
		keys := payloadKeys(ReferenceKeyChannel, c.payload)
		for name, tg := range all {
			deps := l.ChangeKeys(tg)
			if len(deps) == 0 {
				t.Fatalf("%s: no change keys", name)
			}
			hit := slices.ContainsFunc(deps, func(k string) bool { return slices.Contains(keys, k) })
			if want := slices.Contains(c.changes, name); hit != want {
				t.Errorf("payload %q: %s changed %v, want %v (keys %q, depends on %q)", c.payload, name, hit, want,
					strings.Join(keys, " "), strings.Join(deps, " "))
			}
		}
	}
}

func mustConfig(t *testing.T) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig("postgres://x@127.0.0.1:1/x")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
