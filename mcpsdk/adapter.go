package mcpsdk

import (
	"context"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
)

// Adapter is a [core.Resources] gateway served over MCP, as one value a
// host creates once with [New]: it builds the server that serves it
// (handlers and capabilities, declared once) and runs its change sources:
//
//	a := mcpsdk.New(res, &mcpsdk.Options{Completions: true, Live: &live.Options{}, Sources: sources})
//	server := a.NewServer(impl, nil)
//	go a.Run(ctx)
type Adapter struct {
	res     *core.Resources
	opts    Options
	subs    *Subscriptions // nil without Options.Live
	listens *listenSet
}

// New returns the adapter of res configured by opts (nil: every default;
// opts is copied). With [Options.Live] set it also serves resource
// subscriptions fed by [Options.Sources] (see [Subscriptions]). Panics if
// res is nil.
func New(res *core.Resources, opts *Options) *Adapter {
	if res == nil {
		panic("mcpsdk: New with a nil *core.Resources")
	}
	a := &Adapter{res: res}
	if opts != nil {
		a.opts = *opts
	}
	a.listens = newListens(a.opts.MaxListensPerSession, a.opts.MaxListensPerPrincipal, a.opts.Logger)
	if a.opts.Live != nil {
		a.subs = newSubscriptions(res, a.opts.Sources, a.opts.Live, a.opts.ListenOnly)
		a.subs.listens = a.listens
	}
	return a
}

// NewServer is [mcp.NewServer] of impl and opts (nil: the SDK's defaults;
// opts is not modified) with what the adapter serves: the resources
// capability, subscribe and the subscribe and unsubscribe handlers when it
// serves subscriptions, the completions capability with
// [Options.Completions], and receiving middleware that answers
// resources/list, resources/templates/list and resources/read (see the
// package documentation for what else it takes over); every other method
// passes through to the SDK.
//
// No single request can end the process through the adapter: a panic in
// the adapter, in a host callback or in the SDK handler of any method (the
// adapter's middleware wraps every method) is recovered, logged once to
// [Options.Logger] with a fresh request id, and answered as internal
// error (-32603) with the fixed message [PanicMessage] and the request id
// as the error's data, never the panic's text. Middleware the host adds
// to the server wraps the adapter and is not covered.
//
// Call it once. Panics if impl is nil, or if the adapter's subscriptions
// already serve another server.
func (a *Adapter) NewServer(impl *mcp.Implementation, opts *mcp.ServerOptions) *mcp.Server {
	s := mcp.NewServer(impl, a.serverOptions(opts))
	a.install(s)
	return s
}

// serverOptions returns a copy of base with the capabilities and handlers
// of [Adapter.NewServer].
func (a *Adapter) serverOptions(base *mcp.ServerOptions) *mcp.ServerOptions {
	var o mcp.ServerOptions
	if base != nil {
		o = *base
	}
	caps := capabilities(o.Capabilities)
	if o.Capabilities != nil && o.Capabilities.Resources != nil {
		r := *o.Capabilities.Resources
		caps.Resources = &r
	}
	o.Capabilities = caps
	if s := a.subs; s != nil {
		o.SubscribeHandler = s.subscribe
		o.UnsubscribeHandler = s.unsubscribe
		caps.Resources.Subscribe = true
	}
	if a.opts.Completions && caps.Completions == nil {
		caps.Completions = &mcp.CompletionCapabilities{}
	}
	return &o
}

// install makes s, built with [Adapter.serverOptions], serve the gateway.
func (a *Adapter) install(s *mcp.Server) {
	h := &adapter{r: a.res, timeout: a.res.Limits().ReadTimeout, principal: TokenPrincipal, subs: a.subs, listens: a.listens}
	if a.opts.Principal != nil {
		h.principal = a.opts.Principal
	}
	h.hostKey = append([]byte(nil), a.opts.ScopeKey...)
	h.scope = a.opts.Scope
	h.pageSize = a.opts.ListPageSize
	h.legacyNotFound = a.opts.LegacyNotFoundCode
	h.observe = a.opts.Observe
	h.complete = a.opts.Completions
	h.log = a.opts.Logger
	h.tools = newToolSurface(a.opts.Tools, h.complete) // tools.go
	h.trace = newTracing(a.opts.Tracing)               // trace.go
	h.audit = a.opts.Auditor                           // audit.go
	h.auditBy = a.opts.AuditDecidedBy
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	// The recoverer is outermost, so a panic in any of these is recovered.
	mw := []mcp.Middleware{h.recoverer, h.middleware}
	if h.trace != nil {
		mw = []mcp.Middleware{h.recoverer, h.trace.middleware, h.middleware}
	}
	if h.tools != nil {
		mw = append(mw, h.toolMiddleware)
	}
	s.AddReceivingMiddleware(mw...)
	s.AddSendingMiddleware(a.listens.acknowledged)
	if a.subs != nil {
		a.subs.install(s, h)
	}
}

// Run runs the change sources and delivers notifications until ctx ends,
// then returns ctx's error; without subscriptions it just waits for ctx.
// Call it once, after NewServer.
func (a *Adapter) Run(ctx context.Context) error {
	if a.subs == nil {
		<-ctx.Done()
		return ctx.Err()
	}
	return a.subs.hub.Run(ctx)
}

// Subscriptions returns the adapter's subscriptions, for their Hub's Stats
// and DroppedSessions, or nil when it serves none.
func (a *Adapter) Subscriptions() *Subscriptions { return a.subs }
