package config

import (
	"strings"
	"testing"
)

// TestEachSourceHasItsOwnPolicy: with no file policy, each PostgreSQL
// source decides its own resources, and policyOf says which policy decides
// which source; a source's own policy wins over the file's database.
func TestEachSourceHasItsOwnPolicy(t *testing.T) {
	text := strings.Replace(good, "      role: reader\n",
		"      role: reader\n      policy:\n        decide: SELECT k AS key, true AS visible, true AS read FROM unnest($keys) AS k\n"+
			"  db2:\n    postgres:\n      url: ${DB_URL}\n      role: reader\n      policy: database\n", 1)
	text = strings.Replace(text, "policy:\n  source: db\n  decide: SELECT k AS key, true AS visible, true AS read FROM unnest($keys::text[]) AS k\n", "", 1)
	text += "  other:\n    template: other://x/{id}\n    source: db2\n    plan: SELECT $id AS key, 1 AS version, 'text/plain' AS mime\n    body: SELECT 'x' AS body, 1 AS version WHERE $key IS NOT NULL\n"
	f, err := Parse("own.yaml", []byte(text), testOptions)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if p := f.policyOf("db"); p == nil || p.Database || !strings.Contains(p.Decide, "unnest($keys)") {
		t.Errorf("db's policy: %+v, want its own decide statement", p)
	}
	if p := f.policyOf("db2"); p == nil || !p.Database {
		t.Errorf("db2's policy: %+v, want database", p)
	}
	if p := f.policyOf("files"); p != nil {
		t.Errorf("the bucket has a policy: %+v; its resources are decided by their grants", p)
	}
}
