package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/httpguard"
	"go.phpboyscout.uk/mcp/resources/internal/linetransport"
	"go.phpboyscout.uk/mcp/resources/live"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
)

// server is what serve composed from its flags: the backend (its health
// and start-up checks), metrics, gateway, adapter, the MCP server the
// adapter built, the held logger and the bearer tokens.
type server struct {
	flags       *serveCmd
	e           *env
	be          *backend
	m           *metrics
	res         *core.Resources
	tokens      *tokenTable
	adapter     *mcpsdk.Adapter
	mcp         *mcp.Server
	sessions    *sessionLog
	stopAll     context.CancelFunc // every request's context ends: the grace period is over
	stopServing context.CancelFunc // serving ends: a start-up check failed
	closers     []func()           // what close runs, last first
}

func (srv *server) close() {
	for i := len(srv.closers) - 1; i >= 0; i-- {
		srv.closers[i]()
	}
}

// compose builds the metrics, the backend's health, the gateway and the
// authentication, then the MCP server (mcpServer).
func (srv *server) compose(ctx context.Context) (err error) {
	s, e, be := srv.flags, srv.e, srv.be
	opts := []core.Option{core.WithResourceLimits(fileLimits(be.limits, s.Limits.limits()))}
	key, err := s.cursorKey()
	if err != nil {
		return err
	}
	if key != nil {
		opts = append(opts, core.WithCursorKey(key))
	}
	srv.m = newMetrics()
	if be.grants != nil {
		srv.m.reg.MustRegister(be.grants.counter)
	}
	opts = append(opts, srv.m.objectSources(be.objects)...)
	// Once the start-up checks pass, each PostgreSQL source is proved again
	// on a schedule and after its pool reconnects (health.go).
	be.health = newHealth(be, s.ProofInterval, e.log.With("component", "health"), srv.m)
	be.health.start(ctx)
	srv.closers = append(srv.closers, be.health.stop)
	if srv.res, err = core.NewResources(srv.m.instrument(be.bindings, be.storeOf), be.policy, opts...); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}

	if s.oauth, err = s.OAuth.newOAuth(s.HTTP, s.Tokens, be.file, srv.m, e); err != nil { // oauth.go
		return err
	}
	if s.oauth != nil {
		be.ready = append(be.ready, s.oauth.ready())
	}
	if s.Tokens != "" {
		if s.HTTP == "" {
			return errors.New("--tokens needs --http: stdio has no bearer tokens")
		}
		f, err := os.Open(s.Tokens)
		if err != nil {
			return fmt.Errorf("tokens file: %w", err)
		}
		srv.tokens, err = parseTokens(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("tokens file %s: %w", s.Tokens, err)
		}
	}
	anonWarn, err := s.checkAnonymous(srv.tokens != nil || s.oauth != nil) // anon.go
	if err != nil {
		return err
	}
	if anonWarn != "" {
		e.log.Warn(anonWarn)
	}
	principal := func(ctx context.Context, req mcp.Request) string { return s.Principal }
	if srv.tokens != nil || s.oauth != nil {
		principal = mcpsdk.TokenPrincipal
	}
	return srv.mcpServer(ctx, principal)
}

// mcpServer builds the adapter, with the audit trail, and the MCP server
// it serves, gated on the start-up checks, with the sessions' log.
func (srv *server) mcpServer(ctx context.Context, principal func(context.Context, mcp.Request) string) error {
	s, e, be := srv.flags, srv.e, srv.be
	// Subscriptions are served on every transport, each over the stream it
	// has: the session (stdio, stateful HTTP: resources/subscribe of
	// 2025-11-25 and earlier) or a subscriptions/listen response stream
	// (stateless HTTP: 2026-07-28). Every replica feeds its own streams from
	// its own change sources.
	trail, err := s.Audit.withFile(be.file).trail(ctx, srv.m, e.log.With("component", "audit")) // audit.go
	if err != nil {
		return err
	}
	srv.closers = append(srv.closers, func() { closeTrail(trail, s.Grace) })
	srv.adapter = mcpsdk.New(srv.res, &mcpsdk.Options{Principal: principal, Observe: srv.m.observe, Completions: true, Auditor: auditor(trail), AuditDecidedBy: srv.be.decidedBy,
		Live: &live.Options{Logger: e.log.With("component", "live"),
			MaxPerPrincipal: s.Guard.MaxSubscriptionsPerPrincipal, WriteTimeout: s.Guard.WriteTimeout},
		Sources: be.sources, ListenOnly: s.HTTP != "" && s.Stateless,
		Tools: s.toolOptions(), Logger: e.log.With("component", "mcpsdk"), Tracing: tracingOptions(),
		MaxListensPerSession: s.Guard.MaxListensPerSession, MaxListensPerPrincipal: s.Guard.MaxListensPerPrincipal})
	be.notes = append(be.notes, s.subscriptionsNote())
	srv.mcp = srv.adapter.NewServer(&mcp.Implementation{Name: "mcp-resources", Version: version()},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{}, Logger: sdkLogger(e.log, "mcp")})
	go func() { // stops with ctx, like the server; its change sources need the checked storage
		if be.startup.wait(ctx) == nil {
			_ = srv.adapter.Run(ctx)
		}
	}()
	// A shutdown starts by answering the open subscriptions/listen
	// streams (and any opened later), which would otherwise hold it for
	// the whole grace period.
	endListens := context.AfterFunc(ctx, srv.adapter.EndListens)
	// Outermost: every request's context ends when the grace period does,
	// so a read still running then fails as canceled instead of holding
	// the process.
	hardStop, stopAll := context.WithCancel(context.Background())
	srv.stopAll = stopAll
	srv.mcp.AddReceivingMiddleware(be.startup.gate(be.listFree))
	srv.mcp.AddReceivingMiddleware(endingWith(hardStop))
	srv.m.watchSessions(srv.mcp)
	var idle time.Duration
	if s.HTTP != "" && !s.Stateless {
		idle = s.Guard.SessionTimeout
	}
	// A stateless server's sessions last one request each: its listen
	// streams are logged by the adapter instead.
	srv.sessions = newSessionLog(e.log, idle)
	if s.HTTP == "" || !s.Stateless {
		srv.mcp.AddReceivingMiddleware(srv.sessions.middleware)
	}
	endSessions := context.AfterFunc(ctx, srv.sessions.shutdown)
	srv.closers = append(srv.closers, func() { endListens() }, stopAll, func() { endSessions() })
	watchSubscriptions(srv.m, srv.adapter)
	return nil
}

// endingWith ends each request's context when hardStop ends.
func endingWith(hardStop context.Context) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ctx, cancel := context.WithCancel(ctx)
			defer context.AfterFunc(hardStop, cancel)()
			defer cancel()
			return next(ctx, method, req)
		}
	}
}

// serveStdio serves one session on stdin and stdout until the client
// closes them or ctx ends. Lines are framed by the command (package
// linetransport): a malformed line or a batch is answered with an error
// and the session goes on.
func (srv *server) serveStdio(ctx context.Context) error {
	s, e := srv.flags, srv.e
	// A failed check ends the input, as if stdin had ended, so that the
	// requests read before it are answered first.
	in, endInput := endableInput(e.stdin)
	go srv.be.startup.started(ctx, endInput, func() {
		srv.be.logNotes(e)
		e.log.Info("serving MCP over stdio", "backend", srv.be.name, "principal", s.Principal, "revision", srv.res.Revision())
	})
	// When stdin ends, the requests read before it are answered within
	// the same grace as a signal's; an open subscriptions/listen, which
	// would hold the whole grace, is answered at once, as on a signal.
	t := &linetransport.Transport{In: in, Out: e.stdout, MaxMessageBytes: int(s.Guard.MaxBodyBytes), DrainTimeout: max(s.Grace, time.Nanosecond),
		CheckParams: mcpsdk.CheckParams, // a fixed message for wrongly typed params, not the SDK's, which quotes them
		InputEnded:  srv.adapter.EndListens}
	err := srv.mcp.Run(ctx, t)
	if err == nil || errors.Is(err, io.EOF) || ctx.Err() != nil {
		return nil
	}
	return err
}

// serveHTTP serves streamable HTTP at /mcp (and /), with /healthz, /readyz
// and /metrics outside authentication (on --metrics-addr when it is set),
// until ctx ends; then it shuts down within Grace.
func (srv *server) serveHTTP(ctx context.Context) error {
	s, g := srv.flags, srv.flags.Guard
	ln, opsLn, err := s.listen()
	if err != nil {
		return err
	}
	defer ln.Close()
	drain := &drainer{}
	handler, ops := srv.httpHandler(drain), srv.opsMux()
	mux := http.NewServeMux()
	if s.oauth != nil {
		s.oauth.rs.Register(mux) // the protected resource metadata, unauthenticated
	}
	mux.Handle("/mcp", handler)
	mux.Handle("/", handler)
	// No server-wide WriteTimeout: it would cut every SSE stream at a fixed
	// age. httpguard gives each write its own deadline instead. ReadTimeout
	// bounds receiving a request only; a long SSE response outlives it.
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: g.readHeaderTimeout(), ReadTimeout: g.ReadTimeout, IdleTimeout: g.IdleTimeout}
	authn := "bearer tokens from " + s.Tokens
	if s.oauth != nil {
		authn = s.oauth.describe()
	} else if srv.tokens == nil {
		authn = "none: every request is served as principal " + s.Principal
	}
	attrs := []any{"addr", ln.Addr().String(), "stateless", s.Stateless, "backend", srv.be.name, "authentication", authn}
	var opsServer *http.Server
	if opsLn == nil {
		for _, p := range []string{"GET /healthz", "GET /readyz", "GET /metrics"} {
			mux.Handle(p, ops)
		}
	} else {
		defer opsLn.Close()
		attrs = append(attrs, "metrics_addr", opsLn.Addr().String())
		opsServer = &http.Server{Handler: ops, ReadHeaderTimeout: g.readHeaderTimeout(), ReadTimeout: g.ReadTimeout,
			WriteTimeout: g.ReadTimeout + 10*time.Second, IdleTimeout: g.IdleTimeout}
	}
	// The serving line waits for the start-up checks, as it did when they
	// ran first: tools take it for "ready". The server answers before it;
	// the address is logged at debug level at once, past the holding.
	slog.New(srv.be.startup.log.out).Debug("listening for MCP over streamable HTTP", "addr", ln.Addr().String())
	go srv.be.startup.started(ctx, srv.stopServing, func() {
		srv.be.logNotes(srv.e)
		srv.e.log.Info("serving MCP over streamable HTTP", attrs...)
	})
	errc := make(chan error, 2)
	go func() { errc <- hs.Serve(ln) }()
	if opsServer != nil {
		go func() { errc <- opsServer.Serve(opsLn) }()
		defer opsServer.Close()
	}
	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	srv.shutdown(hs, drain)
	return nil
}

// listen opens --http's address, and --metrics-addr's when it is set.
func (s *serveCmd) listen() (ln, opsLn net.Listener, err error) {
	if ln, err = net.Listen("tcp", s.HTTP); err != nil {
		return nil, nil, fmt.Errorf("listen on %s: %w", s.HTTP, err)
	}
	if s.Guard.MetricsAddr != "" {
		if opsLn, err = net.Listen("tcp", s.Guard.MetricsAddr); err != nil {
			ln.Close()
			return nil, nil, fmt.Errorf("listen on --metrics-addr %s: %w", s.Guard.MetricsAddr, err)
		}
	}
	return ln, opsLn, nil
}

// httpHandler is the chain of an MCP request over HTTP, outermost first:
// drain, tracing, one Authorization, OAuth or tokens, the guard, the
// session log, the SDK (a subscriptions/listen ends with its request).
func (srv *server) httpHandler(drain *drainer) http.Handler {
	s, g, e := srv.flags, srv.flags.Guard, srv.e
	sopts := &mcp.StreamableHTTPOptions{Stateless: s.Stateless, Logger: sdkLogger(e.log, "http"),
		MaxRequestBodyBytes: int64(g.MaxBodyBytes)}
	if !s.Stateless {
		sopts.SessionTimeout = g.SessionTimeout
	}
	handler := srv.adapter.HTTPHandler(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.mcp }, sopts))
	gopts := httpguard.Options{MaxBodyBytes: int64(g.MaxBodyBytes), AllowedOrigins: g.AllowedOrigins, WriteTimeout: g.WriteTimeout,
		CheckParams: mcpsdk.CheckParams, // as over stdio
		OnWriteTimeout: func(id string) {
			for ss := range srv.mcp.Sessions() {
				if ss.ID() == id {
					e.log.Warn("ending a session that stopped reading its stream", "write_timeout", g.WriteTimeout)
					srv.sessions.because(id, "stopped reading its stream")
					go ss.Close()
				}
			}
		}}
	if !s.Stateless {
		gopts.MaxSessions, gopts.MaxSessionsPerPrincipal = g.MaxSessions, g.MaxSessionsPerPrincipal
		gopts.Open = func() map[string]bool {
			open := map[string]bool{}
			for ss := range srv.mcp.Sessions() {
				open[ss.ID()] = true
			}
			return open
		}
		gopts.Principal = func(r *http.Request) string {
			if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
				return "token\x00" + ti.UserID
			}
			host, _, _ := net.SplitHostPort(r.RemoteAddr) // without tokens: one principal per client address
			return "addr\x00" + host
		}
	}
	handler = httpguard.Handler(srv.sessions.deletes(handler), gopts)
	if srv.tokens != nil {
		handler = srv.tokens.protect(handler) // tokens.go
	}
	if s.oauth != nil {
		handler = s.oauth.rs.Protect(handler)
	}
	return drain.track(traceHTTP(httpguard.OneAuthorization(handler)))
}

// opsMux serves /healthz, /readyz and /metrics to loopback Host headers.
func (srv *server) opsMux() http.Handler {
	ops := http.NewServeMux()
	ops.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	ops.HandleFunc("GET /readyz", srv.be.health.readyz) // health.go
	ops.Handle("GET /metrics", srv.m.handler())
	return httpguard.LoopbackHostOnly(ops)
}

// shutdown stops hs once ctx has ended: it stops accepting and lets the
// requests in flight finish within Grace. Past the grace period, it
// cancels those still running (they answer with an error). Then it ends
// the sessions, whose standalone SSE streams would otherwise hold their
// connections open, and closes what remains.
func (srv *server) shutdown(hs *http.Server, drain *drainer) {
	srv.e.log.Info("shutting down", "grace", srv.flags.Grace)
	sctx, cancel := context.WithTimeout(context.Background(), srv.flags.Grace)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- hs.Shutdown(sctx) }()
	if drain.wait(sctx) {
		srv.e.log.Info("in-flight requests finished")
	} else {
		srv.e.log.Warn("grace period over: canceling the requests still in flight")
		srv.stopAll()
		cctx, ccancel := context.WithTimeout(context.Background(), cancelWait)
		drain.wait(cctx)
		ccancel()
	}
	closed := make(chan struct{})
	go func() {
		for ss := range srv.mcp.Sessions() {
			ss.Close()
		}
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(cancelWait):
	}
	select {
	case <-shut:
	case <-time.After(cancelWait):
	}
	hs.Close()
}
