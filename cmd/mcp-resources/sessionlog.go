package main

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/internal/httpguard"
)

// debugURIs is a slog.Handler for the SDK's loggers: a record that carries
// a resource URI ("uri", whose captures may be SQL parameters, account
// names, paths) is written only at debug level, whatever level the SDK
// gave it (its INFO "resource subscribed uri=..." among them). Our rule:
// URIs and captures stay out of logs below debug.
type debugURIs struct{ h slog.Handler }

func (d debugURIs) Enabled(ctx context.Context, l slog.Level) bool { return d.h.Enabled(ctx, l) }

func (d debugURIs) Handle(ctx context.Context, r slog.Record) error {
	if r.Level > slog.LevelDebug && carriesURI(r) {
		if !d.h.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r = r.Clone()
		r.Level = slog.LevelDebug
	}
	return d.h.Handle(ctx, r)
}

func (d debugURIs) WithAttrs(as []slog.Attr) slog.Handler {
	for _, a := range as {
		if isURIAttr(a) {
			// Every record of this logger carries a URI.
			return debugURIs{h: atDebug{d.h.WithAttrs(as)}}
		}
	}
	return debugURIs{h: d.h.WithAttrs(as)}
}

func (d debugURIs) WithGroup(name string) slog.Handler { return debugURIs{h: d.h.WithGroup(name)} }

func carriesURI(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = isURIAttr(a)
		return !found
	})
	return found
}

func isURIAttr(a slog.Attr) bool { return a.Key == "uri" || a.Key == "URI" }

// atDebug writes every record at debug level.
type atDebug struct{ h slog.Handler }

func (d atDebug) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.h.Enabled(ctx, slog.LevelDebug)
}
func (d atDebug) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return d.h.Handle(ctx, r)
}
func (d atDebug) WithAttrs(as []slog.Attr) slog.Handler { return atDebug{d.h.WithAttrs(as)} }
func (d atDebug) WithGroup(name string) slog.Handler    { return atDebug{d.h.WithGroup(name)} }

// sessionLog writes one line when a session ends, with its reason: the
// client ended it (HTTP DELETE, or closed stdio), it was idle for
// --session-timeout, it stopped reading its stream, or the server shut
// down. No session id, principal or URI: the reason, the session's age
// and the sessions still open.
type sessionLog struct {
	log     *slog.Logger
	timeout time.Duration // the idle timeout (stateful HTTP), 0: none

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*sessionState
	byID     map[string]*sessionState
	stopping bool
}

type sessionState struct {
	opened, last time.Time
	reason       string // set by whoever ended it
}

func newSessionLog(log *slog.Logger, timeout time.Duration) *sessionLog {
	return &sessionLog{log: log, timeout: timeout, sessions: map[*mcp.ServerSession]*sessionState{}, byID: map[string]*sessionState{}}
}

// middleware notes every session on its first request and when it was
// last active.
func (l *sessionLog) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
			l.seen(ss)
		}
		return next(ctx, method, req)
	}
}

func (l *sessionLog) seen(ss *mcp.ServerSession) {
	now := time.Now()
	l.mu.Lock()
	st := l.sessions[ss]
	if st != nil {
		st.last = now
		l.mu.Unlock()
		return
	}
	st = &sessionState{opened: now, last: now}
	l.sessions[ss] = st
	id := ss.ID()
	if id != "" {
		l.byID[id] = st
	}
	l.mu.Unlock()
	go func() {
		_ = ss.Wait()
		l.ended(ss, id, st)
	}()
}

// because records why the session with id is being ended.
func (l *sessionLog) because(id, reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.byID[id]; st != nil && st.reason == "" {
		st.reason = reason
	}
}

// shutdown makes every later end a shutdown's, unless it has a reason.
func (l *sessionLog) shutdown() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopping = true
}

func (l *sessionLog) ended(ss *mcp.ServerSession, id string, st *sessionState) {
	now := time.Now()
	l.mu.Lock()
	delete(l.sessions, ss)
	if id != "" {
		delete(l.byID, id)
	}
	reason := st.reason
	switch {
	case reason != "":
	case l.stopping:
		reason = "shutdown"
	case l.timeout > 0 && now.Sub(st.last) >= l.timeout-time.Second:
		reason = "idle timeout"
	default:
		reason = "closed" // the client closed its stream (stdio), or the server ended it
	}
	open := len(l.sessions)
	l.mu.Unlock()
	l.log.Info("session ended", "reason", reason, "age", now.Sub(st.opened).Round(time.Millisecond), "open", open)
}

// deletes notes the reason of a client's DELETE of its session.
func (l *sessionLog) deletes(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			if id := r.Header.Get(httpguard.SessionHeader); id != "" {
				l.because(id, "deleted by the client")
			}
		}
		h.ServeHTTP(w, r)
	})
}
