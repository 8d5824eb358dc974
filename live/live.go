// Package live turns storage changes into resource-update notifications for
// subscribers, under the same access rules as a read.
//
// A [Hub] keeps the subscriptions of every session of one server. Each
// subscription is admitted by authorizing its URI exactly like a read would
// (see core.Resources.Authorize; a URI the caller may not read fails with
// the very error a read of it gets), and is bounded per session, per
// principal and per hub.
// Change sources (core.ChangeSource: the memory store, the Postgres
// listener, the S3 poller) report changed entities by change keys; the hub
// matches them to the keys of each subscription's authorized targets.
//
// Before each notification the hub re-authorizes the subscription under the
// current policy, as the subscriber's principal. A subscriber who may no
// longer read the URI gets nothing, and the subscription is dropped. A
// subscriber who still may is notified only when what a read would show
// has a new identity (another version, ETag, or set of visible items; see
// the fingerprint rule on [Hub]) or when a source lost track of changes (a
// reconnect), so a change to something hidden from the subscriber, or to
// another principal's grant, reaches it as nothing at all.
//
// Changes are coalesced per subscription and rate-limited per session:
// however many changes arrive, one subscription is checked (and so
// notified) at most once per [Options.MinInterval], and one session is
// rechecked at most [Options.SessionBurst] times at once and then once per
// [Options.SessionInterval]. One recheck covers every subscription of the
// session that is due, in one Authorizer call ([BatchAuthorizer]), so a
// change to 100 rows that one session subscribes to costs that session one
// recheck, not 100. With the defaults, a storm of writes to one
// resource lasting d produces at most 1 + ceil(d/500ms) notifications per
// subscriber (the first at once, then one per interval that saw writes,
// the last of them trailing the storm): 3 for a storm of one second.
//
// The package depends on the standard library and core only; the go-sdk
// adapter (package mcpsdk) delivers its notifications.
package live

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"go.phpboyscout.uk/mcp/resources/core"
)

// DefaultMinInterval is [Options].MinInterval when it is zero.
const DefaultMinInterval = 500 * time.Millisecond

// The other defaults of [Options] (each field's doc gives its value).
const (
	defaultMaxPerSession   = 100
	defaultMaxPerPrincipal = 1000
	defaultMaxTotal        = 10000
	defaultSessionBurst    = 10
	defaultSessionInterval = 100 * time.Millisecond
	defaultWorkers         = 4
	defaultCheckTimeout    = 10 * time.Second
	defaultWriteTimeout    = 10 * time.Second
)

// Errors of Subscribe. They reveal nothing about the URI: the bounds are
// checked only after the URI was authorized like a read.
var (
	// ErrSessionLimit means the session holds Options.MaxPerSession
	// subscriptions already.
	ErrSessionLimit = errors.New("live: too many subscriptions in this session")
	// ErrPrincipalLimit means the subscriber's principal holds
	// Options.MaxPerPrincipal subscriptions already, over all its
	// sessions.
	ErrPrincipalLimit = errors.New("live: too many subscriptions for this principal")
	// ErrHubLimit means the hub holds Options.MaxTotal subscriptions
	// already.
	ErrHubLimit = errors.New("live: too many subscriptions on this server")
	// errClosed means the hub's Run has ended (no caller tells it apart).
	errClosed = errors.New("live: the hub is closed")
)

// Options configure a Hub. Zero fields select the defaults; negative ones
// are treated as zero.
type Options struct {
	// MaxPerSession bounds the subscriptions of one session. Default 100.
	MaxPerSession int
	// MaxPerPrincipal bounds the subscriptions of one principal over all
	// its sessions, so that one principal cannot take the whole of
	// MaxTotal. Requests without a principal count as one principal, "".
	// Default 1000.
	MaxPerPrincipal int
	// MaxTotal bounds the subscriptions of the hub (one server). Default
	// 10000.
	MaxTotal int
	// MinInterval is the least time between two checks (and so two
	// notifications) of one subscription; changes in between are
	// coalesced into one. Default 500 ms.
	MinInterval time.Duration
	// SessionBurst and SessionInterval rate-limit the rechecks of one
	// session with a token bucket: SessionBurst at once, then one per
	// SessionInterval. One recheck covers all the session's due
	// subscriptions (at most MaxPerSession). Defaults 10 and 100 ms.
	SessionBurst    int
	SessionInterval time.Duration
	// Workers bounds the rechecks that run at once. Default 4.
	Workers int
	// CheckTimeout bounds one recheck (one Authorizer call). Default 10 s.
	CheckTimeout time.Duration
	// WriteTimeout bounds the delivery of one notification to one session,
	// for the host that delivers them (the hub itself never writes): the
	// go-sdk adapter, package mcpsdk, ends a session whose delivery misses
	// it, so that a client that stops reading delays only itself.
	// Default 10 s.
	WriteTimeout time.Duration
	// Logger receives change-source failures and restarts. Nil discards
	// them.
	Logger *slog.Logger
}

// Authorizer authorizes a URI like a read without reading it;
// *core.Resources is one.
type Authorizer interface {
	Authorize(ctx context.Context, uri string) (core.Authorization, error)
}

// BatchAuthorizer is an [Authorizer] that also authorizes several URIs at
// once, as Authorize would one by one; *core.Resources is one
// ([core.Resources.AuthorizeAll]). The hub rechecks all the subscriptions
// of one session that a change concerns with one AuthorizeAll call.
type BatchAuthorizer interface {
	Authorizer
	AuthorizeAll(ctx context.Context, uris []string) ([]core.Authorization, []error)
}

// Stats counts what a hub did, for tests and metrics.
type Stats struct {
	// Sessions and Subscriptions held now.
	Sessions, Subscriptions int
	// Pending counts the subscriptions whose check is due, waiting out an
	// interval, or running (its notification, if any, included). Zero
	// means that every change reported so far has been fully handled.
	Pending int
	// Changes counts the changes reported (Changed calls, a source's
	// reconnect included); Checks the re-authorizations; Notified the
	// notifications handed to the notify function; Dropped the
	// subscriptions dropped because their subscriber may no longer read the
	// URI. A change counted in Changes while Pending is zero has had all
	// its notifications counted in Notified: tests and operators read an
	// order from these, never from time.
	Changes, Checks, Notified, Dropped int64
	// Batches counts the rechecks: one per session and round, each one
	// Authorizer call (AuthorizeAll for several subscriptions) that covers
	// every due subscription of the session.
	Batches int64
}

// Hub keeps the subscriptions of the sessions of one server, identified by
// values of S (the go-sdk adapter uses *mcp.ServerSession), and calls notify
// for each notification it decides on. It is safe for concurrent use.
type Hub[S comparable] struct {
	auth    Authorizer
	notify  func(S, string)
	sources []core.ChangeSource
	o       Options

	mu       sync.Mutex
	sessions map[S]*session[S]
	index    map[string]map[*sub[S]]struct{}
	dirty    map[*sub[S]]struct{}
	total    int
	perPrinc map[string]int // subscriptions by principal
	inflight int            // checks running, bounded by Options.Workers
	busy     int            // checks running or delivering their notification
	closed   bool
	tracked  bool   // tracker key sets need recomputing
	seq      uint64 // counts Changed calls
	stats    Stats
	wake     chan struct{}
	revoked  func(S, int)
}

type session[S comparable] struct {
	id      S
	subs    map[string]*sub[S]
	tokens  float64
	refill  time.Time
	deliver sync.Mutex // held while notifying this session
}

type sub[S comparable] struct {
	sess      *session[S]
	uri       string
	caller    core.Caller // core.CallerFrom at Subscribe, for every re-authorization
	keys      []string
	fp        [32]byte
	force     bool // notify after the next successful check, whatever the fingerprint
	checking  bool
	lastCheck time.Time
	removed   bool
}

// New returns a hub that authorizes with auth, notifies with notify and
// matches the changes of sources. notify(session, uri) must send one
// notifications/resources/updated for uri to session; it is called for one
// session at a time per session, never while the hub holds its lock. Call
// Run to start the sources and the dispatcher.
func New[S comparable](auth Authorizer, notify func(S, string), sources []core.ChangeSource, opts *Options) *Hub[S] {
	if auth == nil || notify == nil {
		panic("live: New needs an Authorizer and a notify function")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxPerSession, defaultMaxPerSession)
	def(&o.MaxTotal, defaultMaxTotal)
	def(&o.MaxPerPrincipal, defaultMaxPerPrincipal)
	def(&o.SessionBurst, defaultSessionBurst)
	def(&o.Workers, defaultWorkers)
	defd(&o.MinInterval, DefaultMinInterval)
	defd(&o.SessionInterval, defaultSessionInterval)
	defd(&o.CheckTimeout, defaultCheckTimeout)
	defd(&o.WriteTimeout, defaultWriteTimeout)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Hub[S]{
		auth: auth, notify: notify, sources: slices.Clone(sources), o: o,
		sessions: map[S]*session[S]{}, index: map[string]map[*sub[S]]struct{}{},
		dirty: map[*sub[S]]struct{}{}, wake: make(chan struct{}, 1), perPrinc: map[string]int{},
	}
}

// errNothingReadable is the private cause of a subscription refused because
// every visible item of its plan is read-denied.
var errNothingReadable = errors.New("live: every visible item of the plan is read-denied")

// authorize authorizes uri like a read would be: Authorize's error as it
// is, and also core.FailureUnavailable when the plan has visible items and
// the caller may read none of them, because a read made now would fail
// exactly so (a read whose visible items are all unavailable fails like a
// missing resource). A subscription must not tell apart what a read does
// not.
func authorize(ctx context.Context, auth Authorizer, uri string) (core.Authorization, error) {
	return settled(auth.Authorize(ctx, uri))
}

// settled is authorize's rule applied to one answer of an Authorizer.
func settled(a core.Authorization, err error) (core.Authorization, error) {
	if err != nil {
		return a, err
	}
	for i := range a.Len() {
		if a.Readable(i) {
			return a, nil
		}
	}
	if a.Len() > 0 {
		return core.Authorization{}, core.NewFailure(core.FailureUnavailable, errNothingReadable)
	}
	return a, nil
}

// OnRevoked sets f to be called after subscriptions of session s were
// dropped because their subscriber may no longer read their URIs (once per
// recheck that dropped any), with the number of subscriptions s still
// holds; never while the hub holds its lock. A host whose subscriptions live in a stream of their own (a
// subscriptions/listen request) ends the stream when none remain. Call it
// before Run.
func (h *Hub[S]) OnRevoked(f func(s S, remaining int)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.revoked = f
}

// Options returns the effective options, defaults filled in.
func (h *Hub[S]) Options() Options { return h.o }

// Subscribe admits a subscription of session to uri for the caller that
// ctx identifies (its [core.Caller], principal, claims and scopes, is kept
// for every later re-authorization). It authorizes uri exactly like a read: any
// error of Authorize is returned as it is, so a URI the caller may not
// read fails like a read of it. Then the bounds apply (ErrSessionLimit,
// ErrPrincipalLimit, ErrHubLimit). Subscribing again to the same URI in the same session
// replaces the earlier subscription and counts once.
func (h *Hub[S]) Subscribe(ctx context.Context, s S, uri string) error {
	caller, _ := core.CallerFrom(ctx)
	principal := caller.Principal
	h.mu.Lock()
	seq := h.seq
	h.mu.Unlock()
	a, err := authorize(ctx, h.auth, uri)
	if err != nil {
		return err
	}
	keys, fp := h.keysOf(a), fingerprint(a)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errClosed
	}
	ss := h.sessions[s]
	if ss != nil {
		if old := ss.subs[uri]; old != nil {
			h.unindex(old)
			h.perPrinc[old.caller.Principal]--
			if h.perPrinc[old.caller.Principal] <= 0 {
				delete(h.perPrinc, old.caller.Principal)
			}
			h.perPrinc[principal]++
			old.caller, old.keys, old.fp = caller, keys, fp
			h.reindex(old)
			if h.seq != seq {
				h.dirty[old] = struct{}{}
			}
			return nil
		}
		if len(ss.subs) >= h.o.MaxPerSession {
			return ErrSessionLimit
		}
	}
	if h.perPrinc[principal] >= h.o.MaxPerPrincipal {
		return ErrPrincipalLimit
	}
	if h.total >= h.o.MaxTotal {
		return ErrHubLimit
	}
	if ss == nil {
		ss = &session[S]{id: s, subs: map[string]*sub[S]{}, tokens: float64(h.o.SessionBurst), refill: time.Now()}
		h.sessions[s] = ss
	}
	x := &sub[S]{sess: ss, uri: uri, caller: caller, keys: keys, fp: fp}
	ss.subs[uri] = x
	h.total++
	h.perPrinc[principal]++
	h.reindex(x)
	if h.seq != seq {
		// A change arrived while Authorize ran, before x was indexed: check
		// x once, so that it is not missed.
		h.dirty[x] = struct{}{}
	}
	h.poke() // tracking sources learn the new keys
	return nil
}

// Unsubscribe removes session's subscription to uri, if any. Once it has
// returned, notify is not called for that subscription again.
func (h *Hub[S]) Unsubscribe(s S, uri string) {
	h.mu.Lock()
	ss := h.sessions[s]
	if ss == nil || ss.subs[uri] == nil {
		h.mu.Unlock()
		return
	}
	h.remove(ss.subs[uri])
	h.mu.Unlock()
	h.poke()
	ss.deliver.Lock() // wait out a notification already on its way
	ss.deliver.Unlock()
}

// EndSession removes every subscription of session, when it ends. Once it
// has returned, notify is not called for the session again.
func (h *Hub[S]) EndSession(s S) {
	h.mu.Lock()
	ss := h.sessions[s]
	if ss == nil {
		h.mu.Unlock()
		return
	}
	for _, x := range ss.subs {
		h.remove(x)
	}
	h.mu.Unlock()
	h.poke()
	ss.deliver.Lock()
	ss.deliver.Unlock()
}

// Subscribed reports whether session holds a subscription to uri.
func (h *Hub[S]) Subscribed(s S, uri string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	ss := h.sessions[s]
	return ss != nil && ss.subs[uri] != nil
}

// Stats returns the hub's counters.
func (h *Hub[S]) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.stats
	st.Sessions, st.Subscriptions = len(h.sessions), h.total
	st.Pending = len(h.dirty) + h.busy
	st.Changes = int64(h.seq)
	return st
}

// Changed queues the subscriptions that c concerns for a check. Sources
// call it through Run; hosts may call it for changes they learn of
// themselves. It never blocks on I/O.
func (h *Hub[S]) Changed(c core.Change) {
	h.mu.Lock()
	h.seq++
	if c.All {
		for _, ss := range h.sessions {
			for _, x := range ss.subs {
				x.force = true
				h.dirty[x] = struct{}{}
			}
		}
	} else {
		for _, k := range c.Keys {
			for x := range h.index[k] {
				h.dirty[x] = struct{}{}
			}
		}
	}
	h.mu.Unlock()
	h.poke()
}

func (h *Hub[S]) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// remove drops x; h.mu is held.
func (h *Hub[S]) remove(x *sub[S]) {
	if x.removed {
		return
	}
	x.removed = true
	h.unindex(x)
	delete(h.dirty, x)
	delete(x.sess.subs, x.uri)
	h.total--
	if h.perPrinc[x.caller.Principal]--; h.perPrinc[x.caller.Principal] <= 0 {
		delete(h.perPrinc, x.caller.Principal)
	}
	if len(x.sess.subs) == 0 && h.sessions[x.sess.id] == x.sess {
		delete(h.sessions, x.sess.id)
	}
}

func (h *Hub[S]) reindex(x *sub[S]) {
	for _, k := range x.keys {
		m := h.index[k]
		if m == nil {
			m = map[*sub[S]]struct{}{}
			h.index[k] = m
		}
		m[x] = struct{}{}
	}
	h.tracked = true
}

func (h *Hub[S]) unindex(x *sub[S]) {
	for _, k := range x.keys {
		if m := h.index[k]; m != nil {
			delete(m, x)
			if len(m) == 0 {
				delete(h.index, k)
			}
		}
	}
	h.tracked = true
}

// keysOf returns the change keys of an authorization's requested target and
// visible items, from every source.
func (h *Hub[S]) keysOf(a core.Authorization) []string {
	var keys []string
	for _, src := range h.sources {
		keys = append(keys, src.ChangeKeys(a.Requested())...)
		for i := range a.Len() {
			keys = append(keys, src.ChangeKeys(a.Item(i))...)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// fingerprint hashes the identity of what a read would show: the requested
// target and, in order, every visible item with whether it is readable and,
// when it is, its private authorization data (which pins versions, ETags).
func fingerprint(a core.Authorization) [32]byte {
	h := sha256.New()
	put := func(s []byte) {
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(s))))
		h.Write(s)
	}
	t := a.Requested()
	put([]byte(t.URI()))
	put([]byte(t.Representation()))
	put(t.AuthorizationData())
	for i := range a.Len() {
		t := a.Item(i)
		put([]byte(t.URI()))
		put([]byte(t.Representation()))
		if a.Readable(i) {
			put([]byte{1})
			put(t.AuthorizationData())
		} else {
			put([]byte{0})
		}
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// Run starts every change source and dispatches checks and notifications
// until ctx ends; then it waits for the sources and checks to stop and
// returns ctx's error. A source whose Watch returns early is restarted
// after a backoff, and every subscription is then treated as possibly
// changed. Run must be called once.
func (h *Hub[S]) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, src := range h.sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.watch(ctx, src)
		}()
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := h.dispatch(ctx, &wg)
		h.track()
		if next > 0 {
			timer.Reset(next)
		}
		select {
		case <-ctx.Done():
			h.mu.Lock()
			h.closed = true
			h.mu.Unlock()
			wg.Wait()
			return ctx.Err()
		case <-h.wake:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// watch runs one source, restarting it with backoff when it stops early.
func (h *Hub[S]) watch(ctx context.Context, src core.ChangeSource) {
	backoff := 100 * time.Millisecond
	for {
		err := src.Watch(ctx, h.Changed)
		if ctx.Err() != nil {
			return
		}
		h.o.Logger.Warn("live: change source stopped; restarting", "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 30*time.Second)
		h.Changed(core.Change{All: true})
	}
}

// track tells tracking sources the keys subscriptions depend on, when they
// changed.
func (h *Hub[S]) track() {
	h.mu.Lock()
	if !h.tracked {
		h.mu.Unlock()
		return
	}
	h.tracked = false
	keys := make([]string, 0, len(h.index))
	for k := range h.index {
		keys = append(keys, k)
	}
	h.mu.Unlock()
	slices.Sort(keys)
	for _, src := range h.sources {
		if tr, ok := src.(Tracker); ok {
			tr.TrackKeys(keys)
		}
	}
}

// dispatch starts the rechecks that are due and returns how long until the
// next one may be (0: nothing is waiting). A session's due subscriptions
// (those of one principal, claims and scopes: one Authorizer call asks as
// one caller) are rechecked together, for one token of its bucket.
func (h *Hub[S]) dispatch(ctx context.Context, wg *sync.WaitGroup) time.Duration {
	now := time.Now()
	var next time.Duration
	later := func(d time.Duration) {
		if d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return 0
	}
	due := map[*session[S]][]*sub[S]{}
	var order []*session[S]
	for x := range h.dirty {
		if x.checking {
			continue // re-examined when that check ends
		}
		if wait := x.lastCheck.Add(h.o.MinInterval).Sub(now); !x.lastCheck.IsZero() && wait > 0 {
			later(wait)
			continue
		}
		if due[x.sess] == nil {
			order = append(order, x.sess)
		}
		due[x.sess] = append(due[x.sess], x)
	}
	for _, ss := range order {
		if h.inflight >= h.o.Workers {
			break // a finishing recheck pokes the loop
		}
		ss.tokens = min(float64(h.o.SessionBurst), ss.tokens+float64(now.Sub(ss.refill))/float64(h.o.SessionInterval))
		ss.refill = now
		if ss.tokens < 1 {
			later(time.Duration((1 - ss.tokens) * float64(h.o.SessionInterval)))
			continue
		}
		ss.tokens--
		subs := due[ss]
		batch := subs[:0:0]
		for _, x := range subs {
			if sameCaller(x, subs[0]) {
				batch = append(batch, x)
			} else {
				h.poke() // another caller's subscriptions: its own recheck
			}
		}
		slices.SortFunc(batch, func(a, b *sub[S]) int { return strings.Compare(a.uri, b.uri) })
		for _, x := range batch {
			delete(h.dirty, x)
			x.checking, x.lastCheck = true, now
		}
		h.inflight++
		h.busy += len(batch)
		h.stats.Checks += int64(len(batch))
		h.stats.Batches++
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.check(ctx, batch)
		}()
	}
	return next
}

// sameCaller reports whether a and b are rechecked as the same caller.
func sameCaller[S comparable](a, b *sub[S]) bool {
	return a.caller.Principal == b.caller.Principal && string(a.caller.Claims) == string(b.caller.Claims) && slices.Equal(a.caller.Scopes, b.caller.Scopes)
}

// recheck authorizes the URIs of batch, subscriptions of one caller, in
// one Authorizer call: AuthorizeAll for several when auth is a
// [BatchAuthorizer].
func (h *Hub[S]) recheck(ctx context.Context, batch []*sub[S]) ([]core.Authorization, []error) {
	h.mu.Lock()
	caller := batch[0].caller
	uris := make([]string, len(batch))
	for i, x := range batch {
		uris[i] = x.uri
	}
	h.mu.Unlock()
	cctx, cancel := context.WithTimeout(core.WithCaller(ctx, caller), h.o.CheckTimeout)
	defer cancel()
	as, errs := make([]core.Authorization, len(uris)), make([]error, len(uris))
	if ba, ok := h.auth.(BatchAuthorizer); ok && len(uris) > 1 {
		got, gerrs := ba.AuthorizeAll(cctx, uris)
		for i := range uris {
			if i < len(got) && i < len(gerrs) {
				as[i], errs[i] = settled(got[i], gerrs[i])
			} else {
				errs[i] = errShortBatch
			}
		}
		return as, errs
	}
	for i, uri := range uris {
		as[i], errs[i] = authorize(cctx, h.auth, uri)
	}
	return as, errs
}

// errShortBatch is an operational failure: an AuthorizeAll that answered
// fewer URIs than it was asked.
var errShortBatch = errors.New("live: AuthorizeAll answered fewer URIs than it was asked")

// check re-authorizes the subscriptions of batch (one session's, one
// caller's) as their subscriber and notifies each whose read would show a
// new identity.
func (h *Hub[S]) check(ctx context.Context, batch []*sub[S]) {
	as, errs := h.recheck(ctx, batch)
	ss := batch[0].sess
	var notify []*sub[S]
	revoked := 0
	h.mu.Lock()
	h.inflight--
	for i, x := range batch {
		x.checking = false
		a, err := as[i], errs[i]
		switch {
		case x.removed:
		case err == nil:
			fp := fingerprint(a)
			if x.force || fp != x.fp {
				notify = append(notify, x)
			}
			x.force = false
			h.unindex(x)
			x.keys, x.fp = h.keysOf(a), fp
			h.reindex(x)
		case core.KindOf(err) == core.FailureUnavailable:
			h.remove(x) // the subscriber may no longer read it: nothing, and gone
			h.stats.Dropped++
			revoked++
		default:
			// An operational failure (storage down, timeout): no
			// notification; the next change, or the reconnect that follows
			// an outage, checks again.
		}
	}
	onRevoked, remaining := h.revoked, len(ss.subs)
	h.busy -= len(batch) - len(notify)
	h.mu.Unlock()
	if revoked > 0 && onRevoked != nil {
		onRevoked(ss.id, remaining)
	}
	for _, x := range notify {
		ss.deliver.Lock()
		h.mu.Lock()
		still := !x.removed
		if still {
			h.stats.Notified++
		}
		h.mu.Unlock()
		if still {
			h.notify(ss.id, x.uri)
		}
		ss.deliver.Unlock()
		h.mu.Lock()
		h.busy--
		h.mu.Unlock()
	}
	h.poke()
}

// Tracker is an optional capability of a [core.ChangeSource] that must be
// told what to watch, such as a poller: the hub calls TrackKeys with the
// full set of change keys that current subscriptions depend on (from every
// source: ignore keys you did not make), whenever that set changes. The
// slice is the hub's; copy what you keep.
type Tracker interface {
	core.ChangeSource
	TrackKeys(keys []string)
}
