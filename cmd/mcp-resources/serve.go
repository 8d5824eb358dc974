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
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"go.phpboyscout.uk/mcp/resources/config"
	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/httpguard"
	"go.phpboyscout.uk/mcp/resources/internal/linetransport"
	"go.phpboyscout.uk/mcp/resources/live"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
)

// serveCmd serves MCP resources over stdio or streamable HTTP.
type serveCmd struct {
	HTTP          string        `name:"http" placeholder:"ADDR" env:"MCPRES_HTTP" help:"Serve streamable HTTP on ADDR (host:port) instead of stdio."`
	Stateless     bool          `env:"MCPRES_STATELESS" help:"Serve HTTP without sessions, for several replicas behind a load balancer (share --cursor-key-file)."`
	CursorKeyFile string        `name:"cursor-key-file" type:"path" env:"MCPRES_CURSOR_KEY_FILE" help:"File holding the key (at least 32 bytes) that signs list cursors; replicas must share it."`
	CursorKey     string        `name:"cursor-key" env:"MCPRES_CURSOR_KEY" help:"The cursor key itself (at least 32 bytes); prefer --cursor-key-file."`
	Tokens        string        `name:"tokens" type:"path" env:"MCPRES_TOKENS_FILE" help:"HTTP bearer tokens file: lines of PRINCIPAL sha256:HEX (see hash-token)."`
	Principal     string        `default:"demo" env:"MCPRES_PRINCIPAL" help:"The principal served over stdio, and over HTTP when no tokens file is given (with --postgres, a principal of the grants table, such as the seed's alice)."`
	Anonymous     bool          `name:"anonymous" env:"MCPRES_ANONYMOUS" help:"Serve HTTP with no authentication (every client as --principal) on an address that is not loopback; without it, such an address needs --tokens or an OAuth issuer."`
	Grace         time.Duration `default:"10s" env:"MCPRES_SHUTDOWN_GRACE" help:"On SIGINT or SIGTERM, how long in-flight requests may take to finish."`
	Tools         bool          `name:"tools" env:"MCPRES_TOOLS" help:"Also serve the resources as tools (list_resources, read_resource, complete_resource_uri), for clients that let a model call tools only."`
	Config        string        `name:"config" type:"path" placeholder:"FILE" env:"MCPRES_CONFIG" help:"Serve the sources and resources of this file (see config/schema.json and examples/) instead of the reference schema."`
	ListenURL     string        `name:"listen-postgres" placeholder:"URL" env:"MCPRES_LISTEN_DATABASE_URL" help:"A direct PostgreSQL URL for the one connection that LISTENs for changes (subscriptions), when --postgres goes through a transaction-pooling PgBouncer. Default: --postgres."`
	ProofInterval time.Duration `name:"proof-interval" default:"5m" env:"MCPRES_PROOF_INTERVAL" help:"How often each PostgreSQL source's storage-enforcement proof runs again while serving (also after each reconnect of its pool); a source whose proof fails serves nothing until it passes (health.go)."`

	Guard guardFlags `embed:"" group:"Hostile clients"`
	OAuth oauthFlags `embed:"" group:"Identity provider (OAuth 2.1 resource server)"`

	Storage storageFlags `embed:""`
	Limits  limitFlags   `embed:"" group:"Limits (0 keeps the default)"`
	Audit   auditFlags   `embed:"" group:"Audit trail"` // audit.go

	oauth *oauthServer // from OAuth, set by Run (oauth.go)
}

// backend is what the resources are served from: bindings, their policy,
// and readiness checks for /readyz.
type backend struct {
	name     string
	bindings []core.ResourceBinding
	policy   core.ResourcePolicy
	stores   []sourceReady          // each source's readiness and proof (health.go)
	ready    []readyCheck           // what every source needs besides (the authorization server)
	health   *health                // set by Run
	sources  []core.ChangeSource    // what tells subscriptions that storage changed
	objects  map[string]core.Reader // the readers of object items, by object source
	close    func()
	// storeOf names the store (a metric label) of binding i: the source
	// that resolves its plans, completes its variables and reads its items
	// (object items are read, and timed, by their object source's reader).
	storeOf func(i int) string
	limits  *core.ResourceLimits // a resources file's limits, under the flags'
	file    *config.File         // the resources file served, whose oauth section serve honours (oauth.go)
	// notes are INFO lines about the configuration, logged only once the
	// start-up checks have passed, so that a configuration error stays the
	// one line on stderr.
	notes []string
	// check is the one start-up check of every source, which serve runs
	// at once, beside answering clients (startup.go); nil checks nothing.
	check func(context.Context) error
	// listFree says listing the definitions asks no storage, so that
	// resources/list need not wait for check.
	listFree bool
	startup  *startup // the run of check, set by Run
	// grants reports a resources file's unusable grant rows (grantwarn.go);
	// nil for the embedded demo.
	grants *unusableGrants
}

// logNotes logs the backend's notes; call it once serving has started.
func (be *backend) logNotes(e *env) {
	for _, n := range be.notes {
		e.log.Info(n)
	}
}

// readyCheck reports whether one dependency answers now.
type readyCheck struct {
	name  string
	check func(context.Context) error
}

// Run serves until ctx ends (SIGINT or SIGTERM), then drains within Grace.
func (s *serveCmd) Run(ctx context.Context, e *env) (err error) {
	if err := core.CheckPrincipal(s.Principal); err != nil {
		return fmt.Errorf("--principal: %w", err)
	}
	if s.Grace < 0 {
		return fmt.Errorf("--grace must not be negative, got %s", s.Grace)
	}
	if err := s.Guard.check(s.HTTP != ""); err != nil {
		return err
	}
	if err := checkLimitCombination(s.Limits.limits()); err != nil {
		return err
	}
	if err := checkProofInterval(s.ProofInterval); err != nil {
		return err
	}
	if err := s.Audit.check(); err != nil { // audit.go
		return err
	}
	gcPercent, memLimit, restoreGC := applyGCDefaults() // gc.go: unless GOGC or GOMEMLIMIT is set
	defer restoreGC()
	if gcPercent != 0 {
		e.log.Debug("garbage collector defaults", "GOGC", gcPercent, "GOMEMLIMIT", memLimit)
	}
	stopTracing, err := startTracing(ctx) // tracing.go: off unless OTEL_* asks
	if err != nil {
		return err
	}
	defer stopTracing()
	// Until the start-up checks pass, serve's log is held: a failure is
	// then the one line on stderr.
	held := newHeldLog(e.log.Handler())
	e = &env{stdin: e.stdin, stdout: e.stdout, stderr: e.stderr, log: slog.New(held)}
	defer held.release(context.Background(), false)
	be, err := s.backend(ctx, e)
	if err != nil {
		return err
	}
	defer be.close()
	// The checks run beside everything from here on: a failure stops
	// serving and is Run's error (startup.go).
	parent := ctx
	ctx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	be.startup = startChecks(ctx, be.check, held)
	defer be.startup.stop()
	// Serving that ends by itself (stdin closed) still reports a check
	// that fails: the exit status says whether the storage was right.
	defer func() {
		if err != nil || parent.Err() != nil {
			return
		}
		<-be.startup.done
		if cerr := be.startup.err; cerr != nil {
			err = cerr
		}
	}()

	opts := []core.Option{core.WithResourceLimits(fileLimits(be.limits, s.Limits.limits()))}
	key, err := s.cursorKey()
	if err != nil {
		return err
	}
	if key != nil {
		opts = append(opts, core.WithCursorKey(key))
	}
	m := newMetrics()
	if be.grants != nil {
		m.reg.MustRegister(be.grants.counter)
	}
	opts = append(opts, m.objectSources(be.objects)...)
	// Once the start-up checks pass, each PostgreSQL source is proved again
	// on a schedule and after its pool reconnects (health.go).
	be.health = newHealth(be, s.ProofInterval, e.log.With("component", "health"), m)
	be.health.start(ctx)
	defer be.health.stop()
	res, err := core.NewResources(m.instrument(be.bindings, be.storeOf), be.policy, opts...)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}

	if s.oauth, err = s.OAuth.newOAuth(s.HTTP, s.Tokens, be.file, m, e); err != nil { // oauth.go
		return err
	}
	if s.oauth != nil {
		be.ready = append(be.ready, s.oauth.ready())
	}
	var tokens *tokenTable
	if s.Tokens != "" {
		if s.HTTP == "" {
			return errors.New("--tokens needs --http: stdio has no bearer tokens")
		}
		f, err := os.Open(s.Tokens)
		if err != nil {
			return fmt.Errorf("tokens file: %w", err)
		}
		tokens, err = parseTokens(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("tokens file %s: %w", s.Tokens, err)
		}
	}

	anonWarn, err := s.checkAnonymous(tokens != nil || s.oauth != nil) // anon.go
	if err != nil {
		return err
	}
	if anonWarn != "" {
		e.log.Warn(anonWarn)
	}
	principal := func(ctx context.Context, req mcp.Request) string { return s.Principal }
	if tokens != nil || s.oauth != nil {
		principal = mcpsdk.TokenPrincipal
	}
	// Subscriptions are served on every transport, each over the stream it
	// has: the session (stdio, stateful HTTP: resources/subscribe of
	// 2025-11-25 and earlier) or a subscriptions/listen response stream
	// (stateless HTTP: 2026-07-28). Every replica feeds its own streams from
	// its own change sources.
	trail, err := s.Audit.withFile(be.file).trail(ctx, m, e.log.With("component", "audit")) // audit.go
	if err != nil {
		return err
	}
	defer closeTrail(trail, s.Grace)
	adapter := mcpsdk.New(res, &mcpsdk.Options{Principal: principal, Observe: m.observe, Completions: true, Auditor: auditor(trail),
		Live: &live.Options{Logger: e.log.With("component", "live"),
			MaxPerPrincipal: s.Guard.MaxSubscriptionsPerPrincipal, WriteTimeout: s.Guard.WriteTimeout},
		Sources: be.sources, ListenOnly: s.HTTP != "" && s.Stateless,
		Tools: s.toolOptions(), Logger: e.log.With("component", "mcpsdk"), Tracing: tracingOptions(),
		MaxListensPerSession: s.Guard.MaxListensPerSession, MaxListensPerPrincipal: s.Guard.MaxListensPerPrincipal})
	be.notes = append(be.notes, s.subscriptionsNote())
	server := adapter.NewServer(&mcp.Implementation{Name: "mcp-resources", Version: version()},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{}, Logger: sdkLogger(e.log, "mcp")})
	go func() { // stops with ctx, like the server; its change sources need the checked storage
		if be.startup.wait(ctx) == nil {
			_ = adapter.Run(ctx)
		}
	}()
	// A shutdown starts by answering the open subscriptions/listen
	// streams (and any opened later), which would otherwise hold it for
	// the whole grace period.
	defer context.AfterFunc(ctx, adapter.EndListens)()
	// Outermost: every request's context ends when the grace period does,
	// so a read still running then fails as canceled instead of holding
	// the process.
	hardStop, stopAll := context.WithCancel(context.Background())
	defer stopAll()
	server.AddReceivingMiddleware(be.startup.gate(be.listFree))
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ctx, cancel := context.WithCancel(ctx)
			defer context.AfterFunc(hardStop, cancel)()
			defer cancel()
			return next(ctx, method, req)
		}
	})
	m.watchSessions(server)
	var idle time.Duration
	if s.HTTP != "" && !s.Stateless {
		idle = s.Guard.SessionTimeout
	}
	// A stateless server's sessions last one request each: its listen
	// streams are logged by the adapter instead.
	sessions := newSessionLog(e.log, idle)
	if s.HTTP == "" || !s.Stateless {
		server.AddReceivingMiddleware(sessions.middleware)
	}
	defer context.AfterFunc(ctx, sessions.shutdown)()
	watchSubscriptions(m, adapter)

	if s.HTTP == "" {
		// A failed check ends the input, as if stdin had ended, so that
		// the requests read before it are answered first.
		in, endInput := endableInput(e.stdin)
		go be.startup.started(ctx, endInput, func() {
			be.logNotes(e)
			e.log.Info("serving MCP over stdio", "backend", be.name, "principal", s.Principal, "revision", res.Revision())
		})
		return serveStdio(ctx, server, adapter, in, e.stdout, int(s.Guard.MaxBodyBytes), s.Grace)
	}
	return s.serveHTTP(ctx, e, server, adapter, sessions, tokens, be, m, stopAll, stopServing)
}

// sdkLogger is the logger handed to the SDK as component: its records that
// carry a URI are written at debug level only (see debugURIs).
func sdkLogger(log *slog.Logger, component string) *slog.Logger {
	return slog.New(debugURIs{h: log.Handler()}).With("component", component)
}

// backend chooses the storage the flags describe: the reference schema in
// PostgreSQL (joined with a bucket's objects) with --postgres, else the
// embedded demo.
func (s *serveCmd) backend(ctx context.Context, e *env) (*backend, error) {
	if s.Config != "" {
		return s.configBackend(ctx, e)
	}
	if err := s.Storage.checkCombination(); err != nil {
		return nil, err
	}
	if s.Storage.Postgres != "" {
		return s.Storage.storageBackend(ctx, e, s.ListenURL, s.Limits.limits())
	}
	st, bindings, err := newDemo(s.Principal)
	if err != nil {
		return nil, err
	}
	return &backend{name: "memory", bindings: bindings, policy: demoPolicy(st), sources: []core.ChangeSource{st}, close: func() {},
		storeOf: func(int) string { return "memory" }, stores: []sourceReady{{name: "memory"}}}, nil
}

// cursorKey returns the shared cursor key, or nil for a random one.
func (s *serveCmd) cursorKey() ([]byte, error) {
	var key []byte
	switch {
	case s.CursorKeyFile != "" && s.CursorKey != "":
		return nil, errors.New("give --cursor-key-file or --cursor-key, not both")
	case s.CursorKeyFile != "":
		b, err := os.ReadFile(s.CursorKeyFile)
		if err != nil {
			return nil, fmt.Errorf("cursor key file: %w", err)
		}
		key = []byte(strings.TrimRight(string(b), "\r\n"))
	case s.CursorKey != "":
		key = []byte(s.CursorKey)
	default:
		if s.Stateless {
			return nil, errors.New("--stateless needs --cursor-key-file (or MCPRES_CURSOR_KEY): replicas must sign cursors with one key")
		}
		return nil, nil
	}
	if len(key) < 32 {
		return nil, fmt.Errorf("the cursor key must be at least 32 bytes, got %d", len(key))
	}
	return key, nil
}

// serveStdio serves one session on the given streams until the client
// closes them or ctx ends. Lines are framed by the command (package
// linetransport): a malformed line or a batch is answered with an error
// and the session goes on.
func serveStdio(ctx context.Context, server *mcp.Server, adapter *mcpsdk.Adapter, stdin io.Reader, stdout io.Writer, maxLine int, grace time.Duration) error {
	// When stdin ends, the requests read before it are answered within
	// the same grace as a signal's; an open subscriptions/listen, which
	// would hold the whole grace, is answered at once, as on a signal.
	t := &linetransport.Transport{In: stdin, Out: stdout, MaxMessageBytes: maxLine, DrainTimeout: max(grace, time.Nanosecond),
		CheckParams: mcpsdk.CheckParams, // a fixed message for wrongly typed params, not the SDK's, which quotes them
		InputEnded:  adapter.EndListens}
	err := server.Run(ctx, t)
	if err == nil || errors.Is(err, io.EOF) || ctx.Err() != nil {
		return nil
	}
	return err
}

// serveHTTP serves streamable HTTP at /mcp (and /), with /healthz, /readyz
// and /metrics outside authentication (on --metrics-addr when it is set),
// until ctx ends; then it stops accepting and gives in-flight requests
// Grace to finish.
func (s *serveCmd) serveHTTP(ctx context.Context, e *env, server *mcp.Server, adapter *mcpsdk.Adapter, sessions *sessionLog, tokens *tokenTable, be *backend, m *metrics, stopAll, stop context.CancelFunc) error {
	ln, err := net.Listen("tcp", s.HTTP)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.HTTP, err)
	}
	defer ln.Close()
	var opsLn net.Listener
	if s.Guard.MetricsAddr != "" {
		if opsLn, err = net.Listen("tcp", s.Guard.MetricsAddr); err != nil {
			return fmt.Errorf("listen on --metrics-addr %s: %w", s.Guard.MetricsAddr, err)
		}
		defer opsLn.Close()
	}
	g := s.Guard
	sopts := &mcp.StreamableHTTPOptions{Stateless: s.Stateless, Logger: sdkLogger(e.log, "http"),
		MaxRequestBodyBytes: int64(g.MaxBodyBytes)}
	if !s.Stateless {
		sopts.SessionTimeout = g.SessionTimeout
	}
	// A subscriptions/listen request ends with the HTTP request that
	// carries it.
	handler := adapter.HTTPHandler(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, sopts))
	gopts := httpguard.Options{MaxBodyBytes: int64(g.MaxBodyBytes), AllowedOrigins: g.AllowedOrigins, WriteTimeout: g.WriteTimeout,
		CheckParams: mcpsdk.CheckParams, // as over stdio
		OnWriteTimeout: func(id string) {
			for ss := range server.Sessions() {
				if ss.ID() == id {
					e.log.Warn("ending a session that stopped reading its stream", "write_timeout", g.WriteTimeout)
					sessions.because(id, "stopped reading its stream")
					go ss.Close()
				}
			}
		}}
	if !s.Stateless {
		gopts.MaxSessions, gopts.MaxSessionsPerPrincipal = g.MaxSessions, g.MaxSessionsPerPrincipal
		gopts.Open = func() map[string]bool {
			open := map[string]bool{}
			for ss := range server.Sessions() {
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
	handler = httpguard.Handler(sessions.deletes(handler), gopts)
	if tokens != nil {
		handler = tokens.protect(handler) // tokens.go
	}
	if s.oauth != nil {
		handler = s.oauth.rs.Protect(handler)
	}
	handler = httpguard.OneAuthorization(handler)
	drain := &drainer{}
	handler = drain.track(traceHTTP(handler))
	ops := http.NewServeMux()
	ops.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	ops.HandleFunc("GET /readyz", be.health.readyz) // health.go
	ops.Handle("GET /metrics", m.handler())
	opsHandler := httpguard.LoopbackHostOnly(ops)
	mux := http.NewServeMux()
	if s.oauth != nil {
		s.oauth.rs.Register(mux) // the protected resource metadata, unauthenticated
	}
	mux.Handle("/mcp", handler)
	mux.Handle("/", handler)
	var opsServer *http.Server
	if opsLn == nil {
		for _, p := range []string{"GET /healthz", "GET /readyz", "GET /metrics"} {
			mux.Handle(p, opsHandler)
		}
	} else {
		opsServer = &http.Server{Handler: opsHandler, ReadHeaderTimeout: g.readHeaderTimeout(), ReadTimeout: g.ReadTimeout,
			WriteTimeout: g.ReadTimeout + 10*time.Second, IdleTimeout: g.IdleTimeout}
	}

	// No server-wide WriteTimeout: it would cut every SSE stream at a fixed
	// age. httpguard gives each write its own deadline instead. ReadTimeout
	// bounds receiving a request only; a long SSE response outlives it.
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: g.readHeaderTimeout(), ReadTimeout: g.ReadTimeout, IdleTimeout: g.IdleTimeout}
	authn := "bearer tokens from " + s.Tokens
	if s.oauth != nil {
		authn = s.oauth.describe()
	} else if tokens == nil {
		authn = "none: every request is served as principal " + s.Principal
	}
	attrs := []any{"addr", ln.Addr().String(), "stateless", s.Stateless, "backend", be.name, "authentication", authn}
	if opsLn != nil {
		attrs = append(attrs, "metrics_addr", opsLn.Addr().String())
	}
	// The serving line waits for the start-up checks, as it did when they
	// ran first: tools take it for "ready". The server answers before it;
	// the address is logged at debug level at once, past the holding.
	slog.New(be.startup.log.out).Debug("listening for MCP over streamable HTTP", "addr", ln.Addr().String())
	go be.startup.started(ctx, stop, func() {
		be.logNotes(e)
		e.log.Info("serving MCP over streamable HTTP", attrs...)
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
	e.log.Info("shutting down", "grace", s.Grace)
	sctx, cancel := context.WithTimeout(context.Background(), s.Grace)
	defer cancel()
	// Stop accepting and let in-flight requests finish. Past the grace
	// period, cancel those still running: they answer with an error. Then
	// end the sessions, whose standalone SSE streams would otherwise hold
	// their connections open, and close what remains.
	shut := make(chan error, 1)
	go func() { shut <- hs.Shutdown(sctx) }()
	drained := drain.wait(sctx)
	if drained {
		e.log.Info("in-flight requests finished")
	} else {
		e.log.Warn("grace period over: canceling the requests still in flight")
		stopAll()
		cctx, ccancel := context.WithTimeout(context.Background(), cancelWait)
		drain.wait(cctx)
		ccancel()
	}
	closed := make(chan struct{})
	go func() {
		for ss := range server.Sessions() {
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
	return nil
}

// cancelWait bounds each step of the shutdown after the grace period.
const cancelWait = time.Second

// drainer counts the requests in flight, except the standalone SSE streams
// (GET), which last as long as their session.
type drainer struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while n is 0
}

func (d *drainer) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			h.ServeHTTP(w, r)
			return
		}
		d.mu.Lock()
		if d.n == 0 {
			d.idle = make(chan struct{})
		}
		d.n++
		d.mu.Unlock()
		defer func() {
			d.mu.Lock()
			if d.n--; d.n == 0 {
				close(d.idle)
				d.idle = nil
			}
			d.mu.Unlock()
		}()
		h.ServeHTTP(w, r)
	})
}

// wait reports whether the requests in flight finished before ctx ended.
func (d *drainer) wait(ctx context.Context) bool {
	d.mu.Lock()
	idle := d.idle
	d.mu.Unlock()
	if idle == nil {
		return true
	}
	select {
	case <-idle:
		return true
	case <-ctx.Done():
		return false
	}
}

// verify is the bearer-token verifier: a token in the file becomes its
// principal, as TokenInfo.UserID.
func (t *tokenTable) verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	p, ok := t.principal(token)
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: p}, nil
}

// subscriptionsNote says, for the start-up log, over which requests and
// protocol revisions this server honours resource subscriptions.
func (s *serveCmd) subscriptionsNote() string {
	switch {
	case s.HTTP == "":
		return "resource subscriptions: on, per session over stdio (resources/subscribe, or subscriptions/listen at 2026-07-28)"
	case s.Stateless:
		return "resource subscriptions: on, over subscriptions/listen streams (protocol 2026-07-28); " +
			"resources/subscribe of 2025-11-25 and earlier has no session to keep them in stateless mode"
	default:
		return "resource subscriptions: on, per session (resources/subscribe, protocol 2025-11-25 and earlier)"
	}
}

// watchSubscriptions exports the subscriptions and subscribing streams
// (sessions, or subscriptions/listen streams on a stateless server) held
// now, and the subscriptions/listen streams open and refused.
func watchSubscriptions(m *metrics, a *mcpsdk.Adapter) {
	hub := a.Subscriptions().Hub()
	m.funcMetric(false, "mcpres_listen_streams_active", "subscriptions/listen requests open now (bounded by --max-listens-per-session and --max-listens-per-principal).", nil,
		func() float64 { return float64(a.Listens().Open) })
	m.funcMetric(true, "mcpres_listen_streams_refused_total", "subscriptions/listen requests refused because their session or principal had as many open as allowed.", nil,
		func() float64 { return float64(a.Listens().Refused) })
	ended := map[string]func(mcpsdk.ListenStats) int64{ // by reason
		"revoked":      func(s mcpsdk.ListenStats) int64 { return s.Revoked },
		"disconnected": func(s mcpsdk.ListenStats) int64 { return s.Carrier },
		"shutdown":     func(s mcpsdk.ListenStats) int64 { return s.Shutdown },
		"expired":      func(s mcpsdk.ListenStats) int64 { return s.Expired },
	}
	for reason, n := range ended {
		m.funcMetric(true, "mcpres_listen_streams_ended_total", "subscriptions/listen requests the server ended, by reason: revoked (every subscription of the stream was revoked; answered), disconnected (the HTTP request carrying it ended), shutdown (answered when shutdown began), expired (the access token it was made with expired; answered with an error).",
			prometheus.Labels{"reason": reason}, func() float64 { return float64(n(a.Listens())) })
	}
	m.reg.MustRegister(newHubCollector(hub.Stats))
	m.funcMetric(true, "mcpres_live_notifications_undelivered_total", "notifications/resources/updated dropped because the session had no stream to carry them (a stateful HTTP session without a standalone GET stream); the session goes on.", nil,
		func() float64 { return float64(a.Subscriptions().UndeliveredNotifications()) })
	m.funcMetric(true, "mcpres_subscriptions_expired_total", "resources/subscribe subscriptions ended because the access token that made them expired.", nil,
		func() float64 { return float64(a.Subscriptions().ExpiredSubscriptions()) })
}
