package mcpsdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"

	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

// The TypeScript SDK client (@modelcontextprotocol/sdk, pinned with its
// dependencies in testdata/tsclient/package-lock.json) is installed with
// npm ci into testdata/tsclient/node_modules, which git ignores, the first
// time a test needs it; a tree that already holds the pinned version is
// reused.
const (
	tsClientDir     = "testdata/tsclient"
	tsClientVersion = "1.32.2"
)

var (
	tsOnce sync.Once
	tsNode string
	tsErr  error
	tsSkip string
)

// tsClient returns the node binary, installing the client on first use. It
// skips the test when node or npm is not installed.
func tsClient(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("installs and runs the TypeScript SDK client")
	}
	tsOnce.Do(func() {
		node, err := exec.LookPath("node")
		if err != nil {
			tsSkip = "node is not installed: the TypeScript SDK client cannot run"
			return
		}
		npm, err := exec.LookPath("npm")
		if err != nil {
			tsSkip = "npm is not installed: the TypeScript SDK client cannot be installed"
			return
		}
		tsNode = node
		pkg, _ := os.ReadFile(filepath.Join(tsClientDir, "node_modules/@modelcontextprotocol/sdk/package.json"))
		var installed struct{ Version string }
		if json.Unmarshal(pkg, &installed) == nil && installed.Version == tsClientVersion {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
		cmd.Dir = tsClientDir
		if out, err := cmd.CombinedOutput(); err != nil {
			tsErr = fmt.Errorf("npm ci in %s: %v\n%s", tsClientDir, err, out)
		}
	})
	if tsSkip != "" {
		t.Skip(tsSkip)
	}
	if tsErr != nil {
		t.Fatal(tsErr)
	}
	return tsNode
}

// tsOutput is what client.mjs prints.
type tsOutput struct {
	Capabilities map[string]any   `json:"capabilities"`
	Tools        []map[string]any `json:"tools"`
	Calls        []struct {
		Result *tsResult `json:"result"`
		Error  *struct {
			Code    any    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	} `json:"calls"`
	Pages []tsResult `json:"pages"`
}

// tsResult is a tools/call result as the TypeScript client parsed it.
type tsResult struct {
	Meta              map[string]json.RawMessage `json:"_meta"`
	Content           []map[string]json.RawMessage
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

type tsCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// runTS runs client.mjs once with the configurations cfgs, one run after
// another in one node process, and returns what each run printed.
func runTS(t *testing.T, cfgs ...map[string]any) []tsOutput {
	t.Helper()
	node := tsClient(t)
	arg, err := json.Marshal(cfgs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs", string(arg))
	cmd.Dir = tsClientDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("client.mjs: %v\nstderr:\n%s", err, stderr.String())
	}
	for _, canary := range []string{canaryCause, canaryAuthz, "CANARY"} {
		if strings.Contains(stdout.String(), canary) {
			t.Fatalf("the TypeScript client received private data %q", canary)
		}
	}
	var outs []tsOutput
	if err := json.Unmarshal(stdout.Bytes(), &outs); err != nil || len(outs) != len(cfgs) {
		t.Fatalf("client.mjs printed %q for %d runs: %v", stdout.String(), len(cfgs), err)
	}
	return outs
}

// tsStdio is the client configuration that starts this test binary as a
// stdio server (see TestMain): with the tool surface when mode is "tools",
// the plain test host when "1".
func tsStdio(mode string) map[string]any {
	exe, _ := filepath.Abs(os.Args[0])
	return map[string]any{"command": exe, "args": []string{"-test.run=^$"}, "env": map[string]string{serveStdioEnv: mode, "GORACE": childGORACE()}}
}

// tsHTTP serves s over streamable HTTP with the test's bearer tokens.
func tsHTTP(t *testing.T, s *mcp.Server, stateless bool) string {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	srv := httptest.NewServer(requireBearer(h))
	t.Cleanup(srv.Close)
	return srv.URL
}

// tsReadCalls are the read_resource calls every TypeScript run makes, in
// order; the indexes below name them.
var tsReadCalls = []string{"notes://readme", "notes://items/42", "bundle://partial", "bundle://empty", "who://ami",
	"secret://hidden", "nothing://here", "notes://items/%2e%2e", "relative/uri", "amb://h/x/y", "plan://h/1", "policy://broken", "bundle://none"}

var tsFailures = map[string]core.FailureKind{
	"secret://hidden": core.FailureUnavailable, "nothing://here": core.FailureUnavailable,
	"notes://items/%2e%2e": core.FailureInvalidRequest, "relative/uri": core.FailureInvalidRequest,
	"amb://h/x/y": core.FailureAmbiguous, "plan://h/1": core.FailureInvalidPlan,
	"policy://broken": core.FailurePolicy, "bundle://none": core.FailureNoItems,
}

func tsCalls() []tsCall {
	var calls []tsCall
	for _, u := range tsReadCalls {
		calls = append(calls, tsCall{ToolReadResource, map[string]any{"uri": u}})
	}
	return append(calls,
		tsCall{ToolReadResource, map[string]any{}},
		tsCall{ToolCompleteResourceURI, map[string]any{"template": "docs://d/{id}", "argument": "id", "value": "a"}},
		tsCall{"echo", map[string]any{"say": "hi"}})
}

// resource returns content item i of r as an embedded resource's fields.
func (r *tsResult) resource(t *testing.T, i int) map[string]json.RawMessage {
	t.Helper()
	if i >= len(r.Content) || string(r.Content[i]["type"]) != `"resource"` {
		t.Fatalf("content %d of %v is not an embedded resource", i, r.Content)
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(r.Content[i]["resource"], &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func jsonString(raw json.RawMessage) string {
	var s string
	json.Unmarshal(raw, &s)
	return s
}

// checkTSRun checks one TypeScript run against the tool surface of r for
// principal (who://ami reads it back; "(none)" without one).
func checkTSRun(t *testing.T, r *core.Resources, out tsOutput, principal string) {
	t.Helper()
	if out.Capabilities["tools"] == nil || out.Capabilities["resources"] == nil {
		t.Errorf("capabilities %v", out.Capabilities)
	}
	var names []string
	for _, tl := range out.Tools {
		names = append(names, tl["name"].(string))
	}
	if !slices.Equal(names, []string{"echo", ToolListResources, ToolReadResource, ToolCompleteResourceURI}) {
		t.Fatalf("tools %v", names)
	}
	if d := out.Tools[2]["description"].(string); !strings.Contains(d, "notes://items/{id}") || strings.Contains(d, "secret://") {
		t.Errorf("read_resource description %q", d)
	}
	if len(out.Calls) != len(tsCalls()) {
		t.Fatalf("%d calls answered", len(out.Calls))
	}
	ctx := context.Background()
	if principal != "(none)" {
		ctx = core.WithCaller(ctx, core.Caller{Principal: principal})
	}
	res := func(i int) *tsResult {
		t.Helper()
		c := out.Calls[i]
		if c.Error != nil || c.Result == nil {
			t.Fatalf("call %d (%v) failed in the client: %+v", i, tsCalls()[i], c.Error)
		}
		return c.Result
	}
	for i, uri := range tsReadCalls {
		got := res(i)
		if kind, ok := tsFailures[uri]; ok {
			msg := core.NewFailure(kind, nil).Error()
			ctx := context.Background()
			if principal != "(none)" {
				ctx = core.WithCaller(ctx, core.Caller{Principal: principal})
			}
			_, readErr := r.Read(ctx, uri)
			if core.KindOf(readErr) != kind {
				t.Fatalf("%s: the gateway answers %v, want %v", uri, readErr, kind)
			}
			want, _ := json.Marshal(toolErrorInfo{Error: failureFacts(readErr, false)})
			if !got.IsError || len(got.Content) != 1 || jsonString(got.Content[0]["text"]) != msg || !sameJSON(t, got.StructuredContent, json.RawMessage(want)) {
				t.Errorf("%s: %+v, want the tool error %q", uri, got, msg)
			}
			continue
		}
		want, err := r.Read(ctx, uri)
		if err != nil || got.IsError {
			t.Fatalf("%s: %+v, core %v", uri, got, err)
		}
		if len(got.Meta[wire.ReportMetaKey]) == 0 {
			t.Fatalf("%s: no report in _meta %v", uri, got.Meta)
		}
		if !sameJSON(t, got.Meta[wire.ReportMetaKey], want.Report()) {
			t.Errorf("%s: report %s, core %s", uri, got.Meta[wire.ReportMetaKey], want.Report())
		}
		items := want.Items()
		if len(got.Content) != len(items) {
			t.Fatalf("%s: %d items, core %d", uri, len(got.Content), len(items))
		}
		for j, it := range items {
			gotItem := got.resource(t, j)
			wantItem, _ := json.Marshal(newContent(it))
			gotEnc, _ := json.Marshal(gotItem)
			if it.URI() != jsonString(gotItem["uri"]) && !strings.HasPrefix(it.URI(), "mcp-warning://") {
				t.Errorf("%s item %d: uri %s", uri, j, gotItem["uri"])
			}
			if strings.HasPrefix(it.URI(), "mcp-warning://") {
				gotEnc, wantItem = warningURI.ReplaceAll(gotEnc, []byte("W")), warningURI.ReplaceAll(wantItem, []byte("W"))
			}
			if !sameJSON(t, json.RawMessage(gotEnc), json.RawMessage(wantItem)) {
				t.Errorf("%s item %d: the TypeScript client sees %s, core's item is %s", uri, j, gotEnc, wantItem)
			}
		}
	}
	// What the cases are for, spelled out.
	if w := res(2).resource(t, 0); !strings.HasPrefix(jsonString(w["uri"]), "mcp-warning://read/") || !strings.HasPrefix(jsonString(w["text"]), wire.WarningPrefix) {
		t.Errorf("partial bundle: the first item is %v, not the warning", w)
	}
	empty := res(3)
	if txt, ok := empty.resource(t, 0)["text"]; !ok || string(txt) != `""` {
		t.Errorf("empty text: %v", empty.resource(t, 0))
	}
	if b, ok := empty.resource(t, 1)["blob"]; !ok || string(b) != `""` {
		t.Errorf("empty blob: %v", empty.resource(t, 1))
	}
	if got := jsonString(res(4).resource(t, 0)["text"]); got != principal {
		t.Errorf("who://ami reads %q, want %q", got, principal)
	}
	if h, m := res(5), res(6); !sameJSON(t, h, m) {
		t.Errorf("hidden %+v, missing %+v", h, m)
	}
	if got := res(len(tsReadCalls)); !got.IsError || jsonString(got.Content[0]["text"]) != "invalid resource request" {
		t.Errorf("read_resource without uri: %+v", got)
	}
	if got := jsonString(res(len(tsReadCalls) + 1).Content[0]["text"]); got != `{"values":["a1","a2"],"total":2}` {
		t.Errorf("completion %s", got)
	}
	if got := jsonString(res(len(tsReadCalls) + 2).Content[0]["text"]); got != "hi" {
		t.Errorf("the host's echo tool says %q", got)
	}

	// list_resources pages to exactly what core lists for the principal.
	var listedR, listedT []string
	for _, p := range out.Pages {
		if p.IsError {
			t.Fatalf("list page %+v", p)
		}
		var page struct {
			Resources []struct{ URI string }
			Templates []struct{ URITemplate string } `json:"resourceTemplates"`
		}
		json.Unmarshal([]byte(jsonString(p.Content[0]["text"])), &page)
		for _, d := range page.Resources {
			listedR = append(listedR, d.URI)
		}
		for _, d := range page.Templates {
			listedT = append(listedT, d.URITemplate)
		}
	}
	wantR, wantT := coreListing(t, r, ctx)
	if !slices.Equal(listedR, wantR) || !slices.Equal(listedT, wantT) || len(out.Pages) < 3 {
		t.Errorf("%d pages listed %v and %v; core lists %v and %v", len(out.Pages), listedR, listedT, wantR, wantT)
	}
}

// coreListing is everything core lists for the caller of ctx.
func coreListing(t *testing.T, r *core.Resources, ctx context.Context) (resources, templates []string) {
	t.Helper()
	key := []byte("listing")
	p, err := r.List(ctx, core.ListRequest{ScopeKey: key, PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range p.Descriptions {
		resources = append(resources, d.URI)
	}
	p, err = r.ListTemplates(ctx, core.ListRequest{ScopeKey: key, PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range p.Descriptions {
		templates = append(templates, d.URITemplate)
	}
	return resources, templates
}

// The TypeScript SDK client, over stdio and streamable HTTP (with and
// without sessions), sees through the tool surface everything a resource
// read shows: exact and template reads, a partial bundle with its warning
// first and its report in _meta, empty text and blob, every failure as a
// tool error with core's fixed message, hidden and missing alike, and
// list_resources paging to the end. Its schema validation accepts every
// result.
func TestTypeScriptClientUsesTheToolSurface(t *testing.T) {
	t.Parallel() // mostly waits for node processes
	r, _ := newResources(t, core.ResourceLimits{}, toolBindings(t)...)
	base := map[string]any{"calls": tsCalls(), "listTool": ToolListResources}
	with := func(cfg map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range cfg {
			out[k] = v
		}
		return out
	}
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		checkTSRun(t, r, runTS(t, with(tsStdio("tools")))[0], "(none)")
	})
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprintf("http stateless=%v", stateless), func(t *testing.T) {
			t.Parallel()
			url := tsHTTP(t, newServer(r, toolServerOptions()), stateless)
			// Four clients, one after another: anonymous, two bearer tokens
			// each seeing its own data, and bob reading alice's resource.
			whos := []string{"alice", "bob"}
			outs := runTS(t, with(map[string]any{"url": url}),
				with(map[string]any{"url": url, "token": "token-" + whos[0]}),
				with(map[string]any{"url": url, "token": "token-" + whos[1]}),
				map[string]any{"url": url, "token": "token-bob", "calls": []tsCall{
					{ToolReadResource, map[string]any{"uri": "own://alice/1"}}, {ToolReadResource, map[string]any{"uri": "own://nobody/1"}}}})
			checkTSRun(t, r, outs[0], "(none)")
			for i, who := range whos {
				out := outs[1+i]
				checkTSRun(t, r, out, who)
				other := map[string]string{"alice": "bob", "bob": "alice"}[who]
				if d := out.Tools[2]["description"].(string); strings.Contains(d, "own://"+other) || !strings.Contains(d, "own://"+who) {
					t.Errorf("%s's read_resource description %q", who, d)
				}
			}
			out := outs[3]
			if a, b := out.Calls[0].Result, out.Calls[1].Result; a == nil || !a.IsError || !sameJSON(t, a, b) {
				t.Errorf("bob reading alice's resource %+v, a missing one %+v", a, b)
			}
		})
	}
}

// With the surface off, the TypeScript client lists exactly the host's
// tools, over stdio and HTTP.
func TestTypeScriptClientSeesOnlyTheHostsToolsWhenTheSurfaceIsOff(t *testing.T) {
	t.Parallel() // mostly waits for node processes
	r, _ := newResources(t, core.ResourceLimits{})
	names := []string{"stdio", "http"}
	outs := runTS(t, tsStdio("tools"), tsStdio("1"), map[string]any{"url": tsHTTP(t, newServer(r, &Options{Completions: true}), true)})
	on := outs[0]
	for i, name := range names {
		off := outs[1+i]
		if len(off.Tools) != 1 || !sameJSON(t, off.Tools[0], on.Tools[0]) || off.Tools[0]["name"] != "echo" {
			t.Errorf("%s: tools %v, want only the host's %v", name, off.Tools, on.Tools[0])
		}
		if off.Capabilities["tools"] == nil {
			t.Errorf("%s: the host's tools capability is gone: %v", name, off.Capabilities)
		}
	}
}
