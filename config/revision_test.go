package config

import (
	"strings"
	"testing"
)

// TestRevisionFollowsWhatIsServed: the revision of the broken cases' base
// file changes with the policy's SQL, a grant's SQL, a plan, a prefix, a
// source's role and the policy mode, and not with comments, layout or the
// order of keys.
func TestRevisionFollowsWhatIsServed(t *testing.T) {
	rev := func(text string) string {
		t.Helper()
		f, err := Parse("good.yaml", []byte(text), testOptions)
		if err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		return f.Revision()
	}
	base := rev(good)
	edit := func(old, new string) string {
		t.Helper()
		if !strings.Contains(good, old) {
			t.Fatalf("the base file has no %q", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	changed := map[string]string{
		"the policy's SQL": edit("true AS read", "false AS read"),
		"a grant's SQL":    edit("r.key = $key", "r.key = $key AND r.live"),
		"a plan":           edit("AND id = $id", "AND id = $id AND NOT hidden"),
		"a prefix":         edit("prefix: tenants/{tenant}/", "prefix: orgs/{tenant}/"),
		"a role":           edit("role: reader", "role: other_reader"),
		"the policy mode": edit("policy:\n  source: db\n  decide: SELECT k AS key, true AS visible, true AS read FROM unnest($keys::text[]) AS k\n",
			"policy: database\n"),
	}
	for what, text := range changed {
		if rev(text) == base {
			t.Errorf("changing %s leaves the revision %s", what, base)
		}
	}
	same := map[string]string{
		"a comment": "# a comment\n" + good,
		"keys in another order": edit("    template: doc://t/{tenant}/d/{id}\n    source: db\n",
			"    source: db\n    template: doc://t/{tenant}/d/{id}\n"),
		"a flow mapping": edit("    postgres:\n      url: ${DB_URL}\n      role: reader\n", "    postgres: {url: '${DB_URL}', role: reader}\n"),
	}
	if f, err := Parse("elsewhere/other.yaml", []byte(good), testOptions); err != nil || f.Revision() != base {
		t.Errorf("another file name changes the revision (%v)", err)
	}
	for what, text := range same {
		if got := rev(text); got != base {
			t.Errorf("%s changes the revision: %s, want %s", what, got, base)
		}
	}
}
