package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// registrySchema is the MCP registry's published schema of server.json,
// vendored (testdata/registry/SOURCE.md says from where, and its licence).
func registrySchema(t *testing.T) (*jsonschema.Resolved, string) {
	t.Helper()
	data, err := os.ReadFile("testdata/registry/server.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("server.schema.json: %v", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("server.schema.json does not resolve: %v", err)
	}
	return rs, s.ID
}

func readServerJSON(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile("../../server.json")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("server.json: %v", err)
	}
	return v
}

// TestServerJSON: the repository's server.json is valid under the
// registry's schema, names that schema, and every environment variable it
// offers is one that `mcp-resources serve` reads.
func TestServerJSON(t *testing.T) {
	rs, id := registrySchema(t)
	v := readServerJSON(t)
	if err := rs.Validate(v); err != nil {
		t.Fatalf("server.json is not valid under the registry's schema: %v", err)
	}
	if v["$schema"] != id {
		t.Errorf("server.json's $schema is %v, want the vendored schema's $id %s", v["$schema"], id)
	}
	out, err := exec.Command(binary(t), "serve", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("serve --help: %v\n%s", err, out)
	}
	packages, _ := v["packages"].([]any)
	if len(packages) < 2 {
		t.Fatalf("want the container image and the Go install path, got %d packages", len(packages))
	}
	for _, p := range packages {
		p := p.(map[string]any)
		vars, _ := p["environmentVariables"].([]any)
		for _, e := range vars {
			name := e.(map[string]any)["name"].(string)
			if !strings.Contains(string(out), "($"+name+")") {
				t.Errorf("package %v offers %s, which serve --help does not list", p["identifier"], name)
			}
		}
	}
}

// The schema check can fail: server.json with each of these mistakes is
// refused.
func TestServerJSONSchemaRefusesMistakes(t *testing.T) {
	rs, _ := registrySchema(t)
	for name, change := range map[string]func(map[string]any){
		"no version":               func(v map[string]any) { delete(v, "version") },
		"a name without a slash":   func(v map[string]any) { v["name"] = "mcp-resources" },
		"a description over 100":   func(v map[string]any) { v["description"] = strings.Repeat("x", 101) },
		"a package version latest": func(v map[string]any) { v["packages"].([]any)[0].(map[string]any)["version"] = "latest" },
		"a package without transport": func(v map[string]any) {
			delete(v["packages"].([]any)[0].(map[string]any), "transport")
		},
		"an unknown package key": func(v map[string]any) { v["packages"].([]any)[0].(map[string]any)["image"] = "x" },
	} {
		v := readServerJSON(t)
		change(v)
		if err := rs.Validate(v); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
