package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"go.phpboyscout.uk/mcp/resources/config"
	"go.phpboyscout.uk/mcp/resources/core"
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
	Standby standbyFlags `embed:""` // standby.go
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
	// serving, when set, is closed once check has reached the point where
	// requests may be served while it runs on (config Served.Serving):
	// the requests that need storage wait for it, not for check's end.
	serving <-chan struct{}
	// listFree says listing the definitions asks no storage, so that
	// resources/list need not wait for check.
	listFree bool
	startup  *startup // the run of check, set by Run
	// grants reports a resources file's unusable grant rows (grantwarn.go);
	// nil for the embedded demo.
	grants *unusableGrants
	// decidedBy names what decided an audited read's removed items, in
	// check's words (config Served.DecidedBy); nil for the embedded demo.
	decidedBy func(core.ResourceDefinition, core.PassStage) string
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
	be.startup = startChecks(ctx, be.check, be.serving, held)
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
	srv := &server{flags: s, e: e, be: be, stopServing: stopServing}
	defer srv.close()
	if err := srv.compose(ctx); err != nil {
		return err
	}
	if s.HTTP == "" {
		return srv.serveStdio(ctx)
	}
	return srv.serveHTTP(ctx)
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
		if err := s.Standby.withConfig(); err != nil {
			return nil, err
		}
		return s.configBackend(ctx, e)
	}
	s.Storage.standby = s.Standby
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
