package mcpsdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/wire"
	"go.phpboyscout.uk/mcp/resources/live"
)

// rawContents decodes the contents of a read result exactly as written.
func rawContents(t testing.TB, result json.RawMessage) []map[string]json.RawMessage {
	t.Helper()
	var r struct {
		Contents []map[string]json.RawMessage `json:"contents"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatal(err)
	}
	return r.Contents
}

func rawMeta(t testing.TB, result json.RawMessage) map[string]json.RawMessage {
	t.Helper()
	var r struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatal(err)
	}
	return r.Meta
}

func TestClientSeesEveryCoreBehaviour(t *testing.T) {
	t.Parallel() // independent; overlaps the tests that wait
	r, _ := newResources(t, core.ResourceLimits{})
	direct := func(uri string) *core.ResourceResult {
		res, err := r.Read(context.Background(), uri)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	forEachClient(t, func(t *testing.T, kind transportKind, version string) {
		c := connect(t, newServer(r, &Options{ListPageSize: 2}), kind, version, "")
		ctx := context.Background()
		read := func(uri string) (*mcp.ReadResourceResult, error) {
			return c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		}

		t.Run("the resources capability is declared", func(t *testing.T) {
			if ir := c.cs.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Resources == nil {
				t.Fatalf("initialize result %+v declares no resources capability", ir)
			}
		})

		t.Run("an exact registration reads its item", func(t *testing.T) {
			res, err := read("notes://readme")
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Contents) != 1 || res.Contents[0].Text != "hello" || res.Contents[0].URI != "notes://readme" || res.Contents[0].MIMEType != "text/plain" {
				t.Fatalf("contents %+v", res.Contents)
			}
			if res.CacheScope != "private" || res.TTLMs != 0 {
				t.Fatalf("cacheable %+v, want private with ttl 0", res.Cacheable)
			}
			if c.tap != nil {
				got := rawMeta(t, c.tap.last(t).Result)[wire.ReportMetaKey]
				if want := direct("notes://readme").Report(); !bytes.Equal(got, want) {
					t.Fatalf("report on the wire %s, core %s", got, want)
				}
			}
		})

		t.Run("a template match reads its capture", func(t *testing.T) {
			res, err := read("notes://items/42")
			if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "item 42" {
				t.Fatalf("%+v, %v", res, err)
			}
		})

		t.Run("a partial bundle puts the warning first and the report in _meta", func(t *testing.T) {
			res, err := read("bundle://partial")
			if err != nil {
				t.Fatal(err)
			}
			want := direct("bundle://partial")
			if len(res.Contents) != 2 {
				t.Fatalf("contents %+v", res.Contents)
			}
			w := res.Contents[0]
			if !strings.HasPrefix(w.URI, "mcp-warning://read/") || len(w.URI) != wire.WarningURIBytes || w.MIMEType != "text/plain" {
				t.Fatalf("warning item %+v", w)
			}
			if w.Text != wire.WarningPrefix+string(want.Report()) {
				t.Fatalf("warning text %q, want the prefix and %s", w.Text, want.Report())
			}
			if res.Contents[1].Text != "fine" || res.Contents[1].URI != "bundle://partial/ok" {
				t.Fatalf("item %+v", res.Contents[1])
			}
			if !strings.Contains(string(want.Report()), `"uri":"bundle://partial/disclosed"`) || !strings.Contains(string(want.Report()), `"partial":true`) {
				t.Fatalf("core report %s", want.Report())
			}
			if c.tap != nil {
				raw := c.tap.last(t).Result
				if got := rawMeta(t, raw)[wire.ReportMetaKey]; !bytes.Equal(got, want.Report()) {
					t.Fatalf("report on the wire %s, core %s", got, want.Report())
				}
				if got := rawContents(t, raw)[0]["_meta"]; string(got) != `{"`+wire.ReportMetaKey+`":{"diagnostic":true,"inlineOnly":true}}` {
					t.Fatalf("warning _meta %s", got)
				}
			}
		})

		t.Run("empty text and empty blob stay on the wire", func(t *testing.T) {
			res, err := read("bundle://empty")
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Contents) != 3 || res.Contents[0].Text != "" || len(res.Contents[1].Blob) != 0 || !bytes.Equal(res.Contents[2].Blob, []byte{0xff, 0xfe, 0, 1}) {
				t.Fatalf("contents %+v", res.Contents)
			}
			if c.tap == nil {
				return
			}
			cs := rawContents(t, c.tap.last(t).Result)
			if txt, ok := cs[0]["text"]; !ok || string(txt) != `""` || cs[0]["blob"] != nil {
				t.Errorf("empty text item on the wire: %v", cs[0])
			}
			if b, ok := cs[1]["blob"]; !ok || string(b) != `""` || cs[1]["text"] != nil {
				t.Errorf("empty blob item on the wire: %v", cs[1])
			}
			if b := cs[2]["blob"]; string(b) != `"//4AAQ=="` {
				t.Errorf("blob %s, want padded standard base64", b)
			}
		})

		t.Run("failures carry their code and core's public message", func(t *testing.T) {
			for _, tc := range []struct {
				uri  string
				code int64
				kind core.FailureKind
				data string
			}{
				{"secret://hidden", mcp.CodeResourceNotFound, core.FailureUnavailable, ""}, //nolint:staticcheck
				{"nothing://here", mcp.CodeResourceNotFound, core.FailureUnavailable, ""},  //nolint:staticcheck
				{"notes://items/%2e%2e", jsonrpc.CodeInvalidParams, core.FailureInvalidRequest, ""},
				{"relative/uri", jsonrpc.CodeInvalidParams, core.FailureInvalidRequest, ""},
				{"amb://h/x/y", jsonrpc.CodeInvalidParams, core.FailureAmbiguous, ""},
				{"plan://h/1", jsonrpc.CodeInternalError, core.FailureInvalidPlan, ""},
				{"plan://h/outage", jsonrpc.CodeInternalError, core.FailureOutage, `{"retryable":true}`},
				{"policy://broken", jsonrpc.CodeInternalError, core.FailurePolicy, ""},
				{"bundle://none", jsonrpc.CodeInternalError, core.FailureNoItems,
					`{"retryable":true,"issues":[{"code":"read_failed","message":"The resource could not be read.","retryable":true}],"issuesOmitted":0}`},
			} {
				_, err := read(tc.uri)
				je := rpcError(t, err)
				if je.Code != tc.code || je.Message != core.NewFailure(tc.kind, nil).Error() || string(je.Data) != tc.data {
					t.Errorf("%s: %d %q %s, want %d %q %s", tc.uri, je.Code, je.Message, je.Data, tc.code, core.NewFailure(tc.kind, nil).Error(), tc.data)
				}
			}
		})

		t.Run("both lists page to the end", func(t *testing.T) {
			var uris, templates []string
			var cursor string
			for pages := 0; ; pages++ {
				page, err := c.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Resources) > 2 || pages > 20 {
					t.Fatalf("page of %d", len(page.Resources))
				}
				for _, d := range page.Resources {
					uris = append(uris, d.URI)
					if d.URI == "notes://readme" {
						checkListedExtras(t, d)
					}
				}
				if page.NextCursor == "" {
					if c.tap != nil && bytes.Contains(c.tap.last(t).Result, []byte(`"nextCursor"`)) {
						t.Error("the last page carries a nextCursor")
					}
					break
				}
				cursor = page.NextCursor
			}
			want := []string{"bundle://empty", "bundle://none", "bundle://partial", "bundle://slow", "notes://readme", "policy://broken", "who://ami"}
			if !slices.Equal(uris, want) {
				t.Errorf("listed %v, want %v", uris, want)
			}
			cursor = ""
			for {
				page, err := c.cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range page.ResourceTemplates {
					templates = append(templates, d.URITemplate)
				}
				if cursor = page.NextCursor; cursor == "" {
					break
				}
			}
			want = []string{"amb://h/x/{a}", "amb://h/{b}/y", "notes://items/{id}", "plan://h/{x}"}
			if !slices.Equal(templates, want) {
				t.Errorf("listed templates %v, want %v", templates, want)
			}
		})

		t.Run("tampered and cross-method cursors are refused", func(t *testing.T) {
			page, err := c.cs.ListResources(ctx, nil)
			if err != nil || page.NextCursor == "" {
				t.Fatalf("%+v, %v", page, err)
			}
			good := page.NextCursor
			flip := []byte(good)
			flip[len(flip)/2] ^= 1
			for name, call := range map[string]func() error{
				"tampered": func() error {
					_, err := c.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: string(flip)})
					return err
				},
				"garbage": func() error {
					_, err := c.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: "not a cursor \x00\x7f"})
					return err
				},
				"cross-method": func() error {
					_, err := c.cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: good})
					return err
				},
			} {
				je := rpcError(t, call())
				if je.Code != jsonrpc.CodeInvalidParams || je.Message != "invalid or expired cursor" {
					t.Errorf("%s cursor: %d %q", name, je.Code, je.Message)
				}
			}
		})

		t.Run("tools and prompts stay with the SDK", func(t *testing.T) {
			res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"say": "hi"}})
			if err != nil || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "hi" {
				t.Fatalf("tool: %+v, %v", res, err)
			}
			p, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet"})
			if err != nil || len(p.Messages) != 1 {
				t.Fatalf("prompt: %+v, %v", p, err)
			}
			tools, err := c.cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) != 1 {
				t.Fatalf("tools: %+v, %v", tools, err)
			}
		})

		noCanary(t, c)
	})
}

// checkListedExtras checks what a client decodes of a listed description's
// annotations, size, icons and _meta.
func checkListedExtras(t *testing.T, d *mcp.Resource) {
	t.Helper()
	a := d.Annotations
	if a == nil || !slices.Equal(a.Audience, []mcp.Role{"user"}) || a.Priority != 0.5 || a.LastModified != "2025-01-12T15:00:58Z" {
		t.Errorf("annotations %+v", a)
	}
	if d.Size != 5 || d.Title != "Read me" || d.Description != "the <readme> & more" || d.MIMEType != "text/plain" {
		t.Errorf("description %+v", d)
	}
	if len(d.Icons) != 1 || d.Icons[0].Source != "https://example.com/icon.png" || d.Icons[0].Theme != "dark" || !slices.Equal(d.Icons[0].Sizes, []string{"48x48"}) {
		t.Errorf("icons %+v", d.Icons)
	}
	if m, _ := d.Meta["app"].(map[string]any); m["k"] != float64(1) {
		t.Errorf("_meta %+v", d.Meta)
	}
}

func TestListDescriptionsAreSizedExactlyByCore(t *testing.T) {
	// The page budget leaves room for exactly what core counts; a listed
	// page on the wire must not exceed ListPageBytes minus the reserve.
	r, _ := newResources(t, core.ResourceLimits{})
	c := connect(t, newServer(r, nil), pipes, "2025-11-25", "")
	if _, err := c.cs.ListResources(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	var page struct {
		Resources []json.RawMessage `json:"resources"`
	}
	if err := json.Unmarshal(c.tap.last(t).Result, &page); err != nil {
		t.Fatal(err)
	}
	listed, err := r.List(context.Background(), core.ListRequest{ScopeKey: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	for i, raw := range page.Resources {
		enc, err := marshal(newDescriptions(listed.Descriptions[i : i+1])[0])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(raw, enc) {
			t.Errorf("wire %s, adapter encoding %s", raw, enc)
		}
	}
}

func TestLegacyNotFoundCodeOption(t *testing.T) {
	r, _ := newResources(t, core.ResourceLimits{})
	c := connect(t, newServer(r, &Options{LegacyNotFoundCode: true}), inMemory, "", "")
	_, err := c.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "secret://hidden"})
	if je := rpcError(t, err); je.Code != -32002 || je.Message != "resource unavailable" {
		t.Fatalf("%d %q", je.Code, je.Message)
	}
}

func TestNegativePageSizeIsInvalidParams(t *testing.T) {
	r, _ := newResources(t, core.ResourceLimits{})
	c := connect(t, newServer(r, &Options{ListPageSize: -1}), inMemory, "", "")
	_, err := c.cs.ListResources(context.Background(), nil)
	if je := rpcError(t, err); je.Code != jsonrpc.CodeInvalidParams || je.Message != "invalid resource request" {
		t.Fatalf("%d %q", je.Code, je.Message)
	}
}

func TestErrorCodeMapsEveryKindAndLeaksNoCause(t *testing.T) {
	a := &adapter{}
	want := map[core.FailureKind]int64{
		core.FailureUnavailable:    mcp.CodeResourceNotFound, //nolint:staticcheck
		core.FailureInvalidRequest: -32602,
		core.FailureAmbiguous:      -32602,
		core.FailureInvalidCursor:  -32602,
		core.FailureInvalidPlan:    -32603,
		core.FailurePolicy:         -32603,
		core.FailureCanceled:       -32603,
		core.FailureTimeout:        -32603,
		core.FailureSize:           -32603,
		core.FailureNoItems:        -32603,
		core.FailureOutage:         -32603,
	}
	for kind, code := range want {
		f := core.NewFailure(kind, canaryErr("cause"))
		err := a.failure(fmt.Errorf("wrapped: %w", f))
		je, ok := err.(*jsonrpc.Error)
		if !ok || je.Code != code || je.Message != core.NewFailure(kind, nil).Error() || !bytes.Equal(je.Data, f.Report()) {
			t.Errorf("%v: %#v", kind, err)
		}
		if (kind == core.FailureOutage) != (string(je.Data) == `{"retryable":true}`) {
			t.Errorf("%v: data %s", kind, je.Data)
		}
		b, _ := json.Marshal(je)
		if bytes.Contains(b, []byte("CANARY")) {
			t.Errorf("%v leaks its cause: %s", kind, b)
		}
	}
	if je := a.failure(canaryErr("plain")).(*jsonrpc.Error); je.Code != -32603 || strings.Contains(je.Message, "CANARY") {
		t.Errorf("plain error: %#v", je)
	}
}

func TestWholeReadTimeoutIsAnInternalError(t *testing.T) {
	r, _ := newResources(t, core.ResourceLimits{ReadTimeout: 300 * time.Millisecond, ItemTimeout: 300 * time.Millisecond})
	c := connect(t, newServer(r, nil), pipes, "", "")
	start := time.Now()
	_, err := c.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "bundle://slow"})
	je := rpcError(t, err)
	if je.Code != jsonrpc.CodeInternalError || je.Message != "resource operation timed out" {
		t.Fatalf("%d %q", je.Code, je.Message)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestRequestScopeStartsAtAdapterEntry(t *testing.T) {
	// The principal mapping runs at entry, before core, and its context
	// carries the whole-read deadline: a mapping that waits until that
	// deadline has passed leaves the read nothing, although the reader
	// itself answers at once. No timing is compared: the mapping waits for
	// the deadline itself (at most 10 s, should the scope start too late).
	r, err := core.NewResources([]core.ResourceBinding{
		bundle(t, core.ResourceDefinition{URI: "slow://x", Name: "x"}, []string{"{uri}"},
			func(ctx context.Context, _ string) (core.ResourcePayload, error) {
				if err := ctx.Err(); err != nil {
					return core.ResourcePayload{}, err
				}
				return core.TextPayload("text/plain", "done"), nil
			}),
	}, (&testHost{}).policy(), core.WithResourceLimits(core.ResourceLimits{ReadTimeout: time.Second, ItemTimeout: time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	slowEntry := func(ctx context.Context, _ mcp.Request) string {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("the principal mapping runs without the whole-read deadline")
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			t.Error("the whole-read deadline did not end the principal mapping's context within 10 s")
		}
		return ""
	}
	c := connect(t, newServer(r, &Options{Principal: slowEntry}), inMemory, "", "")
	_, err = c.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "slow://x"})
	if je := rpcError(t, err); je.Message != "resource operation timed out" {
		t.Fatalf("%d %q", je.Code, je.Message)
	}
	fast := connect(t, newServer(r, nil), inMemory, "", "")
	if _, err := fast.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "slow://x"}); err != nil {
		t.Fatalf("without the slow entry: %v", err)
	}
}

func TestReadResultMetaIsAFreshMapEveryTime(t *testing.T) {
	r, _ := newResources(t, core.ResourceLimits{})
	res, err := r.Read(context.Background(), "notes://readme")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := newReadResult(res, "")
	b, _ := newReadResult(res, "")
	a.GetMeta()["io.modelcontextprotocol/serverInfo"] = "x"
	if len(b.GetMeta()) != 1 {
		t.Fatalf("results share their _meta: %v", b.GetMeta())
	}
	if got, _ := json.Marshal(b.GetMeta()); string(got) != string(res.Meta()) {
		t.Fatalf("_meta %s, core %s", got, res.Meta())
	}
}

func TestResultTypeAndServerInfoFollowTheProtocol(t *testing.T) {
	r, _ := newResources(t, core.ResourceLimits{})
	for _, v := range protocols {
		c := connect(t, newServer(r, nil), pipes, v, "")
		if _, err := c.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "notes://readme"}); err != nil {
			t.Fatal(err)
		}
		raw := c.tap.last(t).Result
		var res struct {
			ResultType string `json:"resultType"`
			CacheScope string `json:"cacheScope"`
		}
		json.Unmarshal(raw, &res)
		_, info := rawMeta(t, raw)["io.modelcontextprotocol/serverInfo"]
		newer := v == ""
		if (res.ResultType == "complete") != newer || info != newer || res.CacheScope != "private" {
			t.Errorf("protocol %q: %s", v, raw)
		}
	}
}

// TestAdapterPanicsOnMisuse proves that New refuses a nil gateway, and
// NewServer a nil implementation and a second server for one adapter's
// subscriptions.
func TestAdapterPanicsOnMisuse(t *testing.T) {
	r, _ := newResources(t, core.ResourceLimits{})
	impl := &mcp.Implementation{Name: "x"}
	for name, fn := range map[string]func(){
		"nil implementation": func() { New(r, nil).NewServer(nil, nil) },
		"nil resources":      func() { New(nil, nil) },
		"second server": func() {
			a := New(r, &Options{Live: &live.Options{}})
			a.NewServer(impl, nil)
			a.NewServer(impl, nil)
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			fn()
		}()
	}
}

func TestCapabilitiesDeclaresResourcesWithoutChangingBase(t *testing.T) {
	base := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}
	got := capabilities(base)
	if got.Resources == nil || got.Tools == nil || base.Resources != nil {
		t.Fatalf("got %+v, base %+v", got, base)
	}
	if d := capabilities(nil); d.Resources == nil || d.Logging == nil {
		t.Fatalf("default %+v", d)
	}
}

func TestAHostPanicInTheAdapterCallbacksIsAnInternalError(t *testing.T) {
	r, _ := newResources(t, core.ResourceLimits{})
	c := connect(t, newServer(r, &Options{Principal: func(context.Context, mcp.Request) string { panic(canaryCause) }}), pipes, "", "")
	_, err := c.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "notes://readme"})
	if je := rpcError(t, err); je.Code != jsonrpc.CodeInternalError {
		t.Fatalf("%d %q", je.Code, je.Message)
	}
	if _, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"say": "still here"}}); err != nil {
		t.Fatalf("session died: %v", err)
	}
	noCanary(t, c)
}
