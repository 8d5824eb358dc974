package mcpsdk

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"go.phpboyscout.uk/mcp/resources/core"
)

// Auditor receives one [AuditEvent] for every request of the adapter that
// touches resources: resources/read, resources/list,
// resources/templates/list, completion/complete of a resource reference,
// resources/subscribe, resources/unsubscribe, subscriptions/listen and the
// tools of [ToolOptions]. Set it in [Options.Auditor].
//
// Audit is called on the request's goroutine after the answer is ready and
// before it leaves the adapter. A nil error means the event was accepted;
// an error refuses the request: the client gets a retryable storage outage
// ([core.FailureOutage]) and none of the answer, so nothing is served that
// the auditor did not accept (a refused resources/subscribe leaves no
// subscription, and no notification of it is sent). An auditor that
// should never refuse (a "continue" mode) counts its losses and returns
// nil. Audit must be bounded in time: ctx carries the request's deadline.
//
// The event never holds a body, a token or a secret, but it does hold
// principals and URIs: keep the audit trail apart from the logs.
type Auditor interface {
	Audit(ctx context.Context, e *AuditEvent) error
}

// AuditEvent is the record of one request: who, when, what and how it
// ended. It carries no body, token or secret. Its JSON form is the one
// package mcpsdk/audit writes.
type AuditEvent struct {
	// Time is when the adapter received the request; Duration how long the
	// answer took to be ready.
	Time     time.Time     `json:"time"`
	Duration time.Duration `json:"duration_ns"`
	// Method is the resource method (a tool call names the method it runs,
	// and Tool the tool).
	Method string `json:"method"`
	Tool   string `json:"tool,omitempty"`
	// URI is the requested URI of a read, subscription or completion (a
	// completion's template).
	URI string `json:"uri,omitempty"`
	// URIs are the URIs a subscriptions/listen subscribes to, in the
	// request's order, at most 100 of them and 16 KiB in all;
	// URIsOmitted counts those left out past either bound.
	URIs        []string `json:"uris,omitempty"`
	URIsOmitted int      `json:"uris_omitted,omitempty"`
	// Principal is the principal the host authenticated, "" for none;
	// Issuer and Subject are the OAuth token's iss and sub when the
	// verifier recorded them ([TokenIssuerKey], [TokenSubjectKey]).
	Principal string `json:"principal,omitempty"`
	Issuer    string `json:"issuer,omitempty"`
	Subject   string `json:"subject,omitempty"`
	// Session is the MCP session id; Client the client's name and version
	// from initialize; Transport "http" or "stdio".
	Session   string `json:"session,omitempty"`
	Client    string `json:"client,omitempty"`
	Transport string `json:"transport,omitempty"`
	// Revision is the registry revision ([core.Resources.Revision]): it
	// changes whenever the resources file's definitions do.
	Revision string `json:"revision"`
	// TraceID is the request span's trace id when tracing is on.
	TraceID string `json:"trace_id,omitempty"`
	// Result is "complete", "partial" or "error"; ErrorKind the failure's
	// kind ([core.FailureKind.String]) or "internal" for an error.
	Result    string `json:"result"`
	ErrorKind string `json:"error_kind,omitempty"`
	// Items are the items a read served, in order (the warning item of a
	// partial read is not one of them).
	Items []AuditItem `json:"items,omitempty"`
	// Missing counts the visible items a read did not serve, by issue code
	// (unavailable, read_failed, timeout, ...); MissingUncounted those
	// without a detailed issue ([core.ResourceResult.IssuesOmitted]).
	Missing          map[string]int `json:"missing,omitempty"`
	MissingUncounted int            `json:"missing_uncounted,omitempty"`
	// Removed counts what a read refused or did not serve, by kind and by
	// what decided it, hidden items included (which the client never
	// learns of), and a requested target refused by a decision pass.
	Removed []AuditRemoved `json:"removed,omitempty"`
}

// AuditRemoved counts the items of a read removed for one reason.
type AuditRemoved struct {
	// Kind is the items' issue code (unavailable, read_failed, timeout,
	// budget_exceeded, invalid_content), "hidden" for items hidden from
	// the caller, or "requested" for the requested target itself, whose
	// refusal refused the whole read.
	Kind string `json:"kind"`
	// Stage is the step that removed them: "decide" (the decision before
	// the reads), "recheck" (the decision after them, or storage's taken
	// with the body) or "read" (the body read did not deliver them); for
	// the requested target also "discovery" or "plan" (the plan or grant
	// statement found no row or key the caller may read).
	Stage string `json:"stage"`
	// DecidedBy is what decided them as mcp-resources check names it
	// ([Options.AuditDecidedBy]): the grant statement, the plan or decide
	// statement, or public. Empty for what no access decision removed (a
	// failed or timed-out read, a limit, bad content) or when the host
	// gives no namer.
	DecidedBy string `json:"decided_by,omitempty"`
	Count     int    `json:"count"`
}

// AuditItem is one item a read served: its URI, the version storage
// planned it at ([core.ResourceTarget.Version]: a row's version column),
// the object pin it was read at (ETag, VersionID: empty for a row item or
// an object its source pinned itself), its size in bytes and MIME type.
type AuditItem struct {
	URI       string `json:"uri"`
	Version   string `json:"version,omitempty"`
	ETag      string `json:"etag,omitempty"`
	VersionID string `json:"version_id,omitempty"`
	Size      int64  `json:"size"`
	MIMEType  string `json:"mime_type,omitempty"`
}

// TokenIssuerKey and TokenSubjectKey are the keys of auth.TokenInfo.Extra
// whose string values the adapter records as an [AuditEvent]'s Issuer and
// Subject. The verifier of package mcpsdk/oauth sets them.
const (
	TokenIssuerKey  = "mcpres.iss"
	TokenSubjectKey = "mcpres.sub"
)

// maxAuditText bounds each text field of an [AuditEvent] that a client or
// a token supplies (the requested URI, the client's name, the token's iss
// and sub): a longer value is cut to it.
const maxAuditText = 2048

// auditText makes s fit an audit sink: valid UTF-8 with no NUL (which
// PostgreSQL text and jsonb refuse, and which would fail the whole batch),
// cut to maxAuditText bytes.
func auditText(s string) string {
	if len(s) > maxAuditText {
		s = s[:maxAuditText] // a rune cut in two becomes U+FFFD below
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// maxAuditURIs and maxAuditURIBytes bound the URIs of a listen that its
// event records: in number, and in bytes over all of them.
const (
	maxAuditURIs     = 100
	maxAuditURIBytes = 16 << 10
)

// listenURIs returns the URIs a subscriptions/listen request subscribes
// to as its event records them, each as storable text, in order up to the
// bounds, and how many it leaves out.
func listenURIs(req mcp.Request) ([]string, int) {
	p, _ := req.GetParams().(*mcp.SubscriptionsListenParams)
	if p == nil || p.Notifications == nil {
		return nil, 0
	}
	all := p.Notifications.ResourceSubscriptions
	var out []string
	size := 0
	for i, u := range all {
		u = auditText(u)
		if len(out) == maxAuditURIs || size+len(u) > maxAuditURIBytes {
			return out, len(all) - i
		}
		out = append(out, u)
		size += len(u)
	}
	return out, 0
}

// ErrAuditRefused is the private cause of the outage a request is refused
// with when its [Auditor] did not accept its event.
var ErrAuditRefused = errors.New("mcpsdk: the audit sink did not accept the event")

// auditRecorder collects the item targets of one read as the gateway
// reports them, passing every phase on to the next observer (tracing's).
type auditRecorder struct {
	next    core.Observer
	mu      sync.Mutex
	targets map[string]servedTarget
	def     core.ResourceDefinition
	removed []core.RemovedItems
	// refusedIn is the phase that refused the requested target as
	// unavailable (discovery, plan, decide or recheck), else "".
	refusedIn string
}

// servedTarget is an admitted item's target and the object version its
// source served it at.
type servedTarget struct {
	core.ResourceTarget
	served core.ObjectRef
}

// Start implements [core.Observer].
func (r *auditRecorder) Start(ctx context.Context, p core.Phase) (context.Context, func(core.Phase)) {
	end := func(core.Phase) {}
	if r.next != nil {
		ctx, end = r.next.Start(ctx, p)
	}
	switch p.Name {
	case "selection", "assembly":
		return ctx, func(e core.Phase) {
			end(e)
			r.mu.Lock()
			if e.Name == "selection" {
				r.def = e.Definition
			} else {
				r.removed = e.Removed
			}
			r.mu.Unlock()
		}
	case "discovery", "plan", "decide", "recheck":
		return ctx, func(e core.Phase) {
			end(e)
			if e.Err != nil && core.KindOf(e.Err) == core.FailureUnavailable {
				r.mu.Lock()
				r.refusedIn = e.Name
				r.mu.Unlock()
			}
		}
	}
	if p.Name != "item" {
		return ctx, end
	}
	return ctx, func(e core.Phase) {
		end(e)
		if e.Err == nil && e.Issue == "" && !e.Target.IsZero() {
			r.mu.Lock()
			if r.targets == nil {
				r.targets = map[string]servedTarget{}
			}
			r.targets[e.Target.URI()] = servedTarget{e.Target, e.Served}
			r.mu.Unlock()
		}
	}
}

// removals returns what the read removed, by kind, stage and what decided
// it, as decidedBy names it (nil: no names).
func (r *auditRecorder) removals(decidedBy func(core.ResourceDefinition, core.PassStage) string) []AuditRemoved {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []AuditRemoved
	add := func(kind, name string, stage core.PassStage, n int, decision bool) {
		a := AuditRemoved{Kind: kind, Stage: name, Count: n}
		if decision && decidedBy != nil {
			a.DecidedBy = decidedBy(r.def, stage)
		}
		out = append(out, a)
	}
	switch r.refusedIn {
	case "discovery": // the policy's Discover, which check does not name
		add("requested", r.refusedIn, 0, 1, false)
	case "plan": // the plan (or grant) statement, before the reads
		add("requested", r.refusedIn, core.PassBeforeReads, 1, true)
	case "decide":
		add("requested", r.refusedIn, core.PassBeforeReads, 1, true)
	case "recheck":
		add("requested", r.refusedIn, core.PassRecheck, 1, true)
	}
	for _, g := range r.removed {
		kind := string(g.Code)
		if kind == "" {
			kind = "hidden"
		}
		// An access decision removed them: a pass's, or storage's own
		// refusal of the body read (unavailable).
		add(kind, auditStage(g.Stage), g.Stage, g.Count, g.Stage != 0 || g.Code == core.IssueUnavailable)
	}
	return out
}

// auditStage names a stage of [AuditRemoved].
func auditStage(s core.PassStage) string {
	switch s {
	case core.PassBeforeReads:
		return "decide"
	case core.PassRecheck:
		return "recheck"
	}
	return "read"
}

// target returns the target of the item at uri, if the read reported it.
func (r *auditRecorder) target(uri string) (servedTarget, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.targets[uri]
	return t, ok
}

// auditStart makes ctx record a read's items for its audit event, or
// returns ctx unchanged when the adapter audits nothing.
func (a *adapter) auditStart(ctx context.Context) (context.Context, *auditRecorder) {
	if a.audit == nil {
		return ctx, nil
	}
	rec := &auditRecorder{}
	if a.trace != nil {
		rec.next = a.trace
	}
	return core.WithObserver(ctx, rec), rec
}

// auditEvent builds the event of a request the adapter answered.
func (a *adapter) auditEvent(ctx context.Context, req mcp.Request, start time.Time, o Observation, err error, rec *auditRecorder) *AuditEvent {
	e := &AuditEvent{Time: start.UTC(), Duration: time.Since(start), Method: o.Method, Revision: a.r.Revision(), Result: "complete"}
	c, _ := core.CallerFrom(ctx)
	e.Principal = c.Principal
	if ti := tokenInfo(req); ti != nil {
		iss, _ := ti.Extra[TokenIssuerKey].(string)
		sub, _ := ti.Extra[TokenSubjectKey].(string)
		e.Issuer, e.Subject = auditText(iss), auditText(sub)
	}
	if req != nil {
		if s, ok := req.GetSession().(*mcp.ServerSession); ok && s != nil {
			e.Session = s.ID()
			if ip := s.InitializeParams(); ip != nil && ip.ClientInfo != nil {
				e.Client = ip.ClientInfo.Name
				if ip.ClientInfo.Version != "" {
					e.Client += "/" + ip.ClientInfo.Version
				}
				e.Client = auditText(e.Client)
			}
		}
		e.Transport = "stdio"
		if x := req.GetExtra(); x != nil && x.Header != nil {
			e.Transport = "http"
		}
		e.URI = requestURI(req)
		if o.Method == MethodSubscriptionsListen {
			e.URIs, e.URIsOmitted = listenURIs(req)
		}
	}
	if e.URI == "" {
		e.URI = o.uri
	}
	e.URI = auditText(e.URI)
	e.Principal = auditText(e.Principal)
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		e.TraceID = sc.TraceID().String()
	}
	if o.Err != nil { // the gateway's failure, not its wire form
		err = o.Err
	}
	if rec != nil {
		e.Removed = rec.removals(a.auditBy)
	}
	if err != nil {
		e.Result, e.ErrorKind = "error", "internal"
		var f *core.Failure
		var je *jsonrpc.Error
		switch {
		case errors.As(err, &f) && f.Kind != 0:
			e.ErrorKind = f.Kind.String()
		case errors.As(err, &je) && je.Message != "":
			e.ErrorKind = je.Message // a wire error's public message (a subscribe's)
		}
		return e
	}
	if res := o.Result; res != nil {
		if res.Partial() {
			e.Result = "partial"
		}
		items := res.Items()
		if res.Partial() && len(items) > 0 {
			items = items[1:] // the warning
		}
		for _, it := range items {
			ai := AuditItem{URI: it.URI(), MIMEType: it.MIMEType(), Size: int64(len(it.Text()))}
			if it.IsBlob() {
				ai.Size = int64(len(it.Blob()))
			}
			if rec != nil {
				if t, ok := rec.target(it.URI()); ok {
					ai.Version = t.Version()
					if obj, ok := t.Object(); ok {
						// The version served: the plan's pin, or the one
						// the source pinned or found (an unpinned ref).
						ai.ETag, ai.VersionID = cmp.Or(t.served.ETag, obj.ETag), cmp.Or(t.served.VersionID, obj.VersionID)
					}
				}
			}
			e.Items = append(e.Items, ai)
		}
		for _, is := range res.Issues() {
			if e.Missing == nil {
				e.Missing = map[string]int{}
			}
			e.Missing[string(is.Code())]++
		}
		e.MissingUncounted = res.IssuesOmitted()
	}
	return e
}

// requestURI returns the URI a request names, or "".
func requestURI(req mcp.Request) string {
	switch p := req.GetParams().(type) {
	case *mcp.ReadResourceParams:
		if p != nil {
			return p.URI
		}
	case *mcp.SubscribeParams:
		if p != nil {
			return p.URI
		}
	case *mcp.UnsubscribeParams:
		if p != nil {
			return p.URI
		}
	case *mcp.CompleteParams:
		if p != nil && p.Ref != nil {
			return p.Ref.URI
		}
	}
	return ""
}

// audited passes the event of a request to the auditor and returns nil
// when it was accepted, else the outage the request is refused with.
func (a *adapter) audited(ctx context.Context, e *AuditEvent) error {
	if err := a.audit.Audit(ctx, e); err != nil {
		return core.NewFailure(core.FailureOutage, errors.Join(ErrAuditRefused, err))
	}
	return nil
}

// auditSubscription audits a subscribe or unsubscribe once it is answered,
// and a listen stream as it opens (its event's Duration is the time to
// open it), before any notification of it is sent.
//
// A subscribe is audited after it is made, since its event says how it
// ended; one whose event is refused is undone before the refusal is
// answered. Until then no notification of it leaves: the adapter holds a
// new subscription's notifications until the SDK has answered its
// subscribe, and the undo drops them.
func (a *adapter) auditSubscription(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request, principal string) (mcp.Result, error) {
	start := time.Now()
	o := Observation{Method: method}
	if method == MethodSubscriptionsListen {
		if err := a.audited(ctx, a.auditEvent(ctx, req, start, o, nil, nil)); err != nil {
			return nil, a.failure(err)
		}
		if a.listens != nil {
			return a.listens.serve(ctx, next, method, req, principal)
		}
		return next(ctx, method, req)
	}
	held := method == MethodSubscribe && a.subscribed(req)
	res, err := next(ctx, method, req)
	if aerr := a.audited(ctx, a.auditEvent(ctx, req, start, o, err, nil)); aerr != nil {
		if method == MethodSubscribe && err == nil && !held {
			a.undoSubscribe(ctx, next, req)
		}
		return nil, a.failure(aerr)
	}
	return res, err
}

// subscribed reports whether the session of a resources/subscribe request
// holds a subscription to its URI already: one audited before, which a
// refused subscribe to the same URI must leave alone.
func (a *adapter) subscribed(req mcp.Request) bool {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	p, _ := req.GetParams().(*mcp.SubscribeParams)
	return a.subs != nil && ss != nil && p != nil && a.subs.hub.Subscribed(ss, p.URI)
}

// undoSubscribe unsubscribes the session of a resources/subscribe request
// whose event was refused, through next, so that neither the hub nor the
// SDK keeps the subscription.
func (a *adapter) undoSubscribe(ctx context.Context, next mcp.MethodHandler, req mcp.Request) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	p, _ := req.GetParams().(*mcp.SubscribeParams)
	if ss == nil || p == nil {
		return
	}
	un := &mcp.UnsubscribeRequest{Session: ss, Params: &mcp.UnsubscribeParams{URI: p.URI}, Extra: req.GetExtra()}
	if _, err := next(context.WithoutCancel(ctx), MethodUnsubscribe, un); err != nil {
		// Not expected: the adapter's unsubscribe refuses only a listen's.
		// No URI or principal in the log.
		a.log.Warn("mcpsdk: undoing a subscribe whose audit event was refused failed", "error", err)
	}
}
