package postgres

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/core"
)

// keyChannel is the channel of migrations version 3's key notifications.
const keyChannel = "mcpres_keys"

// TestReferenceShapedListenerReachesTheTargetsEachTriggerPayloadConcerns
// proves, for bindings of the reference file's shapes (an index, an
// anchored project bundle, an asset's fields joined with its object, its
// body and its object alone, all on one channel; the statements are not
// the reference file's, which lives in migrations/resources.yaml alone),
// that the listener LISTENs on that channel only and that each payload
// migration 3 sends changes exactly the targets it concerns: an asset's
// key its fields, body and object (the object joined to the row and the
// object alone) and its project's bundle; PROJECT/* (a project-wide
// grant, the project's row) every asset of the project and not another
// project's; "projects" the index and not an asset. A target of another
// source has no keys.
func TestReferenceShapedListenerReachesTheTargetsEachTriggerPayloadConcerns(t *testing.T) {
	src, err := NewSource(&countingDB{}, SourceOptions{Role: ReaderRole, Objects: map[string]string{"s3": ""}})
	if err != nil {
		t.Fatal(err)
	}
	const (
		plan = `SELECT $project || '/' || $asset AS key, 1 AS version, 'application/json' AS mime, $project AS project_id, $asset AS id, 'k' AS object_key`
		read = `SELECT '{}' AS body, 1 AS version WHERE $key <> ''`
	)
	def := func(name, uri, template string) core.ResourceDefinition {
		return core.ResourceDefinition{Name: name, URI: uri, URITemplate: template}
	}
	for _, b := range []SQLBinding{
		{Definition: def("projects", "asset://projects", ""), Listen: keyChannel, Body: read,
			Plan: `SELECT 'projects' AS key, 1 AS version, 'application/json' AS mime`},
		{Definition: def("project", "", "asset://project/{project}"), Listen: keyChannel, Body: read, Anchored: true,
			Bundle:  `SELECT $project || '/x' AS key, 1 AS version, 'application/json' AS mime, $project AS project_id, 'x' AS id`,
			ItemURI: "asset://project/{project_id}/asset/{id}"},
		{Definition: def("asset", "", "asset://project/{project}/asset/{asset}"), Listen: keyChannel, Plan: plan, Body: read,
			ObjectSource: "s3", ObjectURI: "asset://project/{project_id}/asset/{id}/object"},
		{Definition: def("asset-body", "", "asset://project/{project}/asset/{asset}/body"), Listen: keyChannel, Plan: plan, Body: read},
		{Definition: def("asset-object", "", "asset://project/{project}/asset/{asset}/object"), Listen: keyChannel, Plan: plan,
			ObjectSource: "s3"},
	} {
		if _, err := src.Binding(b); err != nil {
			t.Fatalf("%s: %v", b.Definition.Name, err)
		}
	}
	if _, err := src.Listener(nil, nil); err == nil {
		t.Fatal("a nil configuration was accepted")
	}
	l, err := src.Listener(mustConfig(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.channels, []string{keyChannel}) {
		t.Fatalf("channels %q, want %q", l.channels, keyChannel)
	}
	target := func(uri string, r sqlRef) core.ResourceTarget {
		r.Source = "postgres"
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
	index := target("asset://projects", sqlRef{Kind: refRow, Binding: "projects", Key: "projects"})
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
		keys := payloadKeys(keyChannel, c.payload)
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
