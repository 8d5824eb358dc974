package mcpsdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/itemsize"

	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

// toolBindings are the bindings the tool tests add to the test host: a
// template whose binding completes its variable, one that alice alone may
// discover, and a resolver whose storage is down.
func toolBindings(t testing.TB) []core.ResourceBinding {
	completing := func(def core.ResourceDefinition, values []string) core.ResourceBinding {
		b := bundle(t, def, []string{"{uri}"}, text("doc"))
		b.Complete = func(_ context.Context, req core.CompletionRequest) (core.Completion, error) {
			var out []string
			for _, v := range values {
				if strings.HasPrefix(v, req.Prefix) {
					out = append(out, v)
				}
			}
			return core.Completion{Values: out, Total: len(out)}, nil
		}
		return b
	}
	outage := bundle(t, core.ResourceDefinition{URI: "outage://x", Name: "outage"}, []string{"{uri}"}, text("o"))
	outage.Resolver = core.ResolverFunc(func(context.Context, core.ResourceMatch) (core.ResourceReadPlan, error) {
		return core.ResourceReadPlan{}, core.NewFailure(core.FailureOutage, canaryErr("storage down"))
	})
	return []core.ResourceBinding{
		completing(core.ResourceDefinition{URITemplate: "docs://d/{id}", Name: "docs", Description: "Documents by id"}, []string{"a1", "a2", "b1", "bad/slash"}),
		completing(core.ResourceDefinition{URITemplate: "adocs://d/{id}", Name: "alice-docs"}, []string{"x1"}),
		outage,
	}
}

// toolServerOptions are the options of a server with the tool surface.
func toolServerOptions() *Options {
	return &Options{Tools: &ToolOptions{}, Completions: true, ListPageSize: 3}
}

// callTool calls a tool through c and returns the result and, when c taps
// the wire, the result exactly as the server wrote it.
func callTool(t testing.TB, c conn, name string, args any) (*mcp.CallToolResult, json.RawMessage) {
	t.Helper()
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	var raw json.RawMessage
	if c.tap != nil {
		raw = c.tap.last(t).Result
	}
	return res, raw
}

func readTool(t testing.TB, c conn, uri string) (*mcp.CallToolResult, json.RawMessage) {
	t.Helper()
	return callTool(t, c, ToolReadResource, map[string]any{"uri": uri})
}

// checkToolFailure fails unless res is the tool error of kind: isError,
// one text item with core's fixed message, and the safe facts mirrored in
// structuredContent.
func checkToolFailure(t testing.TB, what string, res *mcp.CallToolResult, kind core.FailureKind) {
	t.Helper()
	checkToolFailureOf(t, what, res, core.NewFailure(kind, nil))
}

// checkToolFailureOf is checkToolFailure for the gateway's own failure
// err, whose safe issues ("no item survived") the result must carry too.
func checkToolFailureOf(t testing.TB, what string, res *mcp.CallToolResult, err error) {
	t.Helper()
	kind := core.KindOf(err)
	msg := core.NewFailure(kind, nil).Error()
	if !res.IsError || len(res.Content) != 1 {
		t.Fatalf("%s: %+v, want an isError result of one item", what, res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != msg {
		t.Errorf("%s: content %#v, want the text %q", what, res.Content[0], msg)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	facts, _ := sc["error"].(map[string]any)
	var want map[string]any
	b, _ := json.Marshal(failureFacts(err, false))
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if kind == core.FailureOutage && want["retryable"] != true {
		t.Errorf("%s: an outage that is not retryable", what)
	}
	if fmt.Sprint(facts) != fmt.Sprint(want) || len(sc) != 1 {
		t.Errorf("%s: structuredContent %v, want {error: %v}", what, sc, want)
	}
}

// rawToolContent decodes the content of a tool result exactly as written.
func rawToolContent(t testing.TB, result json.RawMessage) []map[string]json.RawMessage {
	t.Helper()
	var r struct {
		Content []map[string]json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatal(err)
	}
	return r.Content
}

var warningURI = regexp.MustCompile(`mcp-warning://read/[0-9a-f]{32}`)

// The tool surface shows everything a resource read shows: for each URI,
// read_resource's embedded resources are, byte for byte, the content
// entries resources/read writes (the random warning URI aside), with the
// same report in _meta; failures carry the same fixed messages.
func TestReadResourceToolShowsWhatAResourceReadShows(t *testing.T) {
	t.Parallel() // independent; overlaps the tests that wait
	r, _ := newResources(t, core.ResourceLimits{}, toolBindings(t)...)
	forEachClient(t, func(t *testing.T, kind transportKind, version string) {
		c := connect(t, newServer(r, toolServerOptions()), kind, version, "")
		ctx := context.Background()

		t.Run("the tools capability is declared", func(t *testing.T) {
			if ir := c.cs.InitializeResult(); ir.Capabilities.Tools == nil || ir.Capabilities.Resources == nil {
				t.Fatalf("capabilities %+v", ir.Capabilities)
			}
		})

		t.Run("items are the read's content entries, embedded", func(t *testing.T) {
			for _, uri := range []string{"notes://readme", "notes://items/42", "bundle://partial", "bundle://empty", "who://ami", "docs://d/a1"} {
				res, raw := readTool(t, c, uri)
				read, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				if err != nil || res.IsError {
					t.Fatalf("%s: tool %+v, read %v", uri, res, err)
				}
				if len(res.Content) != len(read.Contents) {
					t.Fatalf("%s: %d items through the tool, %d through the read", uri, len(res.Content), len(read.Contents))
				}
				for i, cn := range res.Content {
					er, ok := cn.(*mcp.EmbeddedResource)
					if !ok {
						t.Fatalf("%s item %d: %#v", uri, i, cn)
					}
					got, want := *er.Resource, *read.Contents[i]
					got.URI, want.URI = warningURI.ReplaceAllString(got.URI, "W"), warningURI.ReplaceAllString(want.URI, "W")
					if !sameJSON(t, got, want) {
						t.Errorf("%s item %d: tool %+v, read %+v", uri, i, got, want)
					}
				}
				if c.tap == nil {
					continue
				}
				readRaw := c.tap.last(t).Result
				items, entries := rawToolContent(t, raw), rawContents(t, readRaw)
				for i := range items {
					if string(items[i]["type"]) != `"resource"` || len(items[i]) != 2 {
						t.Errorf("%s item %d: %v", uri, i, items[i])
					}
					got := warningURI.ReplaceAll(items[i]["resource"], []byte("W"))
					want, _ := json.Marshal(entries[i])
					want = warningURI.ReplaceAll(want, []byte("W"))
					if !sameJSON(t, got, want) {
						t.Errorf("%s item %d: tool %s, read %s", uri, i, got, want)
					}
				}
				if got, want := rawMeta(t, raw)[wire.ReportMetaKey], rawMeta(t, readRaw)[wire.ReportMetaKey]; !bytes.Equal(got, want) || len(got) == 0 {
					t.Errorf("%s: report through the tool %s, through the read %s", uri, got, want)
				}
			}
		})

		t.Run("a partial bundle puts the warning first and the report in _meta", func(t *testing.T) {
			res, raw := readTool(t, c, "bundle://partial")
			want, err := sizedRead(ctx, r, "bundle://partial", toolItemSize)
			if err != nil {
				t.Fatal(err)
			}
			w := res.Content[0].(*mcp.EmbeddedResource).Resource
			if !strings.HasPrefix(w.URI, "mcp-warning://read/") || w.Text != wire.WarningPrefix+string(want.Report()) || w.MIMEType != "text/plain" {
				t.Fatalf("warning item %+v", w)
			}
			if ok := res.Content[1].(*mcp.EmbeddedResource).Resource; ok.URI != "bundle://partial/ok" || ok.Text != "fine" || len(res.Content) != 2 {
				t.Fatalf("items %+v", res.Content)
			}
			if !sameJSON(t, res.Meta[wire.ReportMetaKey], want.Report()) {
				t.Errorf("report %v, core %s", res.Meta[wire.ReportMetaKey], want.Report())
			}
			if raw != nil {
				if got := rawMeta(t, raw)[wire.ReportMetaKey]; !bytes.Equal(got, want.Report()) {
					t.Errorf("report on the wire %s, core %s", got, want.Report())
				}
				var resource struct {
					Meta json.RawMessage `json:"_meta"`
				}
				json.Unmarshal(rawToolContent(t, raw)[0]["resource"], &resource)
				if string(resource.Meta) != `{"`+wire.ReportMetaKey+`":{"diagnostic":true,"inlineOnly":true}}` {
					t.Errorf("warning _meta %s", resource.Meta)
				}
			}
		})

		t.Run("empty text and empty blob stay on the wire", func(t *testing.T) {
			_, raw := readTool(t, c, "bundle://empty")
			if raw == nil {
				return
			}
			for i, want := range []string{
				`{"uri":"bundle://empty/text","mimeType":"text/plain","text":""}`,
				`{"uri":"bundle://empty/blob","mimeType":"application/octet-stream","blob":""}`,
				`{"uri":"bundle://empty/bin","mimeType":"application/octet-stream","blob":"//4AAQ=="}`,
			} {
				if got := string(rawToolContent(t, raw)[i]["resource"]); got != want {
					t.Errorf("item %d on the wire %s, want %s", i, got, want)
				}
			}
		})

		t.Run("failures are tool errors with core's fixed message", func(t *testing.T) {
			for _, tc := range []struct {
				uri  string
				kind core.FailureKind
			}{
				{"secret://hidden", core.FailureUnavailable},
				{"nothing://here", core.FailureUnavailable},
				{"notes://items/%2e%2e", core.FailureInvalidRequest},
				{"relative/uri", core.FailureInvalidRequest},
				{"amb://h/x/y", core.FailureAmbiguous},
				{"plan://h/1", core.FailureInvalidPlan},
				{"policy://broken", core.FailurePolicy},
				{"bundle://none", core.FailureNoItems},
				{"outage://x", 0}, // whatever core answers a resolver's outage with
			} {
				_, readErr := r.Read(ctx, tc.uri)
				if tc.kind == 0 {
					tc.kind = core.KindOf(readErr)
				}
				if core.KindOf(readErr) != tc.kind {
					t.Fatalf("%s: the gateway answers %v, want %v", tc.uri, readErr, tc.kind)
				}
				res, _ := readTool(t, c, tc.uri)
				checkToolFailureOf(t, tc.uri, res, readErr)
				_, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: tc.uri})
				if je := rpcError(t, err); je.Message != core.NewFailure(tc.kind, nil).Error() {
					t.Errorf("%s: the read says %q", tc.uri, je.Message)
				}
			}
			for what, args := range map[string]any{
				"no arguments":  nil,
				"no uri":        map[string]any{"url": "notes://readme"},
				"a uri of 42":   map[string]any{"uri": 42},
				"a null uri":    map[string]any{"uri": nil},
				"an array":      []any{"notes://readme"},
				"an empty uri":  map[string]any{"uri": ""},
				"a hostile uri": map[string]any{"uri": "notes://items/\x00\x7f\"\\"},
			} {
				res, _ := callTool(t, c, ToolReadResource, args)
				checkToolFailure(t, what, res, core.FailureInvalidRequest)
			}
		})

		t.Run("hidden and missing give byte-identical results", func(t *testing.T) {
			hidden, hraw := readTool(t, c, "secret://hidden")
			missing, mraw := readTool(t, c, "nothing://here")
			if !sameJSON(t, hidden, missing) || !bytes.Equal(hraw, mraw) {
				t.Errorf("hidden %+v (%s), missing %+v (%s)", hidden, hraw, missing, mraw)
			}
		})

		t.Run("the host's tools still work", func(t *testing.T) {
			res, _ := callTool(t, c, "echo", map[string]any{"say": "hi"})
			if res.IsError || res.Content[0].(*mcp.TextContent).Text != "hi" {
				t.Fatalf("%+v", res)
			}
			_, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"})
			if je := rpcError(t, err); je.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("unknown tool: %d %q", je.Code, je.Message)
			}
		})
		noCanary(t, c)
	})
}

// listAllByTool pages list_resources to the end and returns what each page
// listed, in order, as "uri" or "template" strings, and the cursors it saw.
func listAllByTool(t testing.TB, c conn) (resources, templates, cursors []string) {
	t.Helper()
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 50 {
			t.Fatal("list_resources does not end")
		}
		args := map[string]any{}
		if cursor != "" {
			args["cursor"] = cursor
		}
		res, _ := callTool(t, c, ToolListResources, args)
		if res.IsError || len(res.Content) != 1 {
			t.Fatalf("page %d: %+v", pages, res)
		}
		var page struct {
			Resources  []map[string]any `json:"resources"`
			Templates  []map[string]any `json:"resourceTemplates"`
			NextCursor string           `json:"nextCursor"`
		}
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &page); err != nil {
			t.Fatal(err)
		}
		if page.Resources != nil && page.Templates != nil {
			t.Fatalf("page %d mixes the lists", pages)
		}
		for _, d := range page.Resources {
			resources = append(resources, d["uri"].(string))
		}
		for _, d := range page.Templates {
			templates = append(templates, d["uriTemplate"].(string))
		}
		if page.NextCursor == "" {
			return resources, templates, cursors
		}
		cursors = append(cursors, page.NextCursor)
		cursor = page.NextCursor
	}
}

// list_resources pages both lists, resources then templates, and lists
// exactly what resources/list and resources/templates/list list.
func TestListResourcesToolPagesBothListsLikeTheListMethods(t *testing.T) {
	r, _ := newResources(t, core.ResourceLimits{}, toolBindings(t)...)
	for _, kind := range []transportKind{pipes, stateless} {
		t.Run(string(kind), func(t *testing.T) {
			c := connect(t, newServer(r, toolServerOptions()), kind, "", "")
			ctx := context.Background()
			resources, templates, cursors := listAllByTool(t, c)
			var wantR, wantT []string
			for d, err := range c.cs.Resources(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				wantR = append(wantR, d.URI)
			}
			for d, err := range c.cs.ResourceTemplates(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				wantT = append(wantT, d.URITemplate)
			}
			if !slices.Equal(resources, wantR) || !slices.Equal(templates, wantT) {
				t.Fatalf("tool listed %v and %v; the methods %v and %v", resources, templates, wantR, wantT)
			}
			if slices.Contains(resources, "secret://hidden") || slices.Contains(templates, "adocs://d/{id}") {
				t.Fatal("a hidden definition was listed")
			}
			if !slices.Contains(cursors, toolCursorTemplates) {
				t.Errorf("cursors %q: the last page of resources does not lead to the templates", cursors)
			}

			// A tampered, foreign or unprefixed cursor is an invalid cursor, and
			// a tool cursor is no resources/list cursor.
			flip := []byte(cursors[0])
			flip[len(flip)-3] ^= 1
			page, err := c.cs.ListResources(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, bad := range []string{string(flip), "x:" + cursors[0][2:], cursors[0][2:], "r:", "t:" + cursors[0][2:], "r:" + strings.Repeat("A", wire.MaxCursorBytes+1), "\x00\x7f"} {
				res, _ := callTool(t, c, ToolListResources, map[string]any{"cursor": bad})
				checkToolFailure(t, fmt.Sprintf("cursor %.20q", bad), res, core.FailureInvalidCursor)
			}
			_, err = c.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursors[0]})
			if je := rpcError(t, err); je.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("resources/list took a tool cursor: %v", err)
			}
			// The tool's cursor is core's signed cursor behind "r:": the same
			// listing, for the same caller, continues either way.
			res, _ := callTool(t, c, ToolListResources, map[string]any{"cursor": toolCursorResources + page.NextCursor})
			if res.IsError {
				t.Errorf("a resources/list cursor behind r: is refused: %+v", res)
			}
			for what, args := range map[string]any{"a cursor of 7": map[string]any{"cursor": 7}, "an array": []any{}} {
				res, _ := callTool(t, c, ToolListResources, args)
				checkToolFailure(t, what, res, core.FailureInvalidRequest)
			}
			noCanary(t, c)
		})
	}
}

// A call whose resources page would be empty and last answers with the
// first page of templates; a registry with neither lists an empty page.
func TestListResourcesToolGoesStraightToTemplatesWhenNoResourceIsVisible(t *testing.T) {
	mk := func(bs ...core.ResourceBinding) *core.Resources {
		r, err := core.NewResources(bs, (&testHost{}).policy())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	only := mk(bundle(t, core.ResourceDefinition{URITemplate: "t://x/{a}", Name: "t"}, []string{"{uri}"}, text("t")),
		bundle(t, core.ResourceDefinition{URI: "secret://hidden", Name: "hidden"}, []string{"{uri}"}, text("s")))
	c := connect(t, newServer(only, &Options{Tools: &ToolOptions{}}), pipes, "", "")
	res, _ := callTool(t, c, ToolListResources, nil)
	if got := res.Content[0].(*mcp.TextContent).Text; got != `{"resourceTemplates":[{"uriTemplate":"t://x/{a}","name":"t"}]}` {
		t.Errorf("first page %s", got)
	}
	empty := mk(bundle(t, core.ResourceDefinition{URI: "secret://hidden", Name: "hidden"}, []string{"{uri}"}, text("s")))
	c = connect(t, newServer(empty, &Options{Tools: &ToolOptions{}}), pipes, "", "")
	res, _ = callTool(t, c, ToolListResources, nil)
	if got := res.Content[0].(*mcp.TextContent).Text; got != `{"resourceTemplates":[]}` {
		t.Errorf("empty registry %s", got)
	}
	tools, err := c.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := tools.Tools[2].Description; !strings.Contains(d, "No resources are listed for you now") || strings.Contains(d, "secret://") {
		t.Errorf("read_resource description with nothing visible: %q", d)
	}
}

// Every failure kind, including those no test host URI reaches over the
// wire (a size failure, a timeout, a cancellation, a host function that
// panics), is a tool error with the kind's fixed message and no cause.
func TestEveryFailureKindIsAToolErrorWithoutItsCause(t *testing.T) {
	a := &adapter{}
	for kind := core.FailureUnavailable; kind <= core.FailureOutage; kind++ {
		res := a.toolFailure(core.NewFailure(kind, canaryErr("cause")), "")
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`{"content":[{"type":"text","text":%q}],"structuredContent":{"error":{"kind":%q,"code":%d,"message":%q,"retryable":%v}},"isError":true}`,
			core.NewFailure(kind, nil).Error(), kind.String(), ErrorCode(kind, false), core.NewFailure(kind, nil).Error(), kind == core.FailureOutage)
		if string(b) != want {
			t.Errorf("%v:\n got %s\nwant %s", kind, b, want)
		}
	}
	if b, _ := json.Marshal(a.toolFailure(canaryErr("plain"), "")); bytes.Contains(b, []byte("CANARY")) || !bytes.Contains(b, []byte(internalMessage)) {
		t.Errorf("a plain error: %s", b)
	}
	if b, _ := json.Marshal((&adapter{legacyNotFound: true}).toolFailure(core.NewFailure(core.FailureUnavailable, nil), "")); !bytes.Contains(b, []byte(`"code":-32002`)) {
		t.Errorf("legacy code: %s", b)
	}

	t.Run("timeout", func(t *testing.T) {
		r, _ := newResources(t, core.ResourceLimits{ReadTimeout: 300 * time.Millisecond, ItemTimeout: 300 * time.Millisecond})
		c := connect(t, newServer(r, &Options{Tools: &ToolOptions{}}), pipes, "", "")
		res, _ := readTool(t, c, "bundle://slow")
		checkToolFailure(t, "slow read", res, core.FailureTimeout)
	})
	t.Run("size", func(t *testing.T) {
		big := bundle(t, core.ResourceDefinition{URI: "big://x", Name: "big", Description: strings.Repeat("d", 1000)}, []string{"{uri}"}, text("b"))
		r, err := core.NewResources([]core.ResourceBinding{big}, (&testHost{}).policy(), core.WithResourceLimits(core.ResourceLimits{ListPageBytes: 8704}))
		if err != nil {
			t.Fatal(err)
		}
		c := connect(t, newServer(r, &Options{Tools: &ToolOptions{}}), pipes, "", "")
		res, _ := callTool(t, c, ToolListResources, nil)
		checkToolFailure(t, "an oversized description", res, core.FailureSize)
	})
	t.Run("canceled", func(t *testing.T) {
		r, _ := newResources(t, core.ResourceLimits{})
		a := &adapter{r: r, timeout: time.Minute, principal: TokenPrincipal, tools: newToolSurface(&ToolOptions{}, false)}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		res := a.callTool(ctx, ToolReadResource, json.RawMessage(`{"uri":"bundle://slow"}`), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: ToolReadResource}})
		if b, _ := json.Marshal(res); !res.IsError || !bytes.Contains(b, []byte(`"text":"resource operation canceled"`)) {
			t.Errorf("canceled read: %s", b)
		}
	})
	t.Run("a panicking principal function", func(t *testing.T) {
		r, _ := newResources(t, core.ResourceLimits{})
		panicky := func(context.Context, mcp.Request) string { panic(canaryCause) }
		var observed []Observation
		c := connect(t, newServer(r, &Options{Tools: &ToolOptions{}, Principal: panicky, Observe: func(_ context.Context, o Observation) { observed = append(observed, o) }}), pipes, "", "")
		res, raw := readTool(t, c, "notes://readme")
		if !res.IsError || res.Content[0].(*mcp.TextContent).Text != internalMessage || bytes.Contains(raw, []byte("CANARY")) {
			t.Errorf("%s", raw)
		}
		tools, err := c.cs.ListTools(context.Background(), nil)
		if err != nil || len(tools.Tools) != 3 || !strings.Contains(tools.Tools[2].Description, "No resources are listed") {
			t.Errorf("tools/list with a panicking principal: %v %+v", err, tools)
		}
		if len(observed) != 1 || observed[0].Err == nil || observed[0].Method != MethodReadResource {
			t.Errorf("observed %+v", observed)
		}
		noCanary(t, c)
	})
	t.Run("an empty scope key", func(t *testing.T) {
		r, _ := newResources(t, core.ResourceLimits{})
		c := connect(t, newServer(r, &Options{Tools: &ToolOptions{}, Scope: func(context.Context, mcp.Request) []byte { return nil }}), inMemory, "", "")
		res, _ := callTool(t, c, ToolListResources, nil)
		if !res.IsError || res.Content[0].(*mcp.TextContent).Text != internalMessage {
			t.Errorf("%+v", res)
		}
	})
}

// Two bearer tokens see their own data through the tools: their own
// principal in the stores, their own lists, their own read_resource
// description, and cursors that do not cross.
func TestBearerClientsSeeTheirOwnDataThroughTools(t *testing.T) {
	r, _ := newResources(t, core.ResourceLimits{}, toolBindings(t)...)
	for _, kind := range []transportKind{stateful, stateless} {
		for _, v := range protocols {
			t.Run(fmt.Sprintf("%s/%q", kind, v), func(t *testing.T) {
				s := newServer(r, toolServerOptions())
				alice := connect(t, s, kind, v, "token-alice")
				bob := connect(t, s, kind, v, "token-bob")
				for who, c := range map[string]conn{"alice": alice, "bob": bob} {
					res, _ := readTool(t, c, "who://ami")
					if res.IsError || res.Content[0].(*mcp.EmbeddedResource).Resource.Text != who {
						t.Errorf("%s reads who://ami as %+v", who, res.Content)
					}
				}
				a, aT, aCursors := listAllByTool(t, alice)
				b, bT, bCursors := listAllByTool(t, bob)
				if !slices.Contains(a, "own://alice/1") || slices.Contains(a, "own://bob/1") || !slices.Contains(aT, "adocs://d/{id}") {
					t.Errorf("alice listed %v %v", a, aT)
				}
				if !slices.Contains(b, "own://bob/1") || slices.Contains(b, "own://alice/1") || slices.Contains(bT, "adocs://d/{id}") {
					t.Errorf("bob listed %v %v", b, bT)
				}
				res, _ := callTool(t, bob, ToolListResources, map[string]any{"cursor": aCursors[0]})
				checkToolFailure(t, "bob with alice's cursor", res, core.FailureInvalidCursor)
				res, _ = callTool(t, alice, ToolListResources, map[string]any{"cursor": bCursors[0]})
				checkToolFailure(t, "alice with bob's cursor", res, core.FailureInvalidCursor)

				denied, draw := readTool(t, bob, "own://alice/1")
				missing, mraw := readTool(t, bob, "own://nobody/1")
				checkToolFailure(t, "bob reads alice's", denied, core.FailureUnavailable)
				if !bytes.Equal(draw, mraw) || !sameJSON(t, denied, missing) {
					t.Errorf("bob: alice's resource %s, a missing one %s", draw, mraw)
				}
				descOf := func(c conn) string {
					tools, err := c.cs.ListTools(context.Background(), nil)
					if err != nil {
						t.Fatal(err)
					}
					for _, tl := range tools.Tools {
						if tl.Name == ToolReadResource {
							return tl.Description
						}
					}
					t.Fatal("no read_resource tool")
					return ""
				}
				if d := descOf(alice); !strings.Contains(d, "adocs://d/{id}") || strings.Contains(d, "secret://") {
					t.Errorf("alice's description %q", d)
				}
				if d := descOf(bob); strings.Contains(d, "adocs://") || strings.Contains(d, "alice") || strings.Contains(d, "secret://") {
					t.Errorf("bob's description names what he may not discover: %q", d)
				}
				// Completion offers only what the caller may discover: bob
				// gets for alice's template what an unknown template gives.
				comp := func(c conn, tmpl string) string {
					res, _ := callTool(t, c, ToolCompleteResourceURI, map[string]any{"template": tmpl, "argument": "id", "value": ""})
					if res.IsError {
						t.Fatalf("%+v", res)
					}
					return res.Content[0].(*mcp.TextContent).Text
				}
				if got := comp(alice, "adocs://d/{id}"); got != `{"values":["x1"],"total":1}` {
					t.Errorf("alice completes %s", got)
				}
				if got, unknown := comp(bob, "adocs://d/{id}"), comp(bob, "none://{x}"); got != `{"values":[]}` || got != unknown {
					t.Errorf("bob completes alice's template as %s, an unknown one as %s", got, unknown)
				}
				noCanary(t, alice)
				noCanary(t, bob)
			})
		}
	}
}

// complete_resource_uri answers what completion/complete answers, and is
// listed only when the host turned completion on.
func TestCompleteResourceURIToolAnswersLikeCompletion(t *testing.T) {
	r, _ := newResources(t, core.ResourceLimits{}, toolBindings(t)...)
	c := connect(t, newServer(r, toolServerOptions()), pipes, "2025-11-25", "")
	ctx := context.Background()
	for _, prefix := range []string{"", "a", "b", "zz"} {
		res, _ := callTool(t, c, ToolCompleteResourceURI, map[string]any{"template": "docs://d/{id}", "argument": "id", "value": prefix})
		var got toolCompletion
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &got); err != nil || res.IsError {
			t.Fatalf("%q: %+v %v", prefix, res, err)
		}
		want, err := c.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "docs://d/{id}"},
			Argument: mcp.CompleteParamsArgument{Name: "id", Value: prefix}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Values, want.Completion.Values) || got.Total != want.Completion.Total || got.HasMore != want.Completion.HasMore {
			t.Errorf("%q: tool %+v, completion %+v", prefix, got, want.Completion)
		}
		if slices.Contains(got.Values, "bad/slash") {
			t.Errorf("%q: a value no capture can hold was offered", prefix)
		}
	}
	for what, args := range map[string]any{"no template": map[string]any{"argument": "id"}, "no argument": map[string]any{"template": "docs://d/{id}"},
		"arguments not strings": map[string]any{"template": "docs://d/{id}", "argument": "id", "arguments": map[string]any{"x": 1}}} {
		res, _ := callTool(t, c, ToolCompleteResourceURI, args)
		checkToolFailure(t, what, res, core.FailureInvalidRequest)
	}

	off := connect(t, newServer(r, &Options{Tools: &ToolOptions{}}), pipes, "", "")
	tools, err := off.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"echo", ToolListResources, ToolReadResource}) {
		t.Errorf("without Completions the tools are %v", names)
	}
	_, err = off.cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolCompleteResourceURI, Arguments: map[string]any{}})
	if je := rpcError(t, err); je.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("an unlisted completion tool answered: %v", err)
	}
}

// With the surface off, tools/list and the capabilities are byte for byte
// what the same host gets without the adapter; with it on, the host's
// tools come first, unchanged.
func TestToolsListIsTheHostsWhenTheSurfaceIsOff(t *testing.T) {
	r, _ := newResources(t, core.ResourceLimits{}, toolBindings(t)...)
	plain := func() *mcp.Server {
		s := newServer(r, nil)
		return s
	}
	bare := mcp.NewServer(&mcp.Implementation{Name: "test-server", Version: "v0.0.1"}, nil)
	mcp.AddTool(bare, &mcp.Tool{Name: "echo", Description: "echoes"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Say string `json:"say"`
	}) (*mcp.CallToolResult, any, error) {
		return nil, nil, nil
	})
	for _, v := range protocols {
		listed := func(s *mcp.Server) (json.RawMessage, *mcp.ListToolsResult) {
			c := connect(t, s, pipes, v, "")
			res, err := c.cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			return c.tap.last(t).Result, res
		}
		want, _ := listed(bare)
		for name, s := range map[string]*mcp.Server{"nil options": plain(),
			"every other option": newServer(r, &Options{Completions: true, ListPageSize: 2, LegacyNotFoundCode: true, Observe: func(context.Context, Observation) {}})} {
			if got, _ := listed(s); !bytes.Equal(got, want) {
				t.Errorf("protocol %q, %s: tools/list %s, without the adapter %s", v, name, got, want)
			}
		}
		_, on := listed(newServer(r, toolServerOptions()))
		if len(on.Tools) != 4 || on.Tools[0].Name != "echo" || on.Tools[0].Description != "echoes" ||
			on.Tools[1].Name != ToolListResources || on.Tools[2].Name != ToolReadResource || on.Tools[3].Name != ToolCompleteResourceURI {
			t.Errorf("protocol %q: with the surface %+v", v, on.Tools)
		}
		if on.CacheScope != "private" {
			t.Errorf("protocol %q: a per-caller tools/list is cached as %q", v, on.CacheScope)
		}
	}
	// A host without tools of its own gets the capability from the surface.
	s, _ := adapted(&mcp.Implementation{Name: "x", Version: "1"}, nil, r, &Options{Tools: &ToolOptions{}})
	c := connect(t, s, inMemory, "", "")
	if caps := c.cs.InitializeResult().Capabilities; caps.Tools == nil || caps.Resources == nil {
		t.Errorf("capabilities %+v", caps)
	}
	s, _ = adapted(&mcp.Implementation{Name: "x", Version: "1"}, nil, r, nil)
	c = connect(t, s, inMemory, "", "")
	if caps := c.cs.InitializeResult().Capabilities; caps.Tools != nil {
		t.Errorf("without the surface the tools capability is declared: %+v", caps.Tools)
	}
}

// read_resource's description names the templates and resources the
// caller may discover, never a hidden one, within MaxToolDescriptionBytes;
// the surface's three tools stay within the stated 16 KiB.
func TestToolDescriptionsAreBoundedAndPerCaller(t *testing.T) {
	var bs []core.ResourceBinding
	for i := range 300 {
		name := fmt.Sprintf("t%03d", i)
		if i%3 == 0 {
			name = "alice-" + name
		}
		bs = append(bs, bundle(t, core.ResourceDefinition{URITemplate: fmt.Sprintf("many://t/%03d/{id}", i), Name: name,
			Title: strings.Repeat("T\n", 100), Description: strings.Repeat("é\u2028\x01", 200)}, []string{"{uri}"}, text("x")))
	}
	bs = append(bs, bundle(t, core.ResourceDefinition{URI: "long://" + strings.Repeat("u", 400), Name: "long"}, []string{"{uri}"}, text("x")))
	r, err := core.NewResources(bs, (&testHost{}).policy())
	if err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"alice", "bob"} {
		a := &adapter{r: r, timeout: time.Minute, principal: func(context.Context, mcp.Request) string { return who }, complete: true,
			tools: newToolSurface(&ToolOptions{}, true)}
		req := &mcp.ListToolsRequest{}
		tools := a.toolDefinitions(context.Background(), req)
		enc, err := json.Marshal(tools)
		if err != nil {
			t.Fatal(err)
		}
		if len(enc) > 16<<10 {
			t.Errorf("%s: the tools add %d bytes", who, len(enc))
		}
		d := tools[1].Description
		if len(d) > MaxToolDescriptionBytes || !utf8Valid(d) || !strings.HasSuffix(d, "and more: call list_resources.") {
			t.Errorf("%s: description of %d bytes ends %q", who, len(d), d[max(0, len(d)-60):])
		}
		for _, line := range strings.Split(d, "\n") {
			if strings.HasPrefix(line, "- ") && len(line) > maxToolLineBytes || strings.ContainsAny(line, "\x01\u2028") {
				t.Errorf("%s: line %q", who, line)
			}
		}
		hidden := who == "bob" && strings.Contains(d, "many://t/000/")
		if hidden || (who == "alice" && !strings.Contains(d, "many://t/000/{id} - alice-t000")) {
			t.Errorf("%s: description %q", who, d)
		}
		t.Logf("%s: read_resource description %d bytes, the three tools %d bytes", who, len(d), len(enc))
	}
}

// sameJSON reports whether a and b (values, or JSON text as []byte or
// json.RawMessage) encode the same JSON value.
func sameJSON(t testing.TB, a, b any) bool {
	t.Helper()
	norm := func(v any) string {
		var raw []byte
		switch x := v.(type) {
		case json.RawMessage:
			raw = x
		case []byte:
			raw = x
		default:
			var err error
			if raw, err = json.Marshal(v); err != nil {
				t.Fatal(err)
			}
		}
		var out any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		enc, _ := json.Marshal(out) // map keys sorted
		return string(enc)
	}
	return norm(a) == norm(b)
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\x00") == s }

// Observe sees each tool call once, as the resource operation it ran, and
// ObservedTool names the tool.
func TestToolCallsAreObservedAsTheOperationsTheyRun(t *testing.T) {
	r, _ := newResources(t, core.ResourceLimits{}, toolBindings(t)...)
	var mu sync.Mutex
	type seen struct {
		o    Observation
		tool string
	}
	var got []seen
	observe := func(ctx context.Context, o Observation) {
		mu.Lock()
		got = append(got, seen{o, ObservedTool(ctx)})
		mu.Unlock()
	}
	opts := toolServerOptions()
	opts.Observe = observe
	opts.Tools.NamePrefix = "db_"
	c := connect(t, newServer(r, opts), inMemory, "", "")
	ctx := context.Background()
	callTool(t, c, "db_read_resource", map[string]any{"uri": "bundle://partial"})
	callTool(t, c, "db_read_resource", map[string]any{"uri": "secret://hidden"})
	callTool(t, c, "db_list_resources", nil)
	callTool(t, c, "db_list_resources", map[string]any{"cursor": "t:"})
	callTool(t, c, "db_complete_resource_uri", map[string]any{"template": "docs://d/{id}", "argument": "id"})
	c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://readme"})
	callTool(t, c, "echo", map[string]any{"say": "x"})
	mu.Lock()
	defer mu.Unlock()
	var methods, tools []string
	for _, s := range got {
		methods = append(methods, s.o.Method)
		tools = append(tools, s.tool)
	}
	if want := []string{MethodReadResource, MethodReadResource, MethodListResources, MethodListResourceTemplates, MethodComplete, MethodReadResource}; !slices.Equal(methods, want) {
		t.Fatalf("observed %q, want %q", methods, want)
	}
	if want := []string{"db_read_resource", "db_read_resource", "db_list_resources", "db_list_resources", "db_complete_resource_uri", ""}; !slices.Equal(tools, want) {
		t.Errorf("tools %q, want %q", tools, want)
	}
	if o := got[0].o; o.Err != nil || o.Result == nil || !o.Result.Partial() || o.Duration <= 0 {
		t.Errorf("partial tool read observed as %+v", o)
	}
	if o := got[1].o; core.KindOf(o.Err) != core.FailureUnavailable || o.Result != nil {
		t.Errorf("unavailable tool read observed as %+v", o)
	}
	if _, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolReadResource, Arguments: map[string]any{"uri": "notes://readme"}}); err == nil {
		t.Error("the unprefixed name is served too")
	}
}

func TestNamePrefixIsCheckedAtNewServer(t *testing.T) {
	r, _ := newResources(t, core.ResourceLimits{})
	for _, bad := range []string{"db ", "ü_", "a/b", strings.Repeat("p", 65)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("prefix %q: no panic", bad)
				}
			}()
			New(r, &Options{Tools: &ToolOptions{NamePrefix: bad}}).NewServer(&mcp.Implementation{Name: "x"}, nil)
		}()
	}
	New(r, &Options{Tools: &ToolOptions{NamePrefix: "My-db.v2_"}}).NewServer(&mcp.Implementation{Name: "x"}, nil)
}

// TestToolReadBytesStayWithinWhatCoreAdmitted is the parity test of reads
// for read_resource: [corpusReads] random results per protocol, each result's
// bytes on the wire never more than core admitted under the tool's sizer
// plus the wire reserve, in fact within a fixed margin: from -2 (the
// envelope says "content", one byte shorter than the "contents" core
// counts, and the last item has no separator after it) to the fields the
// SDK adds (resultType and serverInfo at 2026-07-28); every embedded
// resource is exactly the sizer's estimate minus its separator.
func TestToolReadBytesStayWithinWhatCoreAdmitted(t *testing.T) {
	t.Parallel() // CPU-bound and independent: it overlaps the other corpus reads
	r, _ := newResources(t, core.ResourceLimits{}, randomBinding(t))
	for _, v := range protocols {
		t.Run(fmt.Sprintf("protocol %q", v), func(t *testing.T) {
			t.Parallel()
			c := connect(t, newServer(r, &Options{Tools: &ToolOptions{}}), pipes, v, "")
			ctx := context.Background()
			minM, maxM := int64(1<<62), int64(-1<<62)
			var seen corpusCoverage
			for n := range corpusReads {
				uri := fmt.Sprintf("rand://r/%d", n)
				want, werr := sizedRead(ctx, r, uri, toolItemSize)
				noCanary(t, c)
				c.tap.reset()
				res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolReadResource, Arguments: map[string]any{"uri": uri}})
				if err != nil || res.IsError != (werr != nil) {
					t.Fatalf("%s: tool %+v %v, core %v", uri, res, err, werr)
				}
				seen.add(want, werr)
				if werr != nil {
					continue
				}
				msg := c.tap.last(t)
				admitted := int64(len(`{"_meta":,"contents":[]}`) + len(want.Meta()))
				items := want.Items()
				for _, it := range items {
					admitted += toolItemSize(itemOf(it))
				}
				got := int64(len(msg.Result))
				if got > admitted+wire.ReserveBytes {
					t.Fatalf("%s: %d bytes on the wire, core admitted %d", uri, got, admitted)
				}
				margin := got - admitted
				minM, maxM = min(minM, margin), max(maxM, margin)
				var raws struct {
					Content []json.RawMessage `json:"content"`
				}
				if err := json.Unmarshal(msg.Result, &raws); err != nil {
					t.Fatal(err)
				}
				if len(raws.Content) != len(items) {
					t.Fatalf("%s: %d items on the wire, core %d", uri, len(raws.Content), len(items))
				}
				for i, it := range items {
					if est := toolItemSize(itemOf(it)); int64(len(raws.Content[i]))+1 != est {
						t.Fatalf("%s item %d: %d bytes on the wire, sizer %d: %s", uri, i, len(raws.Content[i]), est, raws.Content[i])
					}
				}
			}
			t.Logf("protocol %q: tool result margin over core's admitted size %d..%d bytes", v, minM, maxM)
			if maxM > wire.ConfigOverheadBytes || minM < -2 {
				t.Errorf("margin %d..%d is not the small fixed one", minM, maxM)
			}
			seen.check(t)
		})
	}
}

func TestToolItemSizeIsExactForEveryShape(t *testing.T) {
	meta := []byte(`{"k":{"diagnostic":true}}`)
	for _, it := range []itemsize.Item{
		{URI: "a://x", MIMEType: "text/plain", Text: ""},
		{URI: "a://x", MIMEType: "text/plain", Text: "\x00\x1f\"\\\n\u2028<>&é😀\x7f"},
		{URI: "a://x", MIMEType: "text/plain", Text: "bad \xff\xc0"},
		{URI: "a://\"q\"", MIMEType: "application/octet-stream", IsBlob: true, Blob: []byte{}},
		{URI: "a://x", MIMEType: "a/b", IsBlob: true, Blob: []byte{1, 2}},
		{URI: "a://x", MIMEType: "a/b", Text: "t", Meta: meta},
	} {
		c := content{URI: it.URI, MIMEType: it.MIMEType, Meta: it.Meta}
		if it.IsBlob {
			c.Blob = &it.Blob
		} else {
			c.Text = &it.Text
		}
		enc, err := marshal(embeddedResource{Type: "resource", Resource: c})
		if err != nil {
			t.Fatal(err)
		}
		if got := toolItemSize(it); got != int64(len(enc))+1 {
			t.Errorf("toolItemSize %d, encoded %d+1: %s", got, len(enc), enc)
		}
	}
}

// Core admits read_resource's items under the tool's own sizer: a bundle
// that just fits a read's encoded budget loses its last item through the
// tool, whose entries are larger, and says so in its report.
func TestToolReadsAreAdmittedForTheToolShape(t *testing.T) {
	// Find the encoded budget at which resources/read admits both items
	// of a two-item bundle and read_resource only one.
	item := strings.Repeat("x", 4000)
	two := bundle(t, core.ResourceDefinition{URI: "two://x", Name: "two"}, []string{"two://x/1", "two://x/2"}, text(item))
	limits := core.DefaultResourceLimits()
	base := limits.ReportEncodedBytes + wire.ReserveBytes + wire.ConfigOverheadBytes
	var found bool
	for extra := int64(7000); extra < 10000 && !found; extra++ {
		l := core.ResourceLimits{MaxResponseEncodedBytes: base + extra}
		r, err := core.NewResources([]core.ResourceBinding{two}, (&testHost{}).policy(), core.WithResourceLimits(l))
		if err != nil {
			t.Fatal(err)
		}
		read, err1 := sizedRead(context.Background(), r, "two://x", itemSize)
		tool, err2 := sizedRead(context.Background(), r, "two://x", toolItemSize)
		if err1 != nil || err2 != nil || read.Partial() || !tool.Partial() {
			continue
		}
		found = true
		c := connect(t, newServer(r, &Options{Tools: &ToolOptions{}}), pipes, "", "")
		res, _ := readTool(t, c, "two://x")
		if len(res.Content) != 2 || !strings.Contains(res.Content[0].(*mcp.EmbeddedResource).Resource.Text, "budget_exceeded") {
			t.Errorf("at %d extra bytes the tool answers %+v", extra, res.Content)
		}
		if rr, err := c.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "two://x"}); err != nil || len(rr.Contents) != 2 || rr.Contents[0].URI != "two://x/1" {
			t.Errorf("the read: %v %+v", err, rr)
		}
	}
	if !found {
		t.Fatal("no budget separates the read's admission from the tool's")
	}
}

// When the SDK pages tools/list, the surface's tools come after the host's
// on the last page only, and no page repeats them.
func TestSurfaceToolsFollowTheHostsOnTheLastToolsPage(t *testing.T) {
	r, _ := newResources(t, core.ResourceLimits{})
	s, _ := adapted(&mcp.Implementation{Name: "x", Version: "1"}, &mcp.ServerOptions{PageSize: 1}, r, &Options{Tools: &ToolOptions{}})
	for _, name := range []string{"a", "b"} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	c := connect(t, s, inMemory, "", "")
	var pages [][]string
	cursor := ""
	for range 10 {
		res, err := c.cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		pages = append(pages, names)
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	if fmt.Sprint(pages) != "[[a] [b list_resources read_resource]]" {
		t.Errorf("pages %v", pages)
	}
}
