package mcpsdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/itemsize"
	"go.phpboyscout.uk/mcp/resources/internal/requestscope"

	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

// The tool methods the tool surface takes part in.
const (
	MethodListTools = "tools/list"
	MethodCallTool  = "tools/call"
)

// The names of the tools the tool surface adds (before [ToolOptions].NamePrefix).
const (
	ToolListResources       = "list_resources"
	ToolReadResource        = "read_resource"
	ToolCompleteResourceURI = "complete_resource_uri"
)

// MaxToolDescriptionBytes bounds the description of each tool the surface
// lists, in bytes of UTF-8 before JSON encoding. read_resource's
// description, the only one built per caller, names URIs and templates
// until the next would pass this bound, then says that list_resources has
// more. Each listed line is at most 320 bytes. With the input
// schemas (fixed text plus one example URI of at most 256 bytes), the three
// tools add at most 16 KiB to a tools/list result.
const MaxToolDescriptionBytes = 4096

// maxToolLineBytes bounds one URI line of read_resource's description;
// a definition whose URI or template alone would not fit is left to
// list_resources.
const maxToolLineBytes = 320

// maxToolTextBytes bounds a name, title or description quoted in a line.
const maxToolTextBytes = 120

// describePageSize is how many templates and how many resources, at most,
// read_resource's description examines (one first page of each list).
const describePageSize = 32

// Tool cursors of list_resources: a page of resources continues with
// "r:" and core's cursor, a page of templates with "t:" and core's cursor;
// "t:" alone starts the templates.
const (
	toolCursorResources = "r:"
	toolCursorTemplates = "t:"
)

// ToolOptions turns on the tool surface ([Options].Tools): the gateway
// served as tools, for clients that offer a model tools but not
// resources. Every tool call runs the very gateway resources/* run, with
// the same principal ([Options].Principal), scope key, limits, fixed
// messages and [Options].Observe:
//
//   - list_resources {cursor?}: one page of the caller's discoverable
//     definitions as JSON text, {"resources":[...]} or
//     {"resourceTemplates":[...]} in the shape resources/list uses, with
//     "nextCursor" when more follow. One tool pages the two lists one after
//     the other: first the concrete resources ([core.Resources.List]), then
//     the templates ([core.Resources.ListTemplates]); every page comes from
//     one list, its cursor is core's signed cursor behind "r:" or "t:", and
//     the last page of resources points at the first of templates. A call
//     whose resources page would be empty and last answers with the first
//     page of templates instead. Cursors are bound to the caller's scope
//     exactly as list cursors are.
//   - read_resource {uri}: [core.Resources.Read] of uri. Each admitted item
//     is an embedded resource ({"type":"resource","resource":{"uri",
//     "mimeType","text"|"blob","_meta"?}}), empty text and empty blob kept
//     as "text":"" and "blob":""; a partial bundle starts with core's
//     warning item; the result _meta carries core's report under
//     "go.phpboyscout.uk/mcp.resourceRead". Core admits the items with a sizer for exactly
//     this shape, so the result is never larger than what core admitted
//     for it, plus the fields the SDK adds (resultType and, at 2026-07-28,
//     serverInfo in _meta), which the wire reserve covers.
//   - complete_resource_uri {template, argument, value?, arguments?}:
//     [core.Resources.Complete], values as JSON text
//     {"values":[...],"total":N,"hasMore":B}. Listed only when
//     [Options].Completions is set (the host's bindings offer completion);
//     a template without a completion gives no values, as
//     completion/complete does.
//
// A failure is a tool result with isError true whose only content is a
// text item holding the gateway's fixed message ([core.Failure.Error]), so
// a hidden and a missing URI give identical results. structuredContent
// mirrors the safe facts of the failure, {"error":{"kind","code",
// "message","retryable"}}: the [core.FailureKind] name, the JSON-RPC code
// ([ErrorCode]) that resources/read would have answered, the message, and
// whether the same call may succeed on a retry ([core.Failure.Retryable]:
// a storage outage, or "no item survived" with a read_failed item); "no
// item survived" adds "issues" and "issuesOmitted" exactly as the error
// data of resources/read has them (see the package doc). Arguments that are not an
// object with the required strings fail as an invalid request; a tool
// cursor that is not one list_resources issued fails as an invalid cursor.
//
// tools/list: the host's tools stay as registered; the surface adds its
// tools after the host's on the last page (the SDK pages tools/list) and
// marks that page cacheScope "private", because read_resource's
// description lists the templates and resources the caller may discover
// (the first page of each list, under [core.ResourcePolicy].Discover, at
// most [MaxToolDescriptionBytes]): never a hidden definition. A policy
// failure while describing leaves the description without URIs. The
// initialize result declares the tools capability when the host did not.
//
// Observe sees one [Observation] for each call of these tools, with the
// Method of the resource operation it ran (resources/read,
// resources/list, resources/templates/list, completion/complete), so
// metrics count a tool read as a read; [ObservedTool] tells them apart.
// The adapter answers tools/call for these names before the SDK's own
// tools: do not register tools of the same names (use NamePrefix).
type ToolOptions struct {
	// NamePrefix goes before each tool's name, such as "db_" for
	// db_read_resource. It may hold ASCII letters, digits, '_', '-' and
	// '.'; NewServer panics on any other byte or a prefix over 64 bytes.
	NamePrefix string
}

// ObservedTool returns the name (with its prefix) of the tool whose call an
// [Observation] describes, when ctx is the context [Options].Observe got
// for it; "" for a resource method.
func ObservedTool(ctx context.Context) string {
	name, _ := ctx.Value(toolKey{}).(string)
	return name
}

type toolKey struct{}

// toolSurface is the configured tool surface of one adapter.
type toolSurface struct {
	list, read, complete string // full names; complete is "" when not offered
}

// newToolSurface returns the surface opts asks for, or nil.
func newToolSurface(opts *ToolOptions, completions bool) *toolSurface {
	if opts == nil {
		return nil
	}
	p := opts.NamePrefix
	if len(p) > 64 {
		panic("mcpsdk: ToolOptions.NamePrefix is over 64 bytes")
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			panic("mcpsdk: ToolOptions.NamePrefix may hold only ASCII letters, digits, '_', '-' and '.'")
		}
	}
	t := &toolSurface{list: p + ToolListResources, read: p + ToolReadResource}
	if completions {
		t.complete = p + ToolCompleteResourceURI
	}
	return t
}

// owns reports whether name is one of the surface's tools.
func (t *toolSurface) owns(name string) bool {
	return name == t.list || name == t.read || (t.complete != "" && name == t.complete)
}

// toolMiddleware is the receiving middleware of the tool surface: it
// declares the tools capability, adds the surface's tools to the last page
// of tools/list and answers tools/call for them. Everything else, and
// calls of the host's tools, pass through.
func (a *adapter) toolMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "initialize", "server/discover":
			res, err := next(ctx, method, req)
			declareTools(res)
			return res, err
		case MethodListTools:
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil && lr != nil && lr.NextCursor == "" {
				lr.Tools = append(lr.Tools, a.toolDefinitions(ctx, req)...)
				lr.Cacheable = privateCache
			}
			return res, err
		case MethodCallTool:
			if p, _ := req.GetParams().(*mcp.CallToolParamsRaw); p != nil && a.tools.owns(p.Name) {
				return a.callTool(ctx, p.Name, p.Arguments, req), nil
			}
		}
		return next(ctx, method, req)
	}
}

// declareTools adds the tools capability to an initialize or discover
// result that lacks it.
func declareTools(res mcp.Result) {
	caps := resultCapabilities(res)
	if caps == nil {
		return
	}
	var c mcp.ServerCapabilities
	if *caps != nil {
		if (*caps).Tools != nil {
			return
		}
		c = **caps // the SDK may share it with the server's options
	}
	c.Tools = &mcp.ToolCapabilities{}
	*caps = &c
}

// toolResult is a tools/call result on the wire: content is encoded inside
// the request scope, in the shape core sized for a read.
type toolResult struct {
	mcp.ResultBase
	Content           json.RawMessage `json:"content"`
	StructuredContent *toolErrorInfo  `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	ResultType        string          `json:"resultType,omitempty"`
}

// toolErrorInfo is the structuredContent of a failed tool call.
type toolErrorInfo struct {
	Error toolErrorFacts `json:"error"`
}

// toolErrorFacts are the safe facts of a failure: nothing but fixed
// vocabularies and, for "no item survived", the items' safe issues.
type toolErrorFacts struct {
	Kind          string      `json:"kind"`
	Code          int64       `json:"code"`
	Message       string      `json:"message"`
	Retryable     bool        `json:"retryable"`
	Issues        []toolIssue `json:"issues,omitempty"`
	IssuesOmitted int         `json:"issuesOmitted,omitempty"`
}

// toolIssue is one safe issue of a failure ([core.Failure.Issues]), in the
// shape of a partial result's report.
type toolIssue struct {
	Code      core.IssueCode `json:"code"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable"`
	URI       string         `json:"uri,omitempty"`
}

// embeddedResource is one item of a read_resource result.
type embeddedResource struct {
	Type     string  `json:"type"`
	Resource content `json:"resource"`
}

// embeddedWrapper is what an embedded resource adds around the content
// entry that [itemSize] sizes.
const embeddedWrapper = `{"type":"resource","resource":}`

// toolItemSize is the sizer core admits read_resource items with: the
// exact encoded size of the embedded resource, plus one separating comma.
func toolItemSize(it itemsize.Item) int64 { return itemSize(it) + int64(len(embeddedWrapper)) }

// textContent is a text content item.
type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// textResult is a successful result whose one content item is text.
func textResult(text, version string) *toolResult {
	enc, err := marshal([]textContent{{Type: "text", Text: text}})
	if err != nil { // a string always encodes
		panic(err)
	}
	return &toolResult{Content: enc, ResultType: resultType(version)}
}

// callTool answers one call of a surface tool. Like [adapter.serve], the
// request scope starts here, the principal comes from the host's function,
// and Observe sees the answer once. Failures, a panic in a host function
// of the adapter included, are tool results with isError set.
func (a *adapter) callTool(ctx context.Context, name string, args json.RawMessage, req mcp.Request) (res *toolResult) {
	start := time.Now()
	ctx, cancel := requestscope.Begin(ctx, a.timeout)
	defer cancel()
	version := protocolVersion(req)
	o := Observation{Method: toolMethod(a.tools, name)}
	ctx, rec := a.auditStart(ctx)
	defer func() {
		if p := recover(); p != nil {
			res = a.toolFailure(errHostPanic, version)
			o.Result, o.Err = nil, fmt.Errorf("mcpsdk: host function panicked: %v", p)
		}
		if a.audit != nil {
			e := a.auditEvent(ctx, req, start, o, nil, rec)
			e.Tool = name
			if aerr := a.audited(ctx, e); aerr != nil {
				res = a.toolFailure(aerr, version)
				o.Result, o.Err = nil, aerr
			}
		}
		if a.observe != nil {
			o.Duration = time.Since(start)
			a.observe(context.WithValue(ctx, toolKey{}, name), o)
		}
	}()
	ctx = a.withCaller(ctx, req)
	var err error
	switch name {
	case a.tools.read:
		res, err = a.toolRead(ctx, args, version, &o)
	case a.tools.list:
		res, err = a.toolList(ctx, req, args, version, &o)
	default:
		res, err = a.toolComplete(ctx, args, version, &o)
		o.Err = err
	}
	if err != nil {
		if o.Err == nil {
			o.Err = err
		}
		return a.toolFailure(err, version)
	}
	return res
}

// toolMethod is the resource method a surface tool runs, for Observe.
func toolMethod(t *toolSurface, name string) string {
	switch name {
	case t.read:
		return MethodReadResource
	case t.list:
		return MethodListResources
	}
	return MethodComplete
}

// errHostPanic stands for a panic in a host function of the adapter.
var errHostPanic = errors.New("mcpsdk: host function panicked")

// errEmptyScope is the failure of a host Scope function that returned no
// key.
var errEmptyScope = errors.New("mcpsdk: the scope key is empty")

// toolFailure is the isError result of err: the fixed public message of
// its kind, never its private cause.
func (a *adapter) toolFailure(err error, version string) *toolResult {
	f := failureFacts(err, a.legacyNotFound)
	out := textResult(f.Message, version)
	out.IsError = true
	out.StructuredContent = &toolErrorInfo{Error: f}
	return out
}

// failureFacts are the safe facts of err that a failed tool call carries:
// those of [WireError], in the tool surface's shape.
func failureFacts(err error, legacy bool) toolErrorFacts {
	var fail *core.Failure
	if !errors.As(err, &fail) || fail.Kind == 0 {
		return toolErrorFacts{Kind: "internal", Code: jsonrpc.CodeInternalError, Message: internalMessage}
	}
	f := toolErrorFacts{Kind: fail.Kind.String(), Code: ErrorCode(fail.Kind, legacy),
		Message: core.NewFailure(fail.Kind, nil).Error(), Retryable: fail.Retryable(), IssuesOmitted: fail.IssuesOmitted()}
	for _, is := range fail.Issues() {
		f.Issues = append(f.Issues, toolIssue{Code: is.Code(), Message: is.Message(), Retryable: is.Retryable(), URI: is.ResourceURI()})
	}
	return f
}

// decodeArgs decodes a call's arguments into v: an object, or nothing at
// all for a tool without required arguments.
func decodeArgs(args json.RawMessage, v any) error {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, v); err != nil {
		return core.NewFailure(core.FailureInvalidRequest, err)
	}
	return nil
}

var errMissingArgument = errors.New("mcpsdk: a required tool argument is missing")

func (a *adapter) toolRead(ctx context.Context, args json.RawMessage, version string, o *Observation) (*toolResult, error) {
	var in struct {
		URI *string `json:"uri"`
	}
	if err := decodeArgs(args, &in); err != nil {
		return nil, err
	}
	if in.URI == nil {
		return nil, core.NewFailure(core.FailureInvalidRequest, errMissingArgument)
	}
	o.uri = *in.URI
	result, err := sizedRead(ctx, a.r, *in.URI, toolItemSize)
	o.Result, o.Err = result, err
	if err != nil {
		return nil, err
	}
	items := result.Items()
	cs := make([]embeddedResource, len(items))
	for i, it := range items {
		cs[i] = embeddedResource{Type: "resource", Resource: newContent(it)}
	}
	enc, err := marshal(cs)
	if err != nil {
		o.Result, o.Err = nil, err
		return nil, err
	}
	if ctx.Err() != nil {
		o.Result, o.Err = nil, core.NewFailure(timeoutKind(ctx), ctx.Err())
		return nil, o.Err
	}
	out := &toolResult{Content: enc, ResultType: resultType(version)}
	// A fresh map for every result: the SDK writes into it (serverInfo).
	out.Meta = mcp.Meta{wire.ReportMetaKey: json.RawMessage(result.Report())}
	return out, nil
}

// resourcesPage and templatesPage are the JSON text of a list_resources
// result: a page of one list or the other, in the shape of resources/list
// and resources/templates/list.
type resourcesPage struct {
	Resources  []description `json:"resources"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

type templatesPage struct {
	Templates  []description `json:"resourceTemplates"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

func (a *adapter) toolList(ctx context.Context, req mcp.Request, args json.RawMessage, version string, o *Observation) (*toolResult, error) {
	var in struct {
		Cursor string `json:"cursor"`
	}
	if err := decodeArgs(args, &in); err != nil {
		return nil, err
	}
	templates := false
	var cursor string
	switch c := in.Cursor; {
	case c == "":
	case strings.HasPrefix(c, toolCursorResources) && len(c) > len(toolCursorResources):
		cursor = c[len(toolCursorResources):]
	case strings.HasPrefix(c, toolCursorTemplates):
		templates, cursor = true, c[len(toolCursorTemplates):]
	default:
		return nil, core.NewFailure(core.FailureInvalidCursor, errors.New("mcpsdk: not a list_resources cursor"))
	}
	key := a.scopeKey(ctx, req)
	if len(key) == 0 {
		return nil, errEmptyScope
	}
	lr := core.ListRequest{ScopeKey: key, Cursor: cursor, PageSize: a.pageSize}
	if !templates {
		p, err := a.r.List(ctx, lr)
		if err != nil {
			return nil, err
		}
		if len(p.Descriptions) > 0 || p.NextCursor != "" {
			next := toolCursorTemplates
			if p.NextCursor != "" {
				next = toolCursorResources + p.NextCursor
			}
			return jsonTextResult(resourcesPage{Resources: newDescriptions(p.Descriptions), NextCursor: next}, version)
		}
		// No resources are left: this call answers with the templates.
		lr.Cursor = ""
	}
	o.Method = MethodListResourceTemplates
	p, err := a.r.ListTemplates(ctx, lr)
	if err != nil {
		return nil, err
	}
	page := templatesPage{Templates: newDescriptions(p.Descriptions)}
	if p.NextCursor != "" {
		page.NextCursor = toolCursorTemplates + p.NextCursor
	}
	return jsonTextResult(page, version)
}

// jsonTextResult is a successful result whose one text item is v as JSON.
func jsonTextResult(v any, version string) (*toolResult, error) {
	text, err := marshal(v)
	if err != nil {
		return nil, err
	}
	return textResult(string(text), version), nil
}

// toolCompletion is the JSON text of a complete_resource_uri result.
type toolCompletion struct {
	Values  []string `json:"values"`
	Total   int      `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
}

func (a *adapter) toolComplete(ctx context.Context, args json.RawMessage, version string, o *Observation) (*toolResult, error) {
	var in struct {
		Template  *string           `json:"template"`
		Argument  *string           `json:"argument"`
		Value     string            `json:"value"`
		Arguments map[string]string `json:"arguments"`
	}
	if err := decodeArgs(args, &in); err != nil {
		return nil, err
	}
	if in.Template == nil || in.Argument == nil {
		return nil, core.NewFailure(core.FailureInvalidRequest, errMissingArgument)
	}
	o.uri = *in.Template // the template, as completion/complete's event names it
	c, err := a.r.Complete(ctx, *in.Template, *in.Argument, in.Value, in.Arguments)
	if err != nil {
		return nil, err
	}
	out := toolCompletion{Values: c.Values, Total: c.Total, HasMore: c.HasMore}
	if out.Values == nil {
		out.Values = []string{}
	}
	return jsonTextResult(out, version)
}

// The fixed parts of the tools' descriptions and schemas.
const (
	listToolDescription = "Lists the MCP resources you may read, one page per call: first concrete resources " +
		`({"resources":[{"uri","name","title","description","mimeType",...}]}), then URI templates ` +
		`({"resourceTemplates":[{"uriTemplate",...}]}). When the answer has "nextCursor", call again with ` +
		"that cursor for the next page. Read a resource with %s."
	readToolDescription = "Reads one MCP resource by its absolute URI and returns its items as embedded resources, " +
		"each with its URI, MIME type and text (or base64 blob). A bundle may be partial: then the first item " +
		"(URI mcp-warning://...) is a warning that says what is missing, and the rest is what could be read. " +
		"A failure is an error result with a short fixed message; an unknown URI and one you may not read " +
		"give the same \"resource unavailable\"."
	readToolURIsIntro = "\n\nURIs you may read look like these. In a template, replace each {name} with one path " +
		"segment: a value without \"/\", percent-encoding spaces and reserved characters:"
	readToolNoURIs          = "\n\nNo resources are listed for you now; %s shows the current list."
	readToolMore            = "\n- ... and more: call %s."
	completeToolDescription = "Suggests values for one {name} variable of a resource URI template (as %s " +
		`lists them) that you may discover. Answers {"values":[...],"total":N,"hasMore":true|false}. ` +
		"Give the values already chosen for other variables of the template in \"arguments\"."
)

// toolDefinitions returns the surface's tools for the caller of req.
func (a *adapter) toolDefinitions(ctx context.Context, req mcp.Request) []*mcp.Tool {
	t := a.tools
	falseHint := false
	ann := func(title string) *mcp.ToolAnnotations {
		return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &falseHint}
	}
	desc, example := a.describeURIs(ctx, req)
	maxURI := a.r.Limits().MaxURIBytes
	uriProp := map[string]any{"type": "string", "maxLength": maxURI,
		"description": "An absolute resource URI: one that " + t.list + " lists, or a template from this tool's description with every {name} replaced."}
	if example != "" {
		uriProp["examples"] = []string{example}
	}
	tools := []*mcp.Tool{
		{
			Name: t.list, Title: "List resources", Annotations: ann("List resources"),
			Description: fmt.Sprintf(listToolDescription, t.read),
			InputSchema: map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{
				"cursor": map[string]any{"type": "string", "maxLength": wire.MaxCursorBytes + len(toolCursorTemplates),
					"description": "The nextCursor of the previous page; leave it out for the first page."},
			}},
		},
		{
			Name: t.read, Title: "Read resource", Annotations: ann("Read resource"),
			Description: desc,
			InputSchema: map[string]any{"type": "object", "additionalProperties": false, "required": []string{"uri"},
				"properties": map[string]any{"uri": uriProp}},
		},
	}
	if t.complete != "" {
		tools = append(tools, &mcp.Tool{
			Name: t.complete, Title: "Complete resource URI", Annotations: ann("Complete resource URI"),
			Description: fmt.Sprintf(completeToolDescription, t.read),
			InputSchema: map[string]any{"type": "object", "additionalProperties": false, "required": []string{"template", "argument"},
				"properties": map[string]any{
					"template":  map[string]any{"type": "string", "maxLength": maxURI, "description": "The URI template, byte for byte, such as scheme://host/items/{id}."},
					"argument":  map[string]any{"type": "string", "description": "The name of the variable to complete, without braces."},
					"value":     map[string]any{"type": "string", "maxLength": maxURI, "description": "What the value starts with; empty for any."},
					"arguments": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}, "description": "Values already chosen for other variables."},
				}},
		})
	}
	return tools
}

// describeURIs returns read_resource's description for the caller of req,
// with the templates and resources the caller may discover (first pages,
// bounded by MaxToolDescriptionBytes), and one URI or template to show as
// an example ("" when none).
func (a *adapter) describeURIs(ctx context.Context, req mcp.Request) (desc, example string) {
	var b strings.Builder
	b.WriteString(readToolDescription)
	ctx, cancel := requestscope.Begin(ctx, a.timeout)
	defer cancel()
	var ds []core.ResourceDefinition
	more := false
	if ctx, ok := a.safeCaller(ctx, req); ok {
		ds, more = a.discoverable(ctx, req)
	}
	if len(ds) == 0 && !more {
		fmt.Fprintf(&b, readToolNoURIs, a.tools.list)
		return b.String(), ""
	}
	b.WriteString(readToolURIsIntro)
	moreLine := fmt.Sprintf(readToolMore, a.tools.list)
	for _, d := range ds {
		line, ok := uriLine(d)
		if !ok {
			more = true
			continue
		}
		if b.Len()+len(line)+len(moreLine) > MaxToolDescriptionBytes {
			more = true
			break
		}
		b.WriteString(line)
		if example == "" && d.URI != "" && len(d.URI) <= 256 {
			example = d.URI
		}
	}
	if more {
		b.WriteString(moreLine)
	}
	return b.String(), example
}

// discoverable returns the first page of templates and the first page of
// resources the caller may discover (templates first: they show the shape
// of many URIs), and whether either list has more. A failing list
// contributes nothing.
func (a *adapter) discoverable(ctx context.Context, req mcp.Request) ([]core.ResourceDefinition, bool) {
	key := a.safeScopeKey(ctx, req)
	if len(key) == 0 {
		return nil, false
	}
	lr := core.ListRequest{ScopeKey: key, PageSize: describePageSize}
	var out []core.ResourceDefinition
	more := false
	for _, list := range []func(context.Context, core.ListRequest) (core.ListPage, error){a.r.ListTemplates, a.r.List} {
		p, err := list(ctx, lr)
		if err != nil {
			continue
		}
		out = append(out, p.Descriptions...)
		more = more || p.NextCursor != ""
	}
	return out, more
}

// safeScopeKey calls scopeKey, turning a panic in the host's Scope into
// no key.
func (a *adapter) safeScopeKey(ctx context.Context, req mcp.Request) (key []byte) {
	defer func() {
		if recover() != nil {
			key = nil
		}
	}()
	return a.scopeKey(ctx, req)
}

// uriLine is the description line of d: "- URI: name (title): description",
// clipped to maxToolLineBytes; ok is false when the URI alone is too long.
func uriLine(d core.ResourceDefinition) (string, bool) {
	uri := d.URI + d.URITemplate
	var b strings.Builder
	b.WriteString("\n- ")
	b.WriteString(uri)
	if b.Len() > maxToolLineBytes/2 {
		return "", false
	}
	b.WriteString(" - ")
	b.WriteString(clip(d.Name, maxToolTextBytes))
	if d.Title != "" {
		b.WriteString(" (" + clip(d.Title, maxToolTextBytes) + ")")
	}
	if d.Description != "" {
		b.WriteString(": ")
		b.WriteString(clip(d.Description, maxToolLineBytes-b.Len()))
	}
	return b.String(), true
}

// clip returns s on one line (control characters become spaces), cut at a
// rune boundary to at most n bytes, with "..." when cut.
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	if len(s) <= n {
		return s
	}
	if n < 3 {
		return ""
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// sizedRead is r.Read with the sizer f of this adapter's wire shape, handed
// to the gateway as an argument through the module-internal itemsize.Read.
func sizedRead(ctx context.Context, r *core.Resources, uri string, f itemsize.Func) (*core.ResourceResult, error) {
	return itemsize.Read[*core.Resources, *core.ResourceResult](ctx, r, uri, f)
}
