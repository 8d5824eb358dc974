package mcpsdk

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/live"
)

// Methods and notifications of live resources.
const (
	MethodSubscribe             = "resources/subscribe"
	MethodUnsubscribe           = "resources/unsubscribe"
	MethodSubscriptionsListen   = "subscriptions/listen"
	MethodComplete              = "completion/complete"
	NotificationResourceUpdated = "notifications/resources/updated"
)

// SubscriptionLimitMessage is the message of the error a subscribe request
// gets when a session, its principal or the server holds as many
// subscriptions as [live.Options] allow. It is answered with code -32603 (internal error),
// and only to a URI the caller may read: any other URI gets exactly the
// error a read of it gets.
const SubscriptionLimitMessage = "too many resource subscriptions"

// Subscriptions serves resource subscriptions for one [mcp.Server] from a
// [core.Resources] gateway and change sources: resources/subscribe and
// resources/unsubscribe (protocol 2025-11-25 and earlier) and the resource
// subscriptions of subscriptions/listen (2026-07-28).
//
// A subscribe request is authorized exactly like a read of its URI
// ([core.Resources.Authorize]: discovery, the requested target's
// visibility and read permission, no body read); a URI the caller may not
// read gets the very error, code and message, that a read of it gets.
// Subscriptions are bounded per session, per principal and per server,
// released by unsubscribe and when the session ends, re-authorized as their
// subscriber's principal before every notifications/resources/updated,
// coalesced per URI and rate-limited per session: see package live. A
// subscription lasts no longer than the access token that made it
// (auth.TokenInfo.Expiration): at its expiry it ends
// ([Subscriptions.ExpiredSubscriptions]), and a subscriptions/listen is
// answered with [TokenExpiredCode].
//
// A host gets them from [New] with [Options.Live] and the stores as
// [Options.Sources]:
//
//	a := mcpsdk.New(res, &mcpsdk.Options{Live: &live.Options{}, Sources: []core.ChangeSource{store}})
//	server := a.NewServer(impl, &mcp.ServerOptions{...})
//	go a.Run(ctx) // until the server stops
//
// Notifications need a stream to the client: the session (stdio, stateful
// streamable HTTP) or, on a stateless streamable HTTP server, the response
// stream of a subscriptions/listen request (protocol 2026-07-28). There the
// SDK serves each request in a session of its own: a listen request's
// session lasts as long as its stream, so the per-session bounds, rate
// limits, queue and write deadline below apply per listen stream, and its
// subscriptions are released when the stream ends. Set
// [Options].ListenOnly for such a server: a resources/subscribe of
// an earlier revision has no stream to be notified on there.
//
// Behind a load balancer, every replica runs its own Subscriptions and
// change sources (each Postgres replica LISTENs for itself). A stateful
// session must stay on the replica that holds it (session affinity); a
// listen stream needs none: whichever replica holds it hears every change
// and notifies it, and a client whose stream broke (a replica that went
// away) listens again, on any replica.
//
// The adapter sends notifications/resources/updated through the server's
// own subscription registry ([mcp.Server.ResourceUpdated]) and lets through
// only those it decided on, session by session; do not call
// ResourceUpdated yourself on a server that uses Subscriptions, because
// those notifications are dropped.
//
// A client that stops reading delays only itself: every session has its
// own bounded queue of at most [NotifyQueueLength] notifications, or
// [live.Options].MaxPerSession when that is more (one per
// URI; a newer one for a queued URI replaces it) and its own writer, and a
// session whose write misses [live.Options].WriteTimeout, or whose queue
// overflows, is ended (its subscriptions go with it). No lock is held
// while a notification is written. A notification the transport refuses
// at once (a stateful HTTP session with no standalone GET stream open) is
// dropped and counted ([Subscriptions.UndeliveredNotifications]), and the
// session goes on.
type Subscriptions struct {
	res *core.Resources
	hub *live.Hub[*mcp.ServerSession]

	mu          sync.Mutex
	server      *mcp.Server
	legacy      bool
	listenOnly  bool // set by New, never changed
	watched     map[*mcp.ServerSession]*outbox
	dropped     int64 // sessions ended because they did not take their notifications
	undelivered int64 // notifications the transport refused (no stream to carry them)
	expired     int64 // subscriptions ended because their token expired

	emu      sync.Mutex
	expiring map[*mcp.ServerSession]*expiring // sessions whose subscriptions expire

	tmu     sync.Mutex
	tickets map[ticket]struct{}
	// unconfirmed holds the subscriptions admitted by the hub that the SDK
	// has not recorded yet (it records a session's subscription only after
	// the SubscribeHandler returns, and ResourceUpdated reaches only the
	// sessions it has recorded): a notification for one of them is held
	// (true) and sent once the SDK has recorded it.
	unconfirmed map[ticket]bool

	listens *listenSet // the adapter's subscriptions/listen requests, set by New
}

// NotifyQueueLength is the least bound of the notifications waiting for
// one session. The bound is the larger of it and the hub's
// [live.Options].MaxPerSession: the queue holds one notification per URI,
// and one recheck may notify every subscription of the session at once.
const NotifyQueueLength = 64

// outbox is one session's queue of notifications, written by a goroutine
// of its own that runs only while the queue holds some: an idle session
// keeps no writer (nor its stack).
type outbox struct {
	mu      sync.Mutex
	pending []queued
	writing bool // a writer runs: ob.mu
	ended   bool // the session ended: ob.mu
	dropped bool // ob.mu
}

type queued struct {
	next mcp.MethodHandler
	req  mcp.Request
	uri  string
}

type ticket struct {
	s   *mcp.ServerSession
	uri string
}

// newSubscriptions returns the subscriptions of one server over res, whose
// changes come from sources, served only over subscriptions/listen when
// listenOnly is set (see [Options].ListenOnly). opts configures the
// bounds, coalescing and rate limits (nil: live's defaults).
func newSubscriptions(res *core.Resources, sources []core.ChangeSource, opts *live.Options, listenOnly bool) *Subscriptions {
	s := &Subscriptions{res: res, listenOnly: listenOnly, watched: map[*mcp.ServerSession]*outbox{}, expiring: map[*mcp.ServerSession]*expiring{}, tickets: map[ticket]struct{}{}, unconfirmed: map[ticket]bool{}}
	s.hub = live.New(res, s.notify, sources, opts)
	s.hub.OnRevoked(s.revoked)
	return s
}

// revoked answers every subscriptions/listen request of ss none of whose
// subscriptions remain, after one was dropped because its principal may
// no longer read the URI: the client learns that its subscriptions ended,
// on every transport, and the session goes on. A session's subscriptions
// of resources/subscribe stay as they are.
func (s *Subscriptions) revoked(ss *mcp.ServerSession, _ int) {
	s.listens.revoked(ss, func(uri string) bool { return s.hub.Subscribed(ss, uri) })
}

// ListenProtocolVersion is the first protocol revision whose clients
// subscribe through subscriptions/listen.
const ListenProtocolVersion = "2026-07-28"

// listens reports whether ss speaks a revision that subscribes through
// subscriptions/listen.
func listens(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= ListenProtocolVersion
}

// Hub returns the subscription hub, for its Stats and for hosts that
// report changes themselves (Hub().Changed).
func (s *Subscriptions) Hub() *live.Hub[*mcp.ServerSession] { return s.hub }

// install binds s to server; [Adapter.install] calls it.
func (s *Subscriptions) install(server *mcp.Server, a *adapter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.server != nil && s.server != server {
		panic("mcpsdk: one Subscriptions serves one mcp.Server")
	}
	s.server, s.legacy = server, a.legacyNotFound
	server.AddSendingMiddleware(s.filter)
	server.AddReceivingMiddleware(s.confirmSubscribe)
}

// confirmSubscribe is receiving middleware: once the SDK has answered a
// resources/subscribe, it has recorded the subscription, and a
// notification held for it can go.
func (s *Subscriptions) confirmSubscribe(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method == MethodSubscribe {
			ss, _ := req.GetSession().(*mcp.ServerSession)
			p, _ := req.GetParams().(*mcp.SubscribeParams)
			if ss != nil && p != nil {
				s.confirm(ss, p.URI)
			}
		}
		return res, err
	}
}

// confirm marks ss's subscriptions to uris as recorded by the SDK and sends
// what was held for them.
func (s *Subscriptions) confirm(ss *mcp.ServerSession, uris ...string) {
	var held []string
	s.tmu.Lock()
	for _, uri := range uris {
		t := ticket{ss, uri}
		if s.unconfirmed[t] {
			held = append(held, uri)
		}
		delete(s.unconfirmed, t)
	}
	s.tmu.Unlock()
	for _, uri := range held {
		s.notify(ss, uri)
	}
}

// subscribe is the SDK's SubscribeHandler.
func (s *Subscriptions) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	if req == nil || req.Params == nil || req.Session == nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: core.NewFailure(core.FailureInvalidRequest, nil).Error()}
	}
	s.mu.Lock()
	legacy := s.legacy
	s.mu.Unlock()
	if s.listenOnly && !listens(req.Session) {
		return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "resources/subscribe needs a session: use subscriptions/listen"}
	}
	// The principal is already in ctx: the adapter's middleware put it there for
	// resources/subscribe and subscriptions/listen alike (the SDK calls this
	// handler from inside either, with a request that may lack Extra).
	err := s.hub.Subscribe(ctx, req.Session, req.Params.URI)
	switch {
	case errors.Is(err, live.ErrSessionLimit), errors.Is(err, live.ErrPrincipalLimit), errors.Is(err, live.ErrHubLimit):
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: SubscriptionLimitMessage}
	case err != nil:
		return WireError(err, legacy)
	}
	t := ticket{req.Session, req.Params.URI}
	s.tmu.Lock()
	if _, ok := s.unconfirmed[t]; !ok {
		s.unconfirmed[t] = false
	}
	s.tmu.Unlock()
	s.expireAt(ctx, req.Session, req.Params.URI)
	s.watch(req.Session)
	return nil
}

// errHeldElsewhere keeps a subscription that another listen stream of the
// same session holds; no client sees it.
var errHeldElsewhere = errors.New("mcpsdk: held by another listen stream")

// unsubscribe is the SDK's UnsubscribeHandler.
func (s *Subscriptions) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	if req == nil || req.Params == nil || req.Session == nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: core.NewFailure(core.FailureInvalidRequest, nil).Error()}
	}
	if s.listens != nil && s.listens.heldElsewhere(ctx, req.Session, req.Params.URI) {
		// A listen request that ended, whose URI another listen stream of
		// the session still holds: an error keeps the SDK's registry entry
		// too (the SDK ignores it there).
		return errHeldElsewhere
	}
	s.hub.Unsubscribe(req.Session, req.Params.URI)
	s.forget(req.Session, req.Params.URI)
	s.tmu.Lock()
	delete(s.unconfirmed, ticket{req.Session, req.Params.URI})
	s.tmu.Unlock()
	return nil
}

// watch releases a session's subscriptions when it ends, and gives it its
// notification queue.
func (s *Subscriptions) watch(ss *mcp.ServerSession) {
	s.mu.Lock()
	_, seen := s.watched[ss]
	var ob *outbox
	if !seen {
		ob = &outbox{}
		s.watched[ss] = ob
	}
	s.mu.Unlock()
	if seen {
		return
	}
	go func() {
		_ = ss.Wait()
		ob.mu.Lock()
		ob.ended, ob.pending = true, nil
		ob.mu.Unlock()
		s.forgetSession(ss)
		s.hub.EndSession(ss)
		s.mu.Lock()
		delete(s.watched, ss)
		s.mu.Unlock()
		s.tmu.Lock()
		for t := range s.unconfirmed {
			if t.s == ss {
				delete(s.unconfirmed, t)
			}
		}
		s.tmu.Unlock()
	}()
}

// DroppedSessions counts the sessions ended because they did not take their
// notifications within the write deadline or let their queue overflow.
func (s *Subscriptions) DroppedSessions() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// UndeliveredNotifications counts the notifications that the transport
// refused without ending the session: on stateful streamable HTTP, those
// for a session that has no standalone GET stream open (opening one is
// optional for the client). Such a notification is dropped, as the go-sdk
// server drops its own when it keeps no event store; the session goes on.
func (s *Subscriptions) UndeliveredNotifications() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.undelivered
}

// drop ends a session that does not take its notifications, once, and
// logs why (no URI, no principal).
func (s *Subscriptions) drop(ss *mcp.ServerSession, ob *outbox, reason string) {
	ob.mu.Lock()
	again := ob.dropped
	ob.dropped, ob.pending = true, nil
	ob.mu.Unlock()
	if again {
		return
	}
	s.mu.Lock()
	s.dropped++
	s.mu.Unlock()
	s.hub.Options().Logger.Warn("mcpsdk: ending a session (or listen stream) that does not take its notifications", "reason", reason)
	go ss.Close() // Close waits for the connection: never on a writer's goroutine
}

// notify sends one notifications/resources/updated for uri to ss alone:
// the SDK's ResourceUpdated builds the notification for every session
// subscribed to uri (with a 2026-07-28 session's subscription id), and
// filter queues it for ss only. Nothing here waits for a client: hub calls
// for one session are serialized, so a ticket names one delivery.
func (s *Subscriptions) notify(ss *mcp.ServerSession, uri string) {
	s.mu.Lock()
	server := s.server
	s.mu.Unlock()
	if server == nil {
		return
	}
	t := ticket{ss, uri}
	s.tmu.Lock()
	if _, ok := s.unconfirmed[t]; ok {
		s.unconfirmed[t] = true // the SDK does not know the subscription yet: confirm sends it
		s.tmu.Unlock()
		return
	}
	s.tickets[t] = struct{}{}
	s.tmu.Unlock()
	_ = server.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
	s.tmu.Lock()
	delete(s.tickets, t)
	s.tmu.Unlock()
}

// enqueue puts a notification in its session's queue, replacing one for the
// same URI; a full queue means the client stopped reading: the session ends.
func (s *Subscriptions) enqueue(ss *mcp.ServerSession, q queued) {
	s.mu.Lock()
	ob := s.watched[ss]
	s.mu.Unlock()
	if ob == nil {
		return
	}
	ob.mu.Lock()
	if ob.dropped || ob.ended {
		ob.mu.Unlock()
		return
	}
	replaced := false
	for i := range ob.pending {
		if ob.pending[i].uri == q.uri {
			ob.pending[i], replaced = q, true
			break
		}
	}
	full := !replaced && len(ob.pending) >= max(NotifyQueueLength, s.hub.Options().MaxPerSession)
	if !replaced && !full {
		ob.pending = append(ob.pending, q)
	}
	start := !full && !ob.writing
	ob.writing = ob.writing || start
	ob.mu.Unlock()
	if full {
		s.drop(ss, ob, "notification queue full")
		return
	}
	if start {
		go s.write(ss, ob)
	}
}

// write delivers ss's queued notifications one at a time, each within the
// write deadline, until the queue is empty or the session ends. One runs
// per session at most (ob.writing).
func (s *Subscriptions) write(ss *mcp.ServerSession, ob *outbox) {
	timeout := s.hub.Options().WriteTimeout
	for {
		ob.mu.Lock()
		if len(ob.pending) == 0 || ob.ended || ob.dropped {
			ob.writing = false
			ob.pending = nil // an idle session keeps no queue's array
			ob.mu.Unlock()
			return
		}
		q := ob.pending[0]
		ob.pending = ob.pending[1:]
		ob.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		// A transport that ignores ctx (the SDK's HTTP streams write to
		// the connection directly) is stopped by ending the session.
		stuck := time.AfterFunc(timeout, func() { s.drop(ss, ob, "write deadline missed") })
		_, err := q.next(ctx, NotificationResourceUpdated, q.req)
		late := !stuck.Stop()
		missed := err != nil && ctx.Err() != nil // before cancel, which sets ctx.Err
		cancel()
		switch {
		case late:
			return
		case missed:
			s.drop(ss, ob, "write deadline missed")
			return
		case err != nil:
			// The transport refused it and the session goes on, as
			// the SDK's own notifications do: a stateful streamable
			// HTTP session without a standalone GET stream (optional
			// for the client) has nowhere to put it.
			s.mu.Lock()
			s.undelivered++
			s.mu.Unlock()
		}
	}
}

// filter is sending middleware: a resource-updated notification leaves only
// for the session and URI that notify is delivering now, through that
// session's queue.
func (s *Subscriptions) filter(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == notificationSubscriptionsAck {
			// The SDK acknowledges a listen once it has recorded every
			// subscription the listen asked for.
			res, err := next(ctx, method, req)
			ss, _ := req.GetSession().(*mcp.ServerSession)
			if p, _ := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ss != nil && p != nil {
				s.confirm(ss, p.Notifications.ResourceSubscriptions...)
			}
			return res, err
		}
		if method != NotificationResourceUpdated {
			return next(ctx, method, req)
		}
		ss, _ := req.GetSession().(*mcp.ServerSession)
		p, _ := req.GetParams().(*mcp.ResourceUpdatedNotificationParams)
		if ss == nil || p == nil {
			return nil, nil
		}
		s.tmu.Lock()
		_, ok := s.tickets[ticket{ss, p.URI}]
		delete(s.tickets, ticket{ss, p.URI})
		s.tmu.Unlock()
		if !ok {
			return nil, nil
		}
		s.enqueue(ss, queued{next: next, req: req, uri: p.URI})
		return nil, nil
	}
}

// completeResource answers completion/complete for a ref/resource: the
// values core.Resources.Complete offers the caller.
func (a *adapter) completeResource(ctx context.Context, p *mcp.CompleteParams) (mcp.Result, error) {
	var args map[string]string
	if p.Context != nil {
		args = p.Context.Arguments
	}
	c, err := a.r.Complete(ctx, p.Ref.URI, p.Argument.Name, p.Argument.Value, args)
	if err != nil {
		return nil, a.failure(err)
	}
	vals := c.Values
	if vals == nil {
		vals = []string{}
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: vals, Total: c.Total, HasMore: c.HasMore}}, nil
}

// declareLive adds what Subscriptions and Completions serve to an
// initialize or discover result: resources.subscribe (taken away where a
// [Options].ListenOnly server cannot honour it) and completions. A host's
// own capabilities are left alone when there are no Subscriptions.
func (a *adapter) declareLive(res mcp.Result) {
	if a.subs == nil && !a.complete {
		return
	}
	caps := resultCapabilities(res)
	if caps == nil || *caps == nil {
		return
	}
	c := **caps // the SDK may share it with the server's options
	if want := a.subs != nil && a.subs.honoured(res); a.subs != nil && c.Resources != nil && c.Resources.Subscribe != want {
		r := *c.Resources
		r.Subscribe = want
		c.Resources = &r
	}
	if a.complete && c.Completions == nil {
		c.Completions = &mcp.CompletionCapabilities{}
	}
	*caps = &c
}

// honoured reports whether s serves subscriptions to the client an
// initialize or discover result answers: an [Options].ListenOnly one
// serves only revisions that listen.
func (s *Subscriptions) honoured(res mcp.Result) bool {
	if r, ok := res.(*mcp.InitializeResult); ok && s.listenOnly {
		return r != nil && r.ProtocolVersion >= ListenProtocolVersion
	}
	return true
}
