package integration

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/mcpsdk"

	wirefmt "go.phpboyscout.uk/mcp/resources/internal/wire"
)

// TestServerToolsReadEachTokensOwnRowsAndObjects runs the built binary with
// --tools against the seeded PostgreSQL schema and bucket: through
// read_resource, alice and bob each read with their own grants (the
// salaries row for alice only; bob's answer for it is the very error a
// missing asset gets), a joined asset is its row's fields and its S3
// object, a binary object is a blob, bob's project bundle is partial with
// the warning first and the report in _meta, and each tool result equals
// the resources/read of the same URI.
func TestServerToolsReadEachTokensOwnRowsAndObjects(t *testing.T) {
	t.Parallel()
	_, _, flags := migratedAndSeeded(t)
	srv := startServer(t, append(flags, "--tools", "--tokens="+tokensFile(t, "alice", "bob"))...)
	alice, bob := srv.connect(t, "alice-token"), srv.connect(t, "bob-token")
	read := func(cs *mcp.ClientSession, uri string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: mcpsdk.ToolReadResource, Arguments: map[string]any{"uri": uri}})
		if err != nil {
			t.Fatalf("read_resource %s: %v", uri, err)
		}
		return res
	}
	item := func(res *mcp.CallToolResult, i int) *mcp.ResourceContents {
		t.Helper()
		if res.IsError || i >= len(res.Content) {
			t.Fatalf("result %+v has no item %d", res, i)
		}
		return res.Content[i].(*mcp.EmbeddedResource).Resource
	}
	errText := func(res *mcp.CallToolResult) string {
		if !res.IsError || len(res.Content) != 1 {
			return ""
		}
		return res.Content[0].(*mcp.TextContent).Text
	}

	const hb = "asset://project/handbook"
	salaries := hb + "/asset/salaries/body"
	if got := item(read(alice, salaries), 0).Text; !strings.HasPrefix(got, "name,salary") {
		t.Errorf("alice reads salaries as %q", got)
	}
	denied, missing := read(bob, salaries), read(bob, hb+"/asset/no-such-asset/body")
	a, _ := json.Marshal(denied)
	b, _ := json.Marshal(missing)
	if errText(denied) != "resource unavailable" || !bytes.Equal(a, b) {
		t.Errorf("bob reads salaries as %s, a missing asset as %s", a, b)
	}
	if got := errText(read(bob, "asset://project/launch/asset/budget")); got != "resource unavailable" {
		t.Errorf("bob reads another project's asset: %q", got)
	}

	for name, cs := range map[string]*mcp.ClientSession{"alice": alice, "bob": bob} {
		r := read(cs, hb+"/asset/architecture")
		if len(r.Content) != 2 || item(r, 0).URI != hb+"/asset/architecture" || item(r, 1).MIMEType != "image/svg+xml" || !strings.HasPrefix(item(r, 1).Text, "<svg") {
			t.Errorf("%s's joined asset through the tool: %+v", name, r.Content)
		}
	}
	if blob := item(read(alice, "asset://project/launch/asset/press-kit/object"), 0).Blob; len(blob) != 2048 {
		t.Errorf("alice's binary object is %d bytes", len(blob))
	}

	bundle := read(bob, hb)
	if w := item(bundle, 0); !strings.HasPrefix(w.URI, "mcp-warning://read/") || !strings.HasPrefix(w.Text, wirefmt.WarningPrefix) {
		t.Errorf("bob's handbook bundle starts with %+v, not the warning", w)
	}
	report, _ := json.Marshal(bundle.Meta[wirefmt.ReportMetaKey])
	if want := `"uri":"asset://project/handbook/asset/salaries"`; !strings.Contains(string(report), want) || !strings.Contains(string(report), `"partial":true`) {
		t.Errorf("bob's report %s", report)
	}

	// Each tool read shows exactly what resources/read shows.
	for _, uri := range []string{hb + "/asset/welcome", hb + "/asset/empty", hb + "/asset/logo", hb + "/asset/architecture"} {
		tool := read(alice, uri)
		want, err := alice.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(tool.Content) != len(want.Contents) {
			t.Fatalf("%s: tool %+v, read %+v %v", uri, tool, want, err)
		}
		for i, c := range want.Contents {
			got, _ := json.Marshal(item(tool, i))
			w, _ := json.Marshal(c)
			if !bytes.Equal(got, w) {
				t.Errorf("%s item %d: tool %s, read %s", uri, i, got, w)
			}
		}
	}

	_, metrics := srv.get(t, "/metrics")
	if !strings.Contains(metrics, `mcpres_requests_total{kind="",method="resources/read",outcome="partial"}`) ||
		!strings.Contains(metrics, `mcpres_requests_total{kind="unavailable",method="resources/read",outcome="failed"}`) {
		t.Errorf("/metrics does not count the tool reads")
	}
	for _, private := range []string{"alice", "bob", "asset://", "salaries"} {
		if strings.Contains(metrics, private) {
			t.Errorf("/metrics names %q", private)
		}
	}
}
