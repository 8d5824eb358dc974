package mcpsdk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of the bounds on open subscriptions/listen streams.
const (
	DefaultMaxListensPerSession   = 4
	DefaultMaxListensPerPrincipal = 100
)

// ListenLimitMessage is the message of the error a subscriptions/listen
// request gets when its session or its principal has as many listen
// streams open as [Options] allow (MaxListensPerSession,
// MaxListensPerPrincipal). It is answered with code -32603 (internal
// error), like [SubscriptionLimitMessage].
const ListenLimitMessage = "too many open subscriptions/listen streams"

// Why a listen stream ended, as [ListenStats] counts them.
const (
	listenEndedClient   = iota // the client canceled it, or its session or stream ended
	listenEndedCarrier         // the HTTP request that carried it ended
	listenEndedRevoked         // every subscription it held was revoked
	listenEndedShutdown        // the server is shutting down
	listenEndedExpired         // the token it was made with expired
	listenEndReasons
)

// listenEndNames name the reasons in logs.
var listenEndNames = [listenEndReasons]string{"ended by the client or its session", "connection closed", "subscriptions revoked", "shutdown", "access token expired"}

// ListenStats counts the subscriptions/listen streams of an [Adapter], for
// metrics.
type ListenStats struct {
	// Open is the number of listen streams open now.
	Open int
	// Refused counts the listen requests refused by a bound.
	Refused int64
	// Revoked counts the streams answered because every resource
	// subscription they held was revoked; Carrier those ended because the
	// HTTP request that carried them ended (the client went away);
	// Shutdown those answered when the server began to shut down;
	// Expired those answered with [TokenExpiredCode] because the access
	// token they were made with expired.
	Revoked, Carrier, Shutdown, Expired int64
}

// listens bounds and tracks the open subscriptions/listen requests of one
// server. A listen request parks in the SDK until its context ends; the
// adapter gives it a context of its own, canceled (so that the request is
// answered) when every subscription it holds was revoked, when the HTTP
// request carrying it ends, when the token it was made with expires (one
// timer per request, answered with [TokenExpiredCode]), or at shutdown.
type listenSet struct {
	maxSession, maxPrincipal int

	mu           sync.Mutex
	closing      bool
	open         map[*listen]struct{}
	perSession   map[*mcp.ServerSession]int
	perPrincipal map[string]int
	carriers     map[string]*carrier
	refused      int64
	ended        [listenEndReasons]int64
	log          *slog.Logger
}

type listen struct {
	session   *mcp.ServerSession
	principal string
	uris      []string
	cancel    context.CancelFunc
	carrier   *carrier
	reason    int         // why the server ended it; -1 while it has not
	acked     bool        // the SDK acknowledged it: it is parked
	expiry    *time.Timer // ends it when its token expires; nil for a token that does not
}

// carrier is one HTTP request that may carry listen requests.
type carrier struct {
	ended   bool
	listens []*listen
}

func newListens(perSession, perPrincipal int, log *slog.Logger) *listenSet {
	if perSession <= 0 {
		perSession = DefaultMaxListensPerSession
	}
	if perPrincipal <= 0 {
		perPrincipal = DefaultMaxListensPerPrincipal
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &listenSet{maxSession: perSession, maxPrincipal: perPrincipal, log: log, open: map[*listen]struct{}{},
		perSession: map[*mcp.ServerSession]int{}, perPrincipal: map[string]int{}, carriers: map[string]*carrier{}}
}

// listenKey marks the context of a listen request, so that the
// unsubscriptions the SDK makes when it ends can tell which listen they
// belong to.
type listenKey struct{}

// carrierHeader names, inside the server, the HTTP request that carries a
// message (see [Adapter.HTTPHandler]); a client's own value is replaced.
const carrierHeader = "X-Mcpres-Listen-Carrier"

// serve runs one subscriptions/listen request through next within the
// bounds, with a context that ends when the server ends the stream.
func (ls *listenSet) serve(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request, principal string) (mcp.Result, error) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	l := &listen{session: ss, principal: principal, reason: -1}
	if p, _ := req.GetParams().(*mcp.SubscriptionsListenParams); p != nil && p.Notifications != nil {
		l.uris = slices.Clone(p.Notifications.ResourceSubscriptions)
	}
	var token string
	if ex := req.GetExtra(); ex != nil && ex.Header != nil {
		token = ex.Header.Get(carrierHeader)
	}
	ctx, cancel := context.WithCancel(context.WithValue(ctx, listenKey{}, l))
	defer cancel()
	l.cancel = cancel

	ls.mu.Lock()
	switch {
	case ls.perSession[ss] >= ls.maxSession || ls.perPrincipal[principal] >= ls.maxPrincipal:
		ls.refused++
		ls.mu.Unlock()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: ListenLimitMessage}
	case ls.closing:
		// Shutting down: the request is answered as soon as it is
		// acknowledged.
		l.reason = listenEndedShutdown
	}
	if token != "" {
		c := ls.carriers[token]
		if c == nil || c.ended {
			// The HTTP request that carried it has already ended: nobody
			// would read the stream.
			ls.endLocked(l, listenEndedCarrier)
		} else {
			c.listens = append(c.listens, l)
			l.carrier = c
		}
	}
	if exp := tokenExpiry(ctx); !exp.IsZero() {
		l.expiry = time.AfterFunc(time.Until(exp), func() {
			ls.mu.Lock()
			defer ls.mu.Unlock()
			ls.endLocked(l, listenEndedExpired)
		})
	}
	ls.open[l] = struct{}{}
	ls.perSession[ss]++
	ls.perPrincipal[principal]++
	ls.mu.Unlock()

	defer ls.finish(l)
	res, err := next(ctx, method, req)
	ls.mu.Lock()
	expired := l.reason == listenEndedExpired
	ls.mu.Unlock()
	if expired {
		return nil, &jsonrpc.Error{Code: TokenExpiredCode, Message: TokenExpiredMessage}
	}
	return res, err
}

// finish forgets l once its request was answered.
func (ls *listenSet) finish(l *listen) {
	ls.mu.Lock()
	if l.expiry != nil {
		l.expiry.Stop()
	}
	delete(ls.open, l)
	if ls.perSession[l.session]--; ls.perSession[l.session] <= 0 {
		delete(ls.perSession, l.session)
	}
	if ls.perPrincipal[l.principal]--; ls.perPrincipal[l.principal] <= 0 {
		delete(ls.perPrincipal, l.principal)
	}
	if c := l.carrier; c != nil {
		if i := slices.Index(c.listens, l); i >= 0 {
			c.listens = slices.Delete(c.listens, i, i+1)
		}
	}
	reason, open := l.reason, len(ls.open)
	if reason >= 0 {
		ls.ended[reason]++
	} else {
		reason = listenEndedClient
	}
	ls.mu.Unlock()
	// No URI, no principal: the reason and the number still open.
	ls.log.Info("mcpsdk: a subscriptions/listen stream ended", "reason", listenEndNames[reason], "open", open)
}

// endLocked has the server end l's request for reason, once; ls.mu is
// held. The request's context is canceled once the SDK has acknowledged
// it: before, it would fail the subscriptions the SDK is still making.
func (ls *listenSet) endLocked(l *listen, reason int) {
	if l.reason >= 0 {
		return
	}
	l.reason = reason
	if l.acked {
		l.cancel()
	}
}

// acknowledged is sending middleware: once the SDK acknowledged a listen
// request (the stream is open, its subscriptions made), a request the
// server already ended is answered.
func (ls *listenSet) acknowledged(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method == notificationSubscriptionsAck {
			if l, ok := ctx.Value(listenKey{}).(*listen); ok {
				ls.mu.Lock()
				l.acked = true
				if l.reason >= 0 {
					l.cancel()
				}
				ls.mu.Unlock()
			}
		}
		return res, err
	}
}

// notificationSubscriptionsAck is the notification that opens a listen
// stream.
const notificationSubscriptionsAck = "notifications/subscriptions/acknowledged"

// revoked ends the listen requests of ss that hold no subscription any
// more: still(uri) reports whether ss still holds uri.
func (ls *listenSet) revoked(ss *mcp.ServerSession, still func(uri string) bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for l := range ls.open {
		if l.session != ss || len(l.uris) == 0 || slices.ContainsFunc(l.uris, still) {
			continue
		}
		ls.endLocked(l, listenEndedRevoked)
	}
}

// heldElsewhere reports whether a listen request of ss other than the one
// ctx belongs to holds uri: the SDK unsubscribes every URI of a listen
// request when it ends, which must not take a URI from another stream of
// the same session. A ctx of no listen request (resources/unsubscribe)
// holds nothing.
func (ls *listenSet) heldElsewhere(ctx context.Context, ss *mcp.ServerSession, uri string) bool {
	self, ok := ctx.Value(listenKey{}).(*listen)
	if !ok {
		return false
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for l := range ls.open {
		if l != self && l.session == ss && slices.Contains(l.uris, uri) {
			return true
		}
	}
	return false
}

// shutdown answers every open listen request, and every later one as soon
// as it is acknowledged.
func (ls *listenSet) shutdown() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.closing = true
	for l := range ls.open {
		ls.endLocked(l, listenEndedShutdown)
	}
}

func (ls *listenSet) stats() ListenStats {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ListenStats{Open: len(ls.open), Refused: ls.refused, Revoked: ls.ended[listenEndedRevoked],
		Carrier: ls.ended[listenEndedCarrier], Shutdown: ls.ended[listenEndedShutdown], Expired: ls.ended[listenEndedExpired]}
}

// carry serves one HTTP request through h as the carrier of the listen
// requests it holds: when it ends, so do they.
func (ls *listenSet) carry(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(carrierHeader) // never the client's
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		var b [16]byte
		_, _ = rand.Read(b[:])
		token := hex.EncodeToString(b[:])
		c := &carrier{}
		ls.mu.Lock()
		ls.carriers[token] = c
		ls.mu.Unlock()
		defer func() {
			ls.mu.Lock()
			defer ls.mu.Unlock()
			c.ended = true
			delete(ls.carriers, token)
			for _, l := range c.listens {
				ls.endLocked(l, listenEndedCarrier)
			}
		}()
		r.Header.Set(carrierHeader, token)
		h.ServeHTTP(w, r)
	})
}

// HTTPHandler returns h (the SDK's streamable HTTP handler, or a handler
// in front of it) so that a subscriptions/listen request ends when the
// HTTP request that carries it ends: on a stateful server the SDK would
// otherwise keep the request, and a goroutine, until the session ends,
// however often a client opens a stream and goes away. (A stateless
// server ends it already.) Every stream is answered, with the listen
// result, when it ends for another reason: all of its subscriptions were
// revoked, or [Adapter.EndListens] was called; or with [TokenExpiredCode]
// when the access token it was made with expires.
func (a *Adapter) HTTPHandler(h http.Handler) http.Handler { return a.listens.carry(h) }

// EndListens answers every open subscriptions/listen request with its
// result, which tells the client that its subscriptions ended, and from
// then on answers every new one as soon as it is acknowledged. A host calls
// it when it starts to shut down, so that open streams do not hold the
// shutdown for its whole grace period.
func (a *Adapter) EndListens() { a.listens.shutdown() }

// Listens returns the counts of the adapter's subscriptions/listen
// streams.
func (a *Adapter) Listens() ListenStats { return a.listens.stats() }
