package postgres

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/core"
)

// Defaults of ListenerOptions.
const (
	DefaultListenMinBackoff = 100 * time.Millisecond
	DefaultListenMaxBackoff = 5 * time.Second
	// ListenerApplicationName is the application_name of the listening
	// connection unless its configuration sets one.
	ListenerApplicationName = "mcp-resources listener"
)

// ListenerOptions configure a Listener. A nil *ListenerOptions selects
// every default.
type ListenerOptions struct {
	// MinBackoff and MaxBackoff bound the wait before reconnecting; it
	// doubles from MinBackoff after each failed attempt, with jitter.
	// Defaults 100 ms and 5 s.
	MinBackoff, MaxBackoff time.Duration
	// Logger receives disconnects and reconnects. Nil discards them.
	Logger *slog.Logger
}

// Listener is the [core.ChangeSource] of a [Source]'s bindings that name a
// channel ([SQLBinding].Listen), made by [Source.Listener]: one dedicated
// connection LISTENs on
// those channels and turns each key payload into the change keys of the
// targets it concerns.
//
// The connection is a plain *pgx.Conn of its own, opened from the
// configuration given to [Source.Listener], never a pooled connection held
// forever. It must reach PostgreSQL directly: a transaction-pooling
// PgBouncer breaks LISTEN (the readers' transaction-local settings, by
// contrast, work through one). When the connection is lost or its backend
// is terminated, Watch reconnects with backoff and then reports
// core.Change{All: true}, because notifications sent while it was
// disconnected are lost; subscribers are then re-checked and notified as
// possibly changed.
//
// Every replica of a server runs its own Listener: each notification
// reaches every listening connection, so each replica notifies its own
// sessions.
type Listener struct {
	cfg *pgx.ConnConfig
	// channels are the channels it LISTENs on; changeKeys gives a target's
	// change keys (see [Source.Listener]).
	channels   []string
	changeKeys func(core.ResourceTarget) []string
	min, max   time.Duration
	log        *slog.Logger
	pid        atomic.Uint32
	reconnects atomic.Int64
}

// newListener returns a listener without channels that connects with cfg
// (which it copies; see pgx.ParseConfig). Errors are *core.ConfigError.
func newListener(cfg *pgx.ConnConfig, opts *ListenerOptions) (*Listener, error) {
	if cfg == nil {
		return nil, core.ConfigPath{Field: "cfg"}.Reject("is nil", nil)
	}
	l := &Listener{cfg: cfg.Copy(), min: DefaultListenMinBackoff, max: DefaultListenMaxBackoff}
	if opts != nil {
		if opts.MinBackoff > 0 {
			l.min = opts.MinBackoff
		}
		if opts.MaxBackoff > 0 {
			l.max = opts.MaxBackoff
		}
		l.log = opts.Logger
	}
	if l.max < l.min {
		l.max = l.min
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if l.cfg.RuntimeParams == nil {
		l.cfg.RuntimeParams = map[string]string{}
	}
	if l.cfg.RuntimeParams["application_name"] == "" {
		l.cfg.RuntimeParams["application_name"] = ListenerApplicationName
	}
	return l, nil
}

// PID returns the backend process id of the listening connection, or 0
// while there is none.
func (l *Listener) PID() uint32 { return l.pid.Load() }

// Connects counts the connections Watch has established (the first
// included).
func (l *Listener) Connects() int64 { return l.reconnects.Load() }

// Watch listens until ctx ends, then returns ctx's error. After every
// connection (the first included) it reports core.Change{All: true}, then
// one change per notification. It reconnects after any failure.
func (l *Listener) Watch(ctx context.Context, changed func(core.Change)) error {
	backoff := l.min
	for {
		err := l.session(ctx, changed)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		l.log.Warn("postgres listener disconnected; reconnecting", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		backoff = min(backoff*2, l.max)
		if err == nil { // connected, then lost: start over quickly
			backoff = l.min
		}
	}
}

// session connects, LISTENs and waits for notifications until the
// connection fails (err) or ctx ends. It returns nil when a connection was
// established and later lost.
func (l *Listener) session(ctx context.Context, changed func(core.Change)) error {
	conn, err := pgx.ConnectConfig(ctx, l.cfg)
	if err != nil {
		return err
	}
	defer func() {
		l.pid.Store(0)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	for _, ch := range l.channels {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return err
		}
	}
	l.pid.Store(conn.PgConn().PID())
	l.reconnects.Add(1)
	l.log.Info("postgres listener connected", "channels", strings.Join(l.channels, ","))
	changed(core.Change{All: true}) // anything may have changed while we were not listening
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			l.log.Warn("postgres listener lost its connection", "err", err)
			return nil
		}
		changed(core.Change{Keys: payloadKeys(n.Channel, n.Payload)})
	}
}

// ChangeKeys returns the change keys a target depends on (see
// [Source.Listener]): a row's or object's key on its binding's channel, a
// bundle's any change on its channel. A target of another source, or of a
// binding without a channel, has none.
func (l *Listener) ChangeKeys(t core.ResourceTarget) []string { return l.changeKeys(t) }

var _ core.ChangeSource = (*Listener)(nil)
