package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/mcpsdk"

	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

func toolText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("content %+v", res.Content)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %#v is not text", res.Content[0])
	}
	return tc.Text
}

// The built binary with --tools serves the embedded demo as tools over
// stdio: read_resource shows what resources/read shows (a blob, empty text
// on the wire, the partial bundle with its warning and report), hidden and
// missing URIs give the same tool error, list_resources lists what the
// list methods list, and complete_resource_uri completes the note ids.
// Without --tools, tools/list is empty.
func TestStdioToolsServeTheDemo(t *testing.T) {
	ctx := t.Context()
	connect := func(args ...string) (*mcp.ClientSession, *wireTap) {
		cmd := exec.Command(binary(t), append([]string{"serve"}, args...)...)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "MCPRES_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		tap := &wireTap{}
		client := mcp.NewClient(&mcp.Implementation{Name: "tools-test", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.LoggingTransport{Transport: &mcp.CommandTransport{Command: cmd}, Writer: tap}, nil)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs, tap
	}

	off, _ := connect()
	if tools, err := off.ListTools(ctx, nil); err != nil || len(tools.Tools) != 0 {
		t.Errorf("without --tools: %+v %v", tools, err)
	}

	cs, tap := connect("--tools")
	if cs.InitializeResult().Capabilities.Tools == nil {
		t.Fatal("no tools capability")
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{mcpsdk.ToolListResources, mcpsdk.ToolReadResource, mcpsdk.ToolCompleteResourceURI}) {
		t.Fatalf("tools %v", names)
	}
	if d := tools.Tools[1].Description; !strings.Contains(d, demoNotes) || !strings.Contains(d, demoReadme) || strings.Contains(d, "demo://hidden") {
		t.Errorf("read_resource description %q", d)
	}

	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		return res
	}
	read := func(uri string) *mcp.CallToolResult { return call(mcpsdk.ToolReadResource, map[string]any{"uri": uri}) }
	for _, uri := range []string{demoReadme, demoLogo, demoEmpty, demoBundle, "demo://notes/2"} {
		res := read(uri)
		want, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || res.IsError || len(res.Content) != len(want.Contents) {
			t.Fatalf("%s: tool %+v, read %+v %v", uri, res, want, err)
		}
		for i, c := range res.Content {
			got := c.(*mcp.EmbeddedResource).Resource
			w := want.Contents[i]
			if (got.URI != w.URI && !strings.HasPrefix(w.URI, "mcp-warning://")) || got.MIMEType != w.MIMEType || got.Text != w.Text || string(got.Blob) != string(w.Blob) {
				t.Errorf("%s item %d: tool %+v, read %+v", uri, i, got, w)
			}
		}
		if a, b := res.Meta[wire.ReportMetaKey], want.Meta[wire.ReportMetaKey]; a == nil || !sameValue(a, b) {
			t.Errorf("%s: report %v, read %v", uri, a, b)
		}
	}
	if b := read(demoBundle); !strings.HasPrefix(b.Content[0].(*mcp.EmbeddedResource).Resource.URI, "mcp-warning://read/") {
		t.Errorf("the partial bundle does not start with the warning")
	}
	if !strings.Contains(tap.String(), `{"type":"resource","resource":{"uri":"demo://empty","mimeType":"text/plain","text":""}}`) {
		t.Error(`the empty item is not on the wire with "text":""`)
	}
	hidden, missing := read("demo://hidden"), read("demo://nothing")
	if !hidden.IsError || toolText(t, hidden) != "resource unavailable" || toolText(t, missing) != toolText(t, hidden) || !sameValue(hidden.StructuredContent, missing.StructuredContent) {
		t.Errorf("hidden %+v, missing %+v", hidden, missing)
	}
	if r := read("demo://notes/%2e%2e"); !r.IsError || toolText(t, r) != "invalid resource request" {
		t.Errorf("a traversal capture: %+v", r)
	}
	if strings.Contains(tap.String(), "should not see") || strings.Contains(tap.String(), "nor this") {
		t.Error("a hidden or revoked body reached the wire")
	}

	var listed []string
	cursor := ""
	for range 20 {
		args := map[string]any{}
		if cursor != "" {
			args["cursor"] = cursor
		}
		var page struct {
			Resources  []struct{ URI string }
			Templates  []struct{ URITemplate string } `json:"resourceTemplates"`
			NextCursor string
		}
		if err := json.Unmarshal([]byte(toolText(t, call(mcpsdk.ToolListResources, args))), &page); err != nil {
			t.Fatal(err)
		}
		for _, d := range page.Resources {
			listed = append(listed, d.URI)
		}
		for _, d := range page.Templates {
			listed = append(listed, d.URITemplate)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if want := []string{demoBundle, demoEmpty, demoLogo, demoReadme, demoNotes}; !slices.Equal(listed, want) {
		t.Errorf("list_resources %v, want %v", listed, want)
	}
	comp := call(mcpsdk.ToolCompleteResourceURI, map[string]any{"template": demoNotes, "argument": "id"})
	if got := toolText(t, comp); got != `{"values":["1","2","3"],"total":3}` {
		t.Errorf("completing the note id: %s", got)
	}
}

// sameValue reports whether a and b encode as the same JSON.
func sameValue(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

var httpAddr = regexp.MustCompile(`msg="serving MCP over streamable HTTP" addr=(\S+)`)

// Over HTTP with --tools, tool calls are counted by the server's metrics
// as the reads and lists they are.
func TestHTTPToolCallsAreCountedInTheMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--log-format=text", "serve", "--http=127.0.0.1:0", "--tools"}, strings.NewReader(""), io.Discard, pw)
		pw.Close()
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := httpAddr.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case code := <-done:
		t.Fatalf("serve exited %d", code)
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not start")
	}
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop")
		}
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "tools-metrics", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, uri := range []string{demoReadme, demoReadme, demoBundle, "demo://hidden"} {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpsdk.ToolReadResource, Arguments: map[string]any{"uri": uri}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpsdk.ToolListResources}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`mcpres_requests_total{kind="",method="resources/read",outcome="complete"} 2`,
		`mcpres_requests_total{kind="",method="resources/read",outcome="partial"} 1`,
		`mcpres_requests_total{kind="unavailable",method="resources/read",outcome="failed"} 1`,
		`mcpres_requests_total{kind="",method="resources/list",outcome="complete"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(string(body), "mcpres_requests_total"))
		}
	}
}

func grepLines(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
