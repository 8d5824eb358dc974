// Package httpguard wraps an MCP streamable HTTP handler with the checks a
// server exposed to hostile clients needs in front of the go-sdk's own:
// an Origin allowlist, a bounded request body read within the server's
// read deadline, refusal of JSON-RPC batches, of a body that is not one
// JSON value and of ids the server cannot echo exactly (package
// jsonrpcid), a write deadline on every
// write (so a client that stops reading its stream fails the write instead
// of holding it), and caps on the sessions of the server and of each
// principal.
package httpguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"go.phpboyscout.uk/mcp/resources/internal/jsonrpcid"
)

// SessionHeader is the streamable HTTP session header.
const SessionHeader = "Mcp-Session-Id"

// Options configure [Handler]. Zero fields disable their check, except
// MaxBodyBytes (zero selects DefaultMaxBodyBytes).
type Options struct {
	// MaxBodyBytes bounds a request body; a longer one is answered 413.
	MaxBodyBytes int64
	// AllowedOrigins lists the origins (scheme://host[:port]) besides
	// loopback ones that a request with an Origin header may come from.
	// A request without Origin (not from a browser) is not checked.
	AllowedOrigins []string
	// WriteTimeout bounds every write and flush of a response; a client
	// that does not take the bytes within it loses its connection.
	WriteTimeout time.Duration
	// OnWriteTimeout, if set, is called (once per response) with the
	// request's session id when a write missed WriteTimeout, so that the
	// host can end the stuck session.
	OnWriteTimeout func(sessionID string)
	// MaxSessions and MaxSessionsPerPrincipal bound the sessions open at
	// once (stateful HTTP only); a request that would open one more is
	// answered 429 with a JSON-RPC error that says which cap it hit.
	MaxSessions, MaxSessionsPerPrincipal int
	// Principal names the principal of a request for the per-principal
	// cap; nil counts every request as one principal.
	Principal func(*http.Request) string
	// Open returns the ids of the sessions open now, so that sessions the
	// server ended (idle expiry, DELETE) stop counting. Required with
	// either session cap.
	Open func() map[string]bool
	// CheckParams, if set, is asked about every request before next sees
	// it; a request it refuses (bad is true) is answered with its code and
	// message and the request's id: HTTP 400 at protocol 2026-07-28 and
	// later, 200 before, as the SDK answers its own errors.
	CheckParams func(method string, params json.RawMessage) (code int64, message string, bad bool)
}

// DefaultMaxBodyBytes is the body limit when Options.MaxBodyBytes is zero:
// 4 MiB, the go-sdk's own default.
const DefaultMaxBodyBytes = 4 << 20

// Messages of the refusals, as JSON-RPC error messages.
const (
	BatchMessage                   = "JSON-RPC batches are not supported"
	SessionLimitMessage            = "too many sessions on this server; try again later"
	PrincipalLimitMessage          = "too many sessions for this principal; close one (DELETE) or wait for idle ones to expire"
	OriginMessage                  = "origin not allowed"
	BodyTooLargeMessage            = "request body too large"
	BodyTimeoutMessage             = "request body not received in time"
	ParseErrorMessage              = "parse error: the body is not one JSON value"
	TwoAuthorizationsMessage       = "invalid request: more than one Authorization header"
	codeServerError          int64 = -32000
	codeInvalidRequest       int64 = -32600
	codeParseError           int64 = -32700
)

// Handler returns next behind the checks of o.
func Handler(next http.Handler, o Options) http.Handler {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	g := &guard{next: next, o: o, allowed: map[string]bool{}, sessions: map[string]string{}, perPrincipal: map[string]int{}}
	for _, a := range o.AllowedOrigins {
		g.allowed[strings.ToLower(strings.TrimRight(a, "/"))] = true
	}
	return g
}

type guard struct {
	next    http.Handler
	o       Options
	allowed map[string]bool

	mu           sync.Mutex
	sessions     map[string]string // open session id -> principal
	perPrincipal map[string]int    // open and pending sessions by principal
	pending      int               // session-opening requests in flight
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin != "" && !g.originAllowed(origin) {
		refuse(w, http.StatusForbidden, codeInvalidRequest, OriginMessage)
		return
	}
	rc := http.NewResponseController(w)
	if r.Method == http.MethodPost {
		if r.ContentLength > g.o.MaxBodyBytes {
			refuse(w, http.StatusRequestEntityTooLarge, codeInvalidRequest, BodyTooLargeMessage)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.o.MaxBodyBytes))
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			refuse(w, http.StatusRequestEntityTooLarge, codeInvalidRequest, BodyTooLargeMessage)
			return
		case err != nil:
			// The server's ReadTimeout passed (a slow body) or the client
			// went away: this connection is done.
			w.Header().Set("Connection", "close")
			refuse(w, http.StatusRequestTimeout, codeInvalidRequest, BodyTimeoutMessage)
			return
		}
		t := bytes.TrimSpace(body)
		switch {
		case len(t) > 0 && t[0] == '[':
			refuse(w, http.StatusBadRequest, codeInvalidRequest, BatchMessage)
			return
		case len(t) > 0 && !json.Valid(t):
			// Not one JSON value (trailing bytes after a message, like a
			// stdio line with them): the SDK would serve the first value.
			refuse(w, http.StatusBadRequest, codeParseError, ParseErrorMessage)
			return
		case !jsonrpcid.Exact(t):
			refuse(w, http.StatusBadRequest, codeInvalidRequest, jsonrpcid.Message)
			return
		case g.o.CheckParams != nil && g.paramsRefused(w, r, t):
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	// The whole request is read: lift the server's read deadline (net/http
	// does the same when it starts its background read), so that a long
	// SSE response is bounded by the write deadline alone.
	_ = rc.SetReadDeadline(time.Time{})

	if w2, done, ok := g.admit(w, r); ok {
		defer done()
		w = w2
	} else {
		return
	}
	if g.o.WriteTimeout > 0 {
		w = &deadlineWriter{ResponseWriter: w, rc: rc, d: g.o.WriteTimeout, session: r.Header.Get(SessionHeader), stuck: g.o.OnWriteTimeout}
	}
	g.next.ServeHTTP(w, r)
}

// paramsRefused answers a request (a message with a method and a non-null
// id) whose params CheckParams refuses, and reports whether it did.
func (g *guard) paramsRefused(w http.ResponseWriter, r *http.Request, body []byte) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil || m.Method == nil || len(m.ID) == 0 || string(m.ID) == "null" {
		return false
	}
	code, msg, bad := g.o.CheckParams(*m.Method, m.Params)
	if !bad {
		return false
	}
	status := http.StatusOK
	if r.Header.Get("Mcp-Protocol-Version") >= "2026-07-28" {
		status = http.StatusBadRequest
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
	return true
}

// originAllowed reports whether origin is loopback or listed.
func (g *guard) originAllowed(origin string) bool {
	if g.allowed[strings.ToLower(strings.TrimRight(origin, "/"))] {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return IsLoopbackHost(u.Hostname())
}

// IsLoopbackHost reports whether host (without port) names this machine's
// loopback interface: localhost or a loopback IP.
func IsLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// admit applies the session caps to a request that opens a session (a
// POST without a session id). It returns the writer to use and a function
// to call when the request is done.
func (g *guard) admit(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, func(), bool) {
	if (g.o.MaxSessions <= 0 && g.o.MaxSessionsPerPrincipal <= 0) || g.o.Open == nil ||
		r.Method != http.MethodPost || r.Header.Get(SessionHeader) != "" {
		return w, func() {}, true
	}
	principal := ""
	if g.o.Principal != nil {
		principal = g.o.Principal(r)
	}
	g.mu.Lock()
	g.pruneLocked()
	switch {
	case g.o.MaxSessions > 0 && len(g.sessions)+g.pending >= g.o.MaxSessions:
		g.mu.Unlock()
		w.Header().Set("Retry-After", "10")
		refuse(w, http.StatusTooManyRequests, codeServerError, SessionLimitMessage)
		return nil, nil, false
	case g.o.MaxSessionsPerPrincipal > 0 && g.perPrincipal[principal] >= g.o.MaxSessionsPerPrincipal:
		g.mu.Unlock()
		w.Header().Set("Retry-After", "10")
		refuse(w, http.StatusTooManyRequests, codeServerError, PrincipalLimitMessage)
		return nil, nil, false
	}
	g.pending++
	g.perPrincipal[principal]++
	g.mu.Unlock()
	sw := &sessionWriter{ResponseWriter: w}
	return sw, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.pending--
		if id := sw.id; id != "" && g.o.Open()[id] {
			if _, dup := g.sessions[id]; !dup {
				g.sessions[id] = principal
				return // the pending count becomes the session's
			}
		}
		g.releaseLocked(principal)
	}, true
}

// pruneLocked forgets the sessions that are no longer open.
func (g *guard) pruneLocked() {
	if len(g.sessions) == 0 {
		return
	}
	open := g.o.Open()
	for id, p := range g.sessions {
		if !open[id] {
			delete(g.sessions, id)
			g.releaseLocked(p)
		}
	}
}

func (g *guard) releaseLocked(p string) {
	if g.perPrincipal[p]--; g.perPrincipal[p] <= 0 {
		delete(g.perPrincipal, p)
	}
}

// refuse answers with a JSON-RPC error object and a null id.
func refuse(w http.ResponseWriter, status int, code int64, msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// sessionWriter notes the session id the SDK assigns.
type sessionWriter struct {
	http.ResponseWriter
	id   string
	seen bool
}

func (s *sessionWriter) note() {
	if !s.seen {
		s.seen = true
		s.id = s.Header().Get(SessionHeader)
	}
}

func (s *sessionWriter) WriteHeader(code int) { s.note(); s.ResponseWriter.WriteHeader(code) }
func (s *sessionWriter) Write(p []byte) (int, error) {
	s.note()
	return s.ResponseWriter.Write(p)
}
func (s *sessionWriter) Flush() {
	s.note()
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}
func (s *sessionWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// deadlineWriter gives every write and flush its own deadline and lifts
// it afterwards, so an idle stream never times out but a stuck one does.
type deadlineWriter struct {
	http.ResponseWriter
	rc       *http.ResponseController
	d        time.Duration
	session  string
	stuck    func(string)
	reported bool
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
	n, err := w.ResponseWriter.Write(p)
	_ = w.rc.SetWriteDeadline(time.Time{})
	w.check(err)
	return n, err
}

func (w *deadlineWriter) Flush() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.d))
	err := http.NewResponseController(w.ResponseWriter).Flush()
	_ = w.rc.SetWriteDeadline(time.Time{})
	w.check(err)
}

// check reports a missed deadline: the client stopped reading, and net/http
// has already broken the connection and canceled the request.
func (w *deadlineWriter) check(err error) {
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && !w.reported && w.stuck != nil && w.session != "" {
		w.reported = true
		w.stuck(w.session)
	}
}

func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// OneAuthorization refuses (400) a request with more than one
// Authorization header, before next (the bearer-token check, which would
// read the first) sees it: which one counts must not be the server's
// guess.
func OneAuthorization(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.Header.Values("Authorization")) > 1 {
			refuse(w, http.StatusBadRequest, codeInvalidRequest, TwoAuthorizationsMessage)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// LoopbackHostOnly refuses (403) a request that arrived on a loopback
// address with a Host header that does not name loopback: a browser page
// that rebinds its own DNS name to 127.0.0.1 cannot reach next.
func LoopbackHostOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			if ta, ok := la.(*net.TCPAddr); ok && ta.IP.IsLoopback() {
				host, _, err := net.SplitHostPort(r.Host)
				if err != nil {
					host = r.Host
				}
				if !IsLoopbackHost(host) {
					http.Error(w, fmt.Sprintf("%s: Host must name loopback on a loopback listener", http.StatusText(http.StatusForbidden)), http.StatusForbidden)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}
