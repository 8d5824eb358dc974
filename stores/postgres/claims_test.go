package postgres

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
)

// Claims reach mcp.claims only as one JSON object within bounds; without
// claims every transaction sets {} so that policies can always cast it.
func TestClaimsText(t *testing.T) {
	for _, tc := range []struct {
		name   string
		claims json.RawMessage
		want   string
		bad    bool
	}{
		{"none", nil, "{}", false},
		{"empty", json.RawMessage{}, "{}", false},
		{"an object", json.RawMessage(`{"groups":["eng"]}`), `{"groups":["eng"]}`, false},
		{"an array", json.RawMessage(`["eng"]`), "", true},
		{"a string", json.RawMessage(`"eng"`), "", true},
		{"not JSON", json.RawMessage(`{groups}`), "", true},
		{"over the bound", json.RawMessage(`{"x":"` + strings.Repeat("a", MaxClaimsBytes) + `"}`), "", true},
	} {
		got, err := claimsText(tc.claims)
		if tc.bad {
			if core.KindOf(err) != core.FailureUnavailable || !errors.Is(err, ErrInvalidClaims) {
				t.Errorf("%s: %q, %v; want Unavailable(ErrInvalidClaims)", tc.name, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
