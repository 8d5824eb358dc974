package integration

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// completeArg asks the instance's server, as its principal, to complete
// variable of tmpl.
func completeArg(t *testing.T, lc *liveClient, tmpl, variable, value string, args map[string]string) *mcp.CompleteResult {
	t.Helper()
	p := &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: tmpl},
		Argument: mcp.CompleteParamsArgument{Name: variable, Value: value}}
	if args != nil {
		p.Context = &mcp.CompleteContext{Arguments: args}
	}
	r, err := lc.cs.Complete(context.Background(), p)
	if err != nil {
		t.Fatalf("complete %s %s %q: %v", tmpl, variable, value, err)
	}
	return r
}

func TestLiveCompletionOffersOnlyWhatEachPrincipalMayDiscoverAndAtMostOneHundred(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	d.project(t, "p")
	d.project(t, "q")
	d.exec(t, `INSERT INTO mcpres.assets (project_id, id, name, mime_type, body, body_is_text)
		SELECT 'p', 'a' || lpad(i::text, 3, '0'), 'n' || i, 'text/plain', convert_to('x', 'UTF8'), true
		FROM generate_series(0, 149) i`)
	d.textAsset(t, "q", "qa", "x")
	d.grant(t, "alice", "p", "")
	d.grant(t, "alice", "q", "")
	for _, a := range []string{"a001", "a002", "a100"} {
		d.grant(t, "bob", "p", a)
	}
	alice := newLiveInstance(t, d, "alice", nil).connect(t, "2025-11-25")
	bob := newLiveInstance(t, d, "bob", nil).connect(t, "2026-07-28")
	p := map[string]string{"project": "p"}

	r := completeArg(t, alice, "asset://project/{project}/asset/{asset}", "asset", "a", p)
	if len(r.Completion.Values) != 100 /* the most MCP allows in one result */ || r.Completion.Total != 150 || !r.Completion.HasMore {
		t.Fatalf("alice: %d values, total %d, hasMore %v; want 100, 150, true", len(r.Completion.Values), r.Completion.Total, r.Completion.HasMore)
	}
	r = completeArg(t, bob, "asset://project/{project}/asset/{asset}", "asset", "a", p)
	if got := strings.Join(r.Completion.Values, ","); got != "a001,a002,a100" || r.Completion.Total != 3 || r.Completion.HasMore {
		t.Fatalf("bob: %q total %d hasMore %v; want his three grants only", got, r.Completion.Total, r.Completion.HasMore)
	}
	r = completeArg(t, bob, "asset://project/{project}/asset/{asset}", "asset", "a", map[string]string{"project": "q"})
	if len(r.Completion.Values) != 0 {
		t.Fatalf("bob completes assets of a project he cannot see: %v", r.Completion.Values)
	}
	r = completeArg(t, alice, "asset://project/{project}", "project", "", nil)
	if got := strings.Join(r.Completion.Values, ","); got != "p,q" {
		t.Fatalf("alice's projects: %q", got)
	}
	r = completeArg(t, bob, "asset://project/{project}", "project", "", nil)
	if got := strings.Join(r.Completion.Values, ","); got != "p" {
		t.Fatalf("bob's projects: %q", got)
	}
	// Every value alice is offered is a URI she can read.
	r = completeArg(t, alice, "asset://project/{project}/asset/{asset}", "asset", "a14", p)
	for _, v := range r.Completion.Values {
		if _, err := alice.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "asset://project/p/asset/" + v}); err != nil {
			t.Fatalf("offered %s, which alice cannot read: %v", v, err)
		}
	}
}

func TestLiveCompletionPrefixIsALiteralBindArgument(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	d.project(t, "p")
	for id, name := range map[string]string{"x1": "a%b", "x2": "aXb", "x3": "a_b", "x4": `a\b`, "x5": "abc"} {
		d.exec(t, `INSERT INTO mcpres.assets (project_id, id, name, mime_type) VALUES ('p', $1, $2, 'text/plain')`, id, name)
	}
	d.grant(t, "alice", "p", "")
	alice := newLiveInstance(t, d, "alice", nil).connect(t, "2025-11-25")
	p := map[string]string{"project": "p"}
	for prefix, want := range map[string]string{
		"a%":                              "x1", // LIKE would take % as "anything": x1..x5
		"a_":                              "x3", // LIKE would take _ as "one character": x1..x5
		`a\`:                              "x4", // LIKE's default escape character
		"a":                               "x1,x2,x3,x4,x5",
		"%":                               "",
		"_":                               "",
		"x":                               "x1,x2,x3,x4,x5", // ids match too
		"x1'":                             "",
		`'; DROP TABLE mcpres.assets; --`: "",
		`a%' OR true) --`:                 "",
		`$1`:                              "",
		"\x00":                            "",
		strings.Repeat("%", 3000):         "", // over MaxURIBytes: empty before SQL
		"a%b' UNION SELECT id, 1 FROM mcpres.grants --": "",
	} {
		r := completeArg(t, alice, "asset://project/{project}/asset/{asset}", "asset", prefix, p)
		if got := strings.Join(r.Completion.Values, ","); got != want {
			t.Errorf("prefix %q: %q, want %q", prefix, got, want)
		}
	}
	var n int
	if err := d.admin.QueryRow(context.Background(), `SELECT count(*) FROM mcpres.assets`).Scan(&n); err != nil || n != 5 {
		t.Fatalf("assets after hostile prefixes: %d, %v", n, err)
	}
	// The values are sorted ids: a sanity check that the answer is ordered.
	r := completeArg(t, alice, "asset://project/{project}/asset/{asset}", "asset", "", p)
	if !slices.IsSorted(r.Completion.Values) {
		t.Fatalf("values not in id order: %v", r.Completion.Values)
	}
}
