// Package mcpsdk serves a [core.Resources] gateway through the official MCP
// Go SDK (github.com/modelcontextprotocol/go-sdk). A host wires it as one
// value, the [Adapter]:
//
//	a := mcpsdk.New(res, &mcpsdk.Options{
//		Completions: true,                             // completion/complete for the templates
//		Live:        &live.Options{}, Sources: sources, // resource subscriptions, fed by the stores' changes
//	})
//	server := a.NewServer(impl, nil) // handlers and capabilities, declared once
//	go a.Run(ctx) // the change sources, until ctx ends
//
// The adapter takes over three methods of an [mcp.Server] with receiving
// middleware: resources/list, resources/templates/list and resources/read.
// Every other method stays with the SDK, so tools, prompts and completions
// a host registers keep working beside the gateway. Do not also register
// resources with the SDK's own AddResource or AddResourceTemplate: the
// adapter answers before the SDK's registry is consulted.
//
// # What goes on the wire
//
// Results have the concrete shape that core sized: every content entry is
// {"uri","mimeType","text"|"blob","_meta"?} with empty text and empty blobs
// kept as "text":"" and "blob":"" (blobs are padded standard base64); a
// partial result starts with core's warning item; the result _meta carries
// core's report under "go.phpboyscout.uk/mcp.resourceRead", in a map built fresh for every
// result. Results are marked cacheScope "private" with ttlMs 0, because what
// a caller sees depends on who asks; [mcp.ServerOptions.SetCacheable] is not
// consulted for these three methods, and a 2026-07-28 SDK client never
// serves them from its cache. List results carry nextCursor only when
// there is a next page, and descriptions carry annotations, size and icons.
//
// Failures are [jsonrpc.Error] values whose message is core's fixed public
// message ([core.Failure.Error]); private causes, authorization data and the
// request URI never reach the client. See [ErrorCode] for the codes.
//
// # Errors a client can act on
//
// Two failures carry JSON data beside their message, the failure's safe
// report ([core.Failure.Report]); every other failure has no data, and an
// unavailable resource never has any (a resource that storage refused
// looks exactly like one that does not exist):
//
//	-32603 "resource storage is temporarily unavailable"
//	  data: {"retryable":true}
//	-32603 "no resource item could be read"
//	  data: {"retryable":true,"issues":[{"code":"read_failed","message":"The resource could not be read.","retryable":true}],"issuesOmitted":0}
//
// The first is a storage outage while the read was planned or authorized
// ([core.FailureOutage]): the same request may succeed in a moment, so a
// client may retry it after a pause. The second says that the resource's
// visible items all failed ([core.FailureNoItems]); its issues have the
// shape and fixed messages of a partial result's report (codes
// unavailable, read_failed, timeout, invalid_content, budget_exceeded),
// in plan order, at most [core.ResourceLimits].MaxIssues of them with
// issuesOmitted counting the rest, and a "uri" only where the policy
// disclosed it. "retryable" is true when some item failed as read_failed
// (a fresh read may succeed, for example once it plans an object
// overwritten since); nothing is retried automatically. Clients should
// ignore keys they do not know: later versions may add some.
//
// # Principals and pagination scope
//
// The principal reaches the policy and the stores through the request
// context: for every request the adapter calls [Options.Principal] (by
// default [TokenPrincipal], the UserID of the bearer token that the SDK's
// auth.RequireBearerToken middleware verified) and stores a non-empty
// result, with the scopes and claims of the token, as the request's
// [core.Caller] ([core.WithCaller]); policies and stores read it back with
// [core.CallerFrom]. A host whose principal is not the token's UserID
// (a tenant-qualified name, a claim in TokenInfo.Extra, a header) supplies
// its own function:
//
//	opts := &mcpsdk.Options{Principal: func(ctx context.Context, req mcp.Request) string {
//		ti := req.GetExtra().TokenInfo // nil without auth; GetExtra is never nil on a server request
//		if ti == nil {
//			return ""
//		}
//		tenant, _ := ti.Extra["tenant"].(string)
//		return tenant + "/" + ti.UserID
//	}}
//
// List cursors are bound to a scope key ([core.ListRequest.ScopeKey]). By
// default it is built from that principal, the session id (stateful
// streamable HTTP) and [Options.ScopeKey]; requests without principal and
// session share the host key's scope, which is right for a stdio server (one
// client per process) and for anonymous stateless HTTP. [Options.Scope]
// replaces the whole rule.
//
// # Deadlines and sizing
//
// The whole-read deadline ([core.ResourceLimits.ReadTimeout]) starts when
// the request enters the adapter and covers the conversion to JSON, which
// the adapter performs before handing the result to the SDK; a read that
// finishes converting after its deadline answers with the timeout error.
// Core admits items with a sizer for exactly this representation, so the
// JSON the server writes for a result exceeds core's admitted size only by
// the fixed fields the SDK requires (ttlMs, cacheScope, resultType and, at
// protocol 2026-07-28, the server's own serverInfo in _meta), which core's
// wire reserve covers.
//
// # Live resources
//
// Two opt-in features go beyond list and read. [Subscriptions] serves
// resources/subscribe and resources/unsubscribe (and the resource
// subscriptions of 2026-07-28's subscriptions/listen) from storage change
// sources, authorizing each subscription like a read and re-authorizing it
// before every notifications/resources/updated. [Options].Completions
// answers completion/complete for ref/resource references from
// [core.Resources.Complete], offering only values the caller may discover;
// completion of prompt references stays with the host's
// [mcp.ServerOptions].CompletionHandler, and without one is an empty
// completion. [Options].Tools serves the same
// gateway as the tools list_resources, read_resource and
// complete_resource_uri, for clients that let a model call tools only.
//
// # Hostile clients
//
// No request ends the process through the adapter: see [Adapter.NewServer]
// for the recovered panics, and [Subscriptions] for why a client that
// stops reading delays only itself. A refused initialize (a duplicate) is
// answered -32600 and the session goes on.
package mcpsdk

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/requestscope"
	"go.phpboyscout.uk/mcp/resources/live"
)

// The methods the adapter answers.
const (
	MethodListResources         = "resources/list"
	MethodListResourceTemplates = "resources/templates/list"
	MethodReadResource          = "resources/read"
)

// LegacyResourceNotFoundCode is the JSON-RPC code that SDK releases before
// 1.7.0 and some older clients use for an unknown resource. Set
// [Options.LegacyNotFoundCode] to answer with it.
const LegacyResourceNotFoundCode int64 = -32002

// Options configures [New]. A nil *Options
// selects every default.
type Options struct {
	// Principal returns the principal that the host authenticated for req,
	// or "" for none. The default is [TokenPrincipal].
	Principal func(ctx context.Context, req mcp.Request) string

	// ScopeKey is the host's part of every default pagination scope key:
	// the whole key for requests without principal and session. It is
	// copied by NewServer.
	ScopeKey []byte

	// Scope, if set, replaces the default scope rule: it returns the
	// [core.ListRequest.ScopeKey] for req, whose context already carries
	// the principal. An empty key fails the request as an internal error.
	Scope func(ctx context.Context, req mcp.Request) []byte

	// ListPageSize is passed to core as [core.ListRequest.PageSize]: zero
	// selects core's ListPageSize limit, larger values are clamped to
	// MaxListPageSize, and a negative value makes every list request fail
	// as invalid params.
	ListPageSize int

	// LegacyNotFoundCode answers an unavailable resource with
	// [LegacyResourceNotFoundCode] (-32002) instead of the SDK's
	// [mcp.CodeResourceNotFound].
	LegacyNotFoundCode bool

	// Observe, if set, is called once for every request the adapter
	// answers, after the answer is ready, for metrics and logs. It runs on
	// the request's goroutine: keep it fast and do not block.
	Observe func(ctx context.Context, o Observation)

	// Live, if set, makes [New] serve resource subscriptions (see
	// [Subscriptions]) with these bounds, coalescing and rate limits (an
	// empty value: live's defaults), fed by Sources; only [New] reads it.
	Live *live.Options

	// Sources are the change sources of the subscriptions that Live asks
	// for; the adapter's Run runs them.
	Sources []core.ChangeSource

	// ListenOnly serves the subscriptions of Live only over
	// subscriptions/listen streams (protocol [ListenProtocolVersion] and
	// later), as a stateless streamable HTTP server must: its sessions
	// last one request, so a resources/subscribe of an earlier revision
	// would be released as soon as it was answered. Such a request is
	// refused with code -32601 (method not found), as by a server without
	// subscriptions, and an initialize result of an earlier revision does
	// not declare resources.subscribe; the discover result of 2026-07-28
	// does.
	ListenOnly bool

	// Completions makes the adapter answer completion/complete for
	// ref/resource references from [core.Resources.Complete] and declare
	// the completions capability. Prompt references still go to whatever
	// CompletionHandler the host gave the server; without one, they get an
	// empty completion (not -32601, since the capability is declared).
	Completions bool

	// Logger receives one record for every request that panicked inside
	// the adapter or the SDK handlers it wraps (see [Adapter.NewServer]). Nil
	// discards them.
	Logger *slog.Logger

	// Tracing, if set with a Provider, records OpenTelemetry spans for
	// every request and the gateway's phases: see [Tracing]. Off when nil.
	Tracing *Tracing

	// Tools, if set, also serves the gateway as tools, for clients that
	// offer a model tools only: see [ToolOptions]. Off when nil.
	Tools *ToolOptions

	// MaxListensPerSession and MaxListensPerPrincipal bound the
	// subscriptions/listen requests open at once in one session and for
	// one principal over all its sessions; one more is answered with
	// [ListenLimitMessage]. Zero selects [DefaultMaxListensPerSession] and
	// [DefaultMaxListensPerPrincipal]. On a stateless server every listen
	// request has a session of its own, so the principal's bound is the one
	// that applies there.
	MaxListensPerSession, MaxListensPerPrincipal int

	// Auditor, if set, receives one [AuditEvent] for every request that
	// touches resources, before its answer leaves the adapter; an event it
	// does not accept refuses the request as a retryable storage outage.
	// See [Auditor]. Off when nil.
	Auditor Auditor
	// AuditDecidedBy, if set, names what decided the items a read of
	// definition d removed at stage (zero for the body read itself), for
	// [AuditRemoved].DecidedBy: a host serving a resources file passes
	// config's Served.DecidedBy, in the words of mcp-resources check.
	// It must be safe for concurrent use and must not block.
	AuditDecidedBy func(d core.ResourceDefinition, stage core.PassStage) string
}

// Observation describes one request the adapter answered. It is for the
// host's metrics and logs: Err's private cause (behind Unwrap) may name
// storage details and must not reach a client.
type Observation struct {
	// Method is one of the methods the adapter answers: the three resource
	// methods, and completion/complete when Options.Completions is set.
	Method string
	// Duration is the time from adapter entry to the ready answer.
	Duration time.Duration
	// Result is the gateway's result of a successful resources/read.
	Result *core.ResourceResult
	// Err is nil on success: a *core.Failure from the gateway, or another
	// error when a host function of the adapter (Principal, Scope) failed.
	Err error

	// uri is a tool read's URI argument or a tool completion's template,
	// for its audit event.
	uri string
}

// capabilities returns base (or, when base is nil, the SDK's default
// capabilities: logging) with the resources capability the adapter serves:
// no subscriptions and no list-changed notifications, because a
// [core.Resources] registry never changes. base is not modified.
func capabilities(base *mcp.ServerCapabilities) *mcp.ServerCapabilities {
	var c mcp.ServerCapabilities
	if base == nil {
		c.Logging = &mcp.LoggingCapabilities{}
	} else {
		c = *base
	}
	c.Resources = &mcp.ResourceCapabilities{}
	return &c
}

// TokenPrincipal is the default [Options.Principal]: the UserID of the
// bearer token that auth.RequireBearerToken verified for the request, or ""
// when there is none (stdio, or HTTP without that middleware).
func TokenPrincipal(ctx context.Context, req mcp.Request) string {
	if ti := tokenInfo(req); ti != nil {
		return ti.UserID
	}
	return ""
}

func tokenInfo(req mcp.Request) *auth.TokenInfo {
	if req == nil {
		return nil
	}
	if extra := req.GetExtra(); extra != nil {
		return extra.TokenInfo
	}
	return nil
}

// ErrorCode returns the JSON-RPC code the adapter answers a failure of kind
// with: [mcp.CodeResourceNotFound] (or [LegacyResourceNotFoundCode] when
// legacy is set) for [core.FailureUnavailable]; invalid params (-32602)
// for a bad request URI or capture, an ambiguous match and a bad cursor
// ([core.FailureInvalidRequest], which also covers a negative page size,
// [core.FailureAmbiguous], [core.FailureInvalidCursor]); internal error
// (-32603) for every other kind, [core.FailureOutage] included: a storage
// outage is told apart by its fixed message and by "retryable":true in the
// error's data (see the package doc), not by a code of its own, because
// several server-defined codes (-32000 to -32002 among them) already mean
// other things to common clients.
func ErrorCode(kind core.FailureKind, legacy bool) int64 {
	switch kind {
	case core.FailureUnavailable:
		if legacy {
			return LegacyResourceNotFoundCode
		}
		return mcp.CodeResourceNotFound //nolint:staticcheck // the SDK's own constant, as the issue asks; its value follows MCPGODEBUG
	case core.FailureInvalidRequest, core.FailureAmbiguous, core.FailureInvalidCursor:
		return jsonrpc.CodeInvalidParams
	}
	return jsonrpc.CodeInternalError
}

// internalMessage is the public message of an error that is not a
// *core.Failure (a host callback of the adapter that failed).
const internalMessage = "resource operation failed"

type adapter struct {
	r              *core.Resources
	timeout        time.Duration
	principal      func(context.Context, mcp.Request) string
	hostKey        []byte
	scope          func(context.Context, mcp.Request) []byte
	pageSize       int
	legacyNotFound bool
	observe        func(context.Context, Observation)
	complete       bool
	subs           *Subscriptions
	listens        *listenSet
	log            *slog.Logger
	tools          *toolSurface // nil: no tool surface
	trace          *tracing     // nil: no spans (trace.go)
	audit          Auditor      // nil: no audit events (audit.go)
	auditBy        func(core.ResourceDefinition, core.PassStage) string
}

// PanicMessage is the message of the internal error a request that
// panicked is answered with.
const PanicMessage = "internal error"

// recoverer is the outermost of the adapter's middleware: it turns a panic
// of any handler below it into one log record and an internal error.
func (a *adapter) recoverer(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			id := newRequestID()
			// The panic's value may hold anything, a URI or a principal: log
			// a runtime error's text (the runtime's own words), else only
			// the value's type, and the stack.
			what := fmt.Sprintf("%T", p)
			if re, ok := p.(runtime.Error); ok {
				what = re.Error()
			}
			a.log.Error("mcpsdk: a request panicked; answered as an internal error",
				"request_id", id, "method", safeMethod(method), "panic", what, "stack", string(debug.Stack()))
			data, _ := json.Marshal(map[string]string{"requestId": id})
			res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: PanicMessage, Data: data}
		}()
		return next(ctx, method, req)
	}
}

// safeMethod names a method for a log: a method the SDK serves has a
// handler and so a fixed name; anything else is "other".
func safeMethod(m string) string {
	if len(m) <= 64 {
		for _, c := range m {
			if !(c == '/' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				return "other"
			}
		}
		return m
	}
	return "other"
}

// newRequestID returns a random id that ties a client's internal error to
// the server's log record.
func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (a *adapter) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case MethodReadResource, MethodListResources, MethodListResourceTemplates:
			return a.serve(ctx, method, req)
		case "initialize", "server/discover":
			res, err := next(ctx, method, req)
			// A refused request (a duplicate initialize) comes back as an
			// error with a typed-nil result: look at the result only after
			// the error.
			if err != nil {
				var je *jsonrpc.Error
				if !errors.As(err, &je) { // the SDK's plain error would go out as code 0
					err = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: err.Error()}
				}
				return nil, err
			}
			if err := servesVersion(req, res); err != nil {
				return nil, err
			}
			declareResources(res)
			a.declareLive(res)
			return res, nil
		case MethodSubscribe, MethodUnsubscribe, MethodSubscriptionsListen:
			var p string
			if a.subs != nil || method == MethodSubscriptionsListen {
				var ok bool
				if ctx, ok = a.safeCaller(ctx, req); !ok {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: internalMessage}
				}
				c, _ := core.CallerFrom(ctx)
				p = c.Principal
				ctx = withTokenExpiry(ctx, req)
			}
			if a.audit != nil {
				return a.auditSubscription(ctx, next, method, req, p)
			}
			if method == MethodSubscriptionsListen && a.listens != nil {
				return a.listens.serve(ctx, next, method, req, p)
			}
		case MethodComplete:
			if p, _ := req.GetParams().(*mcp.CompleteParams); a.complete && p != nil && p.Ref != nil && p.Ref.Type == "ref/resource" {
				return a.serve(ctx, method, req)
			}
			if a.complete {
				return completeElsewhere(ctx, next, method, req)
			}
		}
		return next(ctx, method, req)
	}
}

// servesVersion refuses a server/discover request of a protocol revision
// the transport does not serve, exactly as the SDK refuses that revision's
// other requests (-32022 with the supported versions): a stateful
// streamable HTTP server answers discover at 2026-07-28 and then refuses
// every 2026-07-28 request, and a client that trusted the answer would
// fail on every call.
func servesVersion(req mcp.Request, res mcp.Result) error {
	d, ok := res.(*mcp.DiscoverResult)
	if !ok || d == nil {
		return nil
	}
	v := protocolVersion(req)
	if v == "" || slices.Contains(d.SupportedVersions, v) {
		return nil
	}
	data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: d.SupportedVersions, Requested: v})
	return &jsonrpc.Error{Code: mcp.CodeUnsupportedProtocolVersion, Message: "unsupported protocol version", Data: data}
}

// completeElsewhere passes a completion that is not the adapter's (a prompt
// reference) to the SDK, and answers an empty completion where the host set
// no handler: the server declares completions, so "method not found" would
// be wrong.
func completeElsewhere(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	res, err := next(ctx, method, req)
	var je *jsonrpc.Error
	if err != nil && errors.As(err, &je) && je.Code == jsonrpc.CodeMethodNotFound {
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// resultCapabilities returns where an initialize or discover result keeps
// its capabilities, or nil for any other result, a nil result and a typed
// nil one.
func resultCapabilities(res mcp.Result) **mcp.ServerCapabilities {
	switch r := res.(type) {
	case *mcp.InitializeResult:
		if r != nil {
			return &r.Capabilities
		}
	case *mcp.DiscoverResult:
		if r != nil {
			return &r.Capabilities
		}
	}
	return nil
}

// declareResources adds the resources capability to an initialize or
// discover result that lacks it.
func declareResources(res mcp.Result) {
	caps := resultCapabilities(res)
	if caps == nil {
		return
	}
	if *caps == nil {
		*caps = &mcp.ServerCapabilities{}
	}
	if (*caps).Resources == nil {
		(*caps).Resources = &mcp.ResourceCapabilities{}
	}
}

// serve answers one of the three methods. The request scope starts here, so
// the whole-read deadline covers principal mapping, the gateway and the
// conversion to JSON.
func (a *adapter) serve(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
	start := time.Now()
	ctx, cancel := requestscope.Begin(ctx, a.timeout)
	defer cancel()
	o := Observation{Method: method}
	ctx, rec := a.auditStart(ctx)
	defer func() {
		// Only the adapter's own host callbacks (Principal, Scope) can get
		// here; core guards the policy and binding callbacks itself.
		if p := recover(); p != nil {
			res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: internalMessage}
			o.Result, o.Err = nil, fmt.Errorf("mcpsdk: host function panicked: %v", p)
		}
		if a.audit != nil {
			if aerr := a.audited(ctx, a.auditEvent(ctx, req, start, o, err, rec)); aerr != nil {
				res, err = nil, a.failure(aerr)
				o.Result, o.Err = nil, aerr
			}
		}
		if a.trace != nil {
			traceObservation(ctx, o)
		}
		if a.observe != nil {
			if err != nil && o.Err == nil {
				o.Err = err
			}
			o.Duration = time.Since(start)
			a.observe(ctx, o)
		}
	}()
	ctx = a.withCaller(ctx, req)
	switch method {
	case MethodReadResource:
		return a.read(ctx, req, &o)
	case MethodListResources:
		return a.list(ctx, req, false, &o)
	case MethodComplete:
		res, err := a.completeResource(ctx, req.GetParams().(*mcp.CompleteParams))
		o.Err = err
		return res, err
	default:
		return a.list(ctx, req, true, &o)
	}
}

func (a *adapter) read(ctx context.Context, req mcp.Request, o *Observation) (mcp.Result, error) {
	params, _ := req.GetParams().(*mcp.ReadResourceParams)
	if params == nil { // the SDK refuses a read without params first
		o.Err = core.NewFailure(core.FailureInvalidRequest, nil)
		return nil, a.failure(o.Err)
	}
	result, err := a.r.Read(ctx, params.URI)
	o.Result, o.Err = result, err
	if err != nil {
		return nil, a.failure(err)
	}
	out, err := newReadResult(result, protocolVersion(req))
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: internalMessage}
	}
	if ctx.Err() != nil {
		o.Result, o.Err = nil, core.NewFailure(timeoutKind(ctx), ctx.Err())
		return nil, a.failure(o.Err)
	}
	return out, nil
}

func (a *adapter) list(ctx context.Context, req mcp.Request, templates bool, o *Observation) (mcp.Result, error) {
	var cursor string
	switch p := req.GetParams().(type) {
	case *mcp.ListResourcesParams:
		if p != nil {
			cursor = p.Cursor
		}
	case *mcp.ListResourceTemplatesParams:
		if p != nil {
			cursor = p.Cursor
		}
	}
	key := a.scopeKey(ctx, req)
	if len(key) == 0 {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: internalMessage}
	}
	lr := core.ListRequest{ScopeKey: key, Cursor: cursor, PageSize: a.pageSize}
	version := protocolVersion(req)
	if templates {
		page, err := a.r.ListTemplates(ctx, lr)
		o.Err = err
		if err != nil {
			return nil, a.failure(err)
		}
		return newTemplatesResult(page, version), nil
	}
	page, err := a.r.List(ctx, lr)
	o.Err = err
	if err != nil {
		return nil, a.failure(err)
	}
	return newResourcesResult(page, version), nil
}

// scopeVersion starts every default scope key, so that a host's own keys
// (which never start with it by accident) cannot collide with it.
const scopeVersion = "mcpsdk scope v1\x00"

// scopeKey returns the pagination scope of req: the host's rule, or the
// principal, the session id and the host key, each length-prefixed.
func (a *adapter) scopeKey(ctx context.Context, req mcp.Request) []byte {
	if a.scope != nil {
		return a.scope(ctx, req)
	}
	caller, _ := core.CallerFrom(ctx)
	principal := caller.Principal
	var session string
	if s, ok := req.GetSession().(*mcp.ServerSession); ok && s != nil {
		session = s.ID()
	}
	k := make([]byte, 0, len(scopeVersion)+12+len(principal)+len(session)+len(a.hostKey))
	k = append(k, scopeVersion...)
	for _, part := range [...]string{principal, session} {
		k = binary.BigEndian.AppendUint32(k, uint32(len(part)))
		k = append(k, part...)
	}
	return append(k, a.hostKey...)
}

// failure turns a gateway error into the JSON-RPC error a client sees.
func (a *adapter) failure(err error) error { return WireError(err, a.legacyNotFound) }

// WireError is the one mapping of a gateway error to the JSON-RPC error a
// client sees: the code of [ErrorCode] (legacy as there), the fixed public
// message of its kind and, for the kinds that have one, the failure's safe
// report ([core.Failure.Report]) as data; never its private cause. An
// error that is not a *core.Failure is an internal error without data. A
// host's own middleware that refuses a request for a gateway reason (a
// storage outage before the store is checked, say) answers with it, so the
// client sees exactly what the adapter would send.
func WireError(err error, legacy bool) *jsonrpc.Error {
	var f *core.Failure
	if !errors.As(err, &f) || f.Kind == 0 {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: internalMessage}
	}
	return &jsonrpc.Error{Code: ErrorCode(f.Kind, legacy), Message: core.NewFailure(f.Kind, nil).Error(), Data: f.Report()}
}

func timeoutKind(ctx context.Context) core.FailureKind {
	if ctx.Err() == context.DeadlineExceeded {
		return core.FailureTimeout
	}
	return core.FailureCanceled
}

// protocolVersion returns the protocol version of a server request.
func protocolVersion(req mcp.Request) string {
	if v, ok := req.(interface{ ProtocolVersion() string }); ok {
		return v.ProtocolVersion()
	}
	return ""
}
