package postgres

import (
	"errors"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
)

// TestBindingMistakesCarryTheirPath proves a refused SQLBinding names
// its place by structure (core.ConfigPath), and a refused statement also
// the byte of the mistake (*SQLError), so that a caller never reads the
// error's text to find it.
func TestBindingMistakesCarryTheirPath(t *testing.T) {
	src, err := NewSource(&countingDB{}, SourceOptions{Name: "docs", Role: "r"})
	if err != nil {
		t.Fatal(err)
	}
	def := core.ResourceDefinition{Name: "doc", URITemplate: "doc://t/{tenant}"}
	cases := []struct {
		name   string
		b      SQLBinding
		path   core.ConfigPath
		offset int // -1: no *SQLError
	}{
		{"a plan parameter the template lacks", SQLBinding{Definition: def, Plan: "SELECT $tenant, $tenat", Body: "SELECT $key"},
			core.ConfigPath{Source: "docs", Binding: "doc", Field: "Plan"}, 16},
		{"a positional body parameter", SQLBinding{Definition: def, Plan: "SELECT $tenant", Body: "SELECT $1"},
			core.ConfigPath{Source: "docs", Binding: "doc", Field: "Body"}, 7},
		{"a completion without $prefix", SQLBinding{Definition: def, Plan: "SELECT $tenant", Body: "SELECT $key", Complete: map[string]string{"tenant": "SELECT 1"}},
			core.ConfigPath{Source: "docs", Binding: "doc", Field: "Complete", Key: "tenant"}, -1},
		{"an item URI left open", SQLBinding{Definition: def, Bundle: "SELECT $tenant", ItemURI: "doc://x/{id", Body: "SELECT $key"},
			core.ConfigPath{Source: "docs", Binding: "doc", Field: "ItemURI"}, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := src.Binding(tc.b)
			ce, ok := errors.AsType[*core.ConfigError](err)
			if !ok || ce.Path != tc.path {
				t.Fatalf("Binding = %v (path %+v), want a *core.ConfigError at %+v", err, ce, tc.path)
			}
			se, ok := errors.AsType[*SQLError](err)
			switch {
			case tc.offset < 0 && ok:
				t.Errorf("an *SQLError at %d, want none", se.Offset)
			case tc.offset >= 0 && (!ok || se.Offset != tc.offset):
				t.Errorf("*SQLError %v, want one at offset %d", se, tc.offset)
			}
		})
	}
	if _, err := src.Policy("SELECT 1"); !errors.As(err, new(*core.ConfigError)) || err.(*core.ConfigError).Path != (core.ConfigPath{Source: "docs", Field: "Decide"}) {
		t.Errorf("Policy without $keys = %v, want a ConfigError at the source's Decide", err)
	}
	if _, err := NewSource(&countingDB{}, SourceOptions{Name: "docs"}); !errors.As(err, new(*core.ConfigError)) || err.(*core.ConfigError).Path != (core.ConfigPath{Source: "docs", Field: "Role"}) {
		t.Errorf("NewSource without a role = %v, want a ConfigError at the source's Role", err)
	}
}
