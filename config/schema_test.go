package config

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"
)

// examples are the resources files shipped in the repository.
func examples(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../examples/*/resources.yaml")
	if err != nil || len(files) < 1 {
		t.Fatalf("want the documents example, found %v (%v)", files, err)
	}
	return append(files, "../migrations/resources.yaml")
}

func resolvedSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(Schema, &s); err != nil {
		t.Fatalf("schema.json: %v", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("schema.json does not resolve: %v", err)
	}
	return rs
}

// instance turns YAML into the JSON value a schema validates.
func instance(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(j, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSchemaIsTheCommittedFile(t *testing.T) {
	data, err := os.ReadFile("schema.json")
	if err != nil || !bytes.Equal(data, Schema) {
		t.Fatal("Schema must embed config/schema.json")
	}
}

// TestExamplesValidate proves that every shipped example satisfies the
// schema and loads through Parse.
func TestExamplesValidate(t *testing.T) {
	rs := resolvedSchema(t)
	for _, path := range examples(t) {
		t.Run(path, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := rs.Validate(instance(t, data)); err != nil {
				t.Errorf("the schema refuses it: %v", err)
			}
			env := func(name string) (string, bool) {
				switch name {
				case "DOCS_DATABASE_URL", "MCPRES_DATABASE_URL", "MCPRES_LISTEN_DATABASE_URL":
					return "postgres://app@127.0.0.1:5432/db", true
				case "S3_ENDPOINT", "MCPRES_BUCKET_ENDPOINT":
					return "http://127.0.0.1:9000", true
				case "MCPRES_BUCKET", "DOCS_BUCKET":
					return "mcpres", true
				case "MCPRES_BUCKET_REGION":
					return "us-east-1", true
				}
				return "x", true
			}
			if _, err := Parse(path, data, &Options{LookupEnv: env}); err != nil {
				t.Errorf("Parse refuses it: %v", err)
			}
		})
	}
}

// TestSchemaCanFail proves the schema is not vacuous: an unknown key, a
// literal secret key and a missing required key are refused.
func TestSchemaCanFail(t *testing.T) {
	rs := resolvedSchema(t)
	for name, doc := range map[string]string{
		"unknown key":    good + "extra: 1\n",
		"literal secret": edit(t, "${SECRET}", "abc"),
		"no policy":      edit(t, "policy:\n  source: db\n", "other:\n  source: db\n"),
		"bad max_depth":  edit(t, "max_depth: 3", "max_depth: 0"),
	} {
		if err := rs.Validate(instance(t, []byte(doc))); err == nil {
			t.Errorf("%s: the schema accepts it", name)
		}
	}
	if err := rs.Validate(instance(t, []byte(good))); err != nil {
		t.Errorf("the schema refuses the good base file: %v", err)
	}
}
