package config

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"go.phpboyscout.uk/mcp/resources/migrations"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// normSQL collapses every run of whitespace to one space, so that two
// statements compare equal when only their layout differs.
func normSQL(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestReferenceFileIsTheStoresReferenceDefinitions proves the two copies of
// the reference schema cannot drift: every resource of the embedded
// examples/reference/resources.yaml (what serve --postgres serves) is, in
// order, the binding of postgres.ReferenceBindings (what postgres.Store
// serves) with the same definition, statements (whitespace aside),
// completions, item and object URIs, channel and object source, and the
// file's decide statement is postgres.ReferenceDecide.
func TestReferenceFileIsTheStoresReferenceDefinitions(t *testing.T) {
	env := func(name string) (string, bool) {
		if strings.HasSuffix(name, "DATABASE_URL") {
			return "postgres://u@127.0.0.1:5432/db", true
		}
		return map[string]string{"MCPRES_BUCKET": "assets", "MCPRES_BUCKET_ENDPOINT": "http://127.0.0.1:9000",
			"MCPRES_BUCKET_REGION": "us-east-1"}[name], true
	}
	f, err := Parse("reference.yaml", migrations.ResourcesFile, &Options{LookupEnv: env})
	if err != nil {
		t.Fatal(err)
	}
	if f.Policy == nil || f.Policy.Source != "postgres" || normSQL(f.Policy.Decide) != normSQL(postgres.ReferenceDecide) {
		t.Errorf("the file's decide statement differs from postgres.ReferenceDecide:\nfile: %s\nGo:   %s",
			normSQL(f.Policy.Decide), normSQL(postgres.ReferenceDecide))
	}
	objectSource := map[string]bool{}
	for _, src := range f.Sources {
		if src.S3 != nil {
			objectSource[src.Name] = true
		}
	}
	bindings := postgres.ReferenceBindings()
	if len(f.Resources) != len(bindings) {
		t.Fatalf("the file has %d resources, postgres.ReferenceBindings %d", len(f.Resources), len(bindings))
	}
	for i, r := range f.Resources {
		b := bindings[i]
		d := b.Definition
		same := func(what, file, gosrc string) {
			t.Helper()
			if normSQL(file) != normSQL(gosrc) {
				t.Errorf("resource %s: %s differs:\nfile: %s\nGo:   %s", r.Name, what, normSQL(file), normSQL(gosrc))
			}
		}
		same("name", r.Name, d.Name)
		same("uri", r.URI, d.URI)
		same("template", r.Template, d.URITemplate)
		same("title", r.Title, d.Title)
		same("description", r.Description, d.Description)
		same("mime_type", r.MIMEType, d.MIMEType)
		same("plan", r.Plan, b.Plan)
		same("bundle", r.Bundle, b.Bundle)
		same("item_uri", r.ItemURI, b.ItemURI)
		same("body", r.Body, b.Body)
		same("listen", r.Listen, b.Listen)
		if r.Anchored != b.Anchored {
			t.Errorf("resource %s: anchored %v in the file, %v in Go", r.Name, r.Anchored, b.Anchored)
		}
		if r.Source != "postgres" {
			t.Errorf("resource %s: source %q, want the PostgreSQL source", r.Name, r.Source)
		}
		if fk, gk := slices.Sorted(maps.Keys(r.Completion)), slices.Sorted(maps.Keys(b.Complete)); !slices.Equal(fk, gk) {
			t.Errorf("resource %s: completes %v in the file, %v in Go", r.Name, fk, gk)
		}
		for v, sql := range r.Completion {
			same("completion of "+v, sql, b.Complete[v])
		}
		// An object: config sets ObjectSource and ObjectURI from it, and
		// ObjectOnly for a plan without body.
		var objSrc, objURI string
		if r.Object != nil {
			objSrc, objURI = r.Object.Source, r.Object.URI
			if !objectSource[objSrc] {
				t.Errorf("resource %s: object source %q is not an S3 source of the file", r.Name, objSrc)
			}
		}
		if objSrc != "" && objSrc != postgres.ReferenceObjectSource {
			t.Errorf("resource %s: object source %q, postgres.ReferenceObjectSource is %q", r.Name, objSrc, postgres.ReferenceObjectSource)
		}
		same("object.source", objSrc, b.ObjectSource)
		same("object.uri", objURI, b.ObjectURI)
		if only := r.Object != nil && r.Plan != "" && r.Body == ""; only != b.ObjectOnly {
			t.Errorf("resource %s: serves its object alone: %v in the file, %v in Go", r.Name, only, b.ObjectOnly)
		}
	}
}
