package postgres

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/core"
)

// ChangeChannel is the channel on which the reference schema's triggers
// (migrations version 2) NOTIFY the ids of changed projects, assets and
// grants.
const ChangeChannel = "mcpres_changes"

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

// Listener is the core.ChangeSource of the reference schema: one dedicated
// connection LISTENs on ChangeChannel and turns each notification into the
// change keys of the targets it concerns.
//
// The connection is a plain *pgx.Conn of its own, opened from the
// configuration given to NewListener, never a pooled connection held
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
	// channels, keys and changeKeys are the key listener's (see
	// [Source.Listener]); nil channels mean the reference schema's.
	channels   []string
	keys       func(channel, payload string) []string
	changeKeys func(core.ResourceTarget) []string
	min, max   time.Duration
	log        *slog.Logger
	pid        atomic.Uint32
	reconnects atomic.Int64
}

// NewListener returns a listener that connects with cfg (which it copies;
// see pgx.ParseConfig). Errors are *core.ConfigError.
func NewListener(cfg *pgx.ConnConfig, opts *ListenerOptions) (*Listener, error) {
	if cfg == nil {
		return nil, core.NewConfigError("cfg", "is nil", nil)
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
	channels := l.channels
	if channels == nil {
		channels = []string{ChangeChannel}
	}
	for _, ch := range channels {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return err
		}
	}
	l.pid.Store(conn.PgConn().PID())
	l.reconnects.Add(1)
	l.log.Info("postgres listener connected", "channels", strings.Join(channels, ","))
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
		var keys []string
		if l.keys != nil {
			keys = l.keys(n.Channel, n.Payload)
		} else {
			keys = notificationKeys(n.Payload)
		}
		if len(keys) > 0 {
			changed(core.Change{Keys: keys})
		} else {
			changed(core.Change{All: true}) // a payload we cannot read: be safe
		}
	}
}

// The change keys of the reference schema.
const (
	keyProjects = "pg:projects"
	keyProject  = "pg:project:" // + project: the project, its bundle membership
	keyGrants   = "pg:grants:"  // + project: a project-wide grant
	keyAsset    = "pg:asset:"   // + project "/" asset
	assetPrefix = "asset://project/"
)

// AssetChangeKey returns the change key under which the Listener reports a
// change of the asset (its row or a grant on it).
func AssetChangeKey(project, asset string) string { return keyAsset + project + "/" + asset }

// notificationKeys turns one payload of the triggers into change keys.
func notificationKeys(payload string) []string {
	var n struct {
		T string  `json:"t"`
		P string  `json:"p"`
		A *string `json:"a"`
	}
	if json.Unmarshal([]byte(payload), &n) != nil || n.P == "" {
		return nil
	}
	switch n.T {
	case "p":
		return []string{keyProject + n.P, keyProjects}
	case "a":
		if n.A == nil {
			return nil
		}
		return []string{AssetChangeKey(n.P, *n.A), keyProject + n.P}
	case "g":
		if n.A == nil {
			return []string{keyGrants + n.P, keyProject + n.P, keyProjects}
		}
		return []string{AssetChangeKey(n.P, *n.A), keyProject + n.P, keyProjects}
	}
	return nil
}

// ChangeKeys returns the change keys a target depends on, by its URI: the
// project list for [IndexURI]; the project and its project-wide grants for
// a project bundle (asset://project/{project}); the asset and its project's
// grants for any target at or under an asset's URI,
// asset://project/{project}/asset/{asset}[/...], which covers the asset's
// fields, its body and the object its row references (the row's ETag or
// version id changes with the object). Any other target has none.
func (l *Listener) ChangeKeys(t core.ResourceTarget) []string {
	if l.changeKeys != nil {
		return l.changeKeys(t)
	}
	uri := t.URI()
	if uri == IndexURI {
		return []string{keyProjects}
	}
	rest, ok := strings.CutPrefix(uri, assetPrefix)
	if !ok {
		return nil
	}
	segs := strings.SplitN(rest, "/", 4)
	p, err := url.PathUnescape(segs[0])
	if err != nil || p == "" {
		return nil
	}
	if len(segs) == 1 {
		return []string{keyProject + p, keyGrants + p}
	}
	if len(segs) < 3 || segs[1] != "asset" {
		return nil
	}
	a, err := url.PathUnescape(segs[2])
	if err != nil || a == "" {
		return nil
	}
	return []string{AssetChangeKey(p, a), keyGrants + p}
}

var _ core.ChangeSource = (*Listener)(nil)
