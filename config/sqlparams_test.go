package config

import (
	"slices"
	"strings"
	"testing"
)

// TestScanSQL proves which dollars are parameters: names outside literals,
// identifiers, comments and dollar quotes, and nothing else.
func TestScanSQL(t *testing.T) {
	cases := []struct {
		sql     string
		want    []string
		problem string
	}{
		{"SELECT body FROM d WHERE id = $key AND v = $version", []string{"key", "version"}, ""},
		{"SELECT '$no' || $yes", []string{"yes"}, ""},
		{"SELECT 'it''s $no', $yes", []string{"yes"}, ""},
		{`SELECT "$no" FROM t WHERE x = $yes`, []string{"yes"}, ""},
		{"SELECT 1 -- $no\n, $yes", []string{"yes"}, ""},
		{"SELECT /* $no /* nested $no */ $no */ $yes", []string{"yes"}, ""},
		{"SELECT $$ $no $$, $yes", []string{"yes"}, ""},
		{"SELECT $q$ $no $q$, $yes", []string{"yes"}, ""},
		{"SELECT E'\\' $no', $yes", []string{"yes"}, ""},
		{"SELECT a$b FROM t", nil, ""},
		{"SELECT $id::uuid", []string{"id"}, ""},
		{"SELECT $1", nil, "positional"},
		{"SELECT 1;", nil, "semicolon"},
		{"SELECT 'open", nil, "unterminated"},
		{"SELECT /* open", nil, "unterminated"},
		{"SELECT $q$ open", nil, "unterminated"},
		{"SELECT $ 1", nil, "starts no parameter"},
		{"   ", nil, "empty"},
	}
	for _, tc := range cases {
		params, problem, _ := scanSQL(tc.sql)
		var names []string
		for _, p := range params {
			names = append(names, p.Name)
		}
		if tc.problem != "" {
			if !strings.Contains(problem, tc.problem) {
				t.Errorf("%q: problem %q, want %q", tc.sql, problem, tc.problem)
			}
			continue
		}
		if problem != "" || !slices.Equal(names, tc.want) {
			t.Errorf("%q: got %v (%q), want %v", tc.sql, names, problem, tc.want)
		}
	}
}
