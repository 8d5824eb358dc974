package mcpsdk

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TokenExpiredCode and TokenExpiredMessage are the JSON-RPC error that
// answers a subscriptions/listen request when the access token it was made
// with expires ([auth.TokenInfo].Expiration): the stream ends there, its
// subscriptions with it, and the client listens again with a fresh token.
// The code is in the range JSON-RPC leaves to servers and is not one the
// SDKs give a meaning of their own (-32000 and -32001 are the TypeScript
// SDK's "connection closed" and "request timeout"); on protocol 2026-07-28
// it travels on the stream, whose HTTP status was sent long before.
const (
	TokenExpiredCode    = -32003
	TokenExpiredMessage = "the access token expired: listen again with a fresh token"
)

// expiryKey carries the expiry of the token of a subscribing request.
type expiryKey struct{}

// withTokenExpiry returns ctx carrying the Expiration of req's token, when
// it has one (a tokens file's tokens and stdio have none).
func withTokenExpiry(ctx context.Context, req mcp.Request) context.Context {
	if ti := tokenInfo(req); ti != nil && !ti.Expiration.IsZero() {
		return context.WithValue(ctx, expiryKey{}, ti.Expiration)
	}
	return ctx
}

// tokenExpiry returns the expiry withTokenExpiry put in ctx, or the zero
// time.
func tokenExpiry(ctx context.Context) time.Time {
	t, _ := ctx.Value(expiryKey{}).(time.Time)
	return t
}

// expiring holds the expiry of each subscription of one session made with
// resources/subscribe by a token that expires, and the one timer that
// ends them: it is set for the earliest.
type expiring struct {
	at    map[string]time.Time // by URI
	timer *time.Timer
	next  time.Time // when timer fires; zero when it is stopped
}

// expireAt records that ss's subscription to uri, just made, ends at exp
// (the zero time: never), and arms ss's timer for the earliest expiry.
// A subscription made by a subscriptions/listen request is left to the
// listen, which ends with its token.
func (s *Subscriptions) expireAt(ctx context.Context, ss *mcp.ServerSession, uri string) {
	if _, inListen := ctx.Value(listenKey{}).(*listen); inListen {
		return
	}
	exp := tokenExpiry(ctx)
	s.emu.Lock()
	defer s.emu.Unlock()
	e := s.expiring[ss]
	if exp.IsZero() {
		if e != nil {
			delete(e.at, uri) // made again by a token that does not expire
		}
		return
	}
	if e == nil {
		e = &expiring{at: map[string]time.Time{}}
		s.expiring[ss] = e
	}
	e.at[uri] = exp
	s.armLocked(ss, e)
}

// forget drops the expiry of ss's subscription to uri (unsubscribed).
func (s *Subscriptions) forget(ss *mcp.ServerSession, uri string) {
	s.emu.Lock()
	defer s.emu.Unlock()
	if e := s.expiring[ss]; e != nil {
		delete(e.at, uri)
	}
}

// forgetSession stops ss's timer once the session has ended.
func (s *Subscriptions) forgetSession(ss *mcp.ServerSession) {
	s.emu.Lock()
	defer s.emu.Unlock()
	if e := s.expiring[ss]; e != nil {
		if e.timer != nil {
			e.timer.Stop()
		}
		delete(s.expiring, ss)
	}
}

// armLocked sets e's timer for its earliest expiry; s.emu is held.
func (s *Subscriptions) armLocked(ss *mcp.ServerSession, e *expiring) {
	var first time.Time
	for _, t := range e.at {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	if first.IsZero() || first.Equal(e.next) {
		return
	}
	if e.timer != nil {
		e.timer.Stop()
	}
	e.next = first
	e.timer = time.AfterFunc(time.Until(first), func() { s.expire(ss) })
}

// expire ends ss's subscriptions whose token has expired: their
// principal's claims are no longer vouched for, so they notify no more.
// The session goes on; its next request needs a fresh token, with which
// the client subscribes again.
func (s *Subscriptions) expire(ss *mcp.ServerSession) {
	now := time.Now()
	var ended []string
	s.emu.Lock()
	e := s.expiring[ss]
	if e == nil {
		s.emu.Unlock()
		return
	}
	for uri, t := range e.at {
		if !t.After(now) {
			ended = append(ended, uri)
			delete(e.at, uri)
		}
	}
	e.next = time.Time{}
	s.armLocked(ss, e)
	// Under s.emu, so that a subscription made again meanwhile keeps its
	// new expiry (the hub and tmu locks never wait for emu).
	for _, uri := range ended {
		s.hub.Unsubscribe(ss, uri)
		s.tmu.Lock()
		delete(s.unconfirmed, ticket{ss, uri})
		s.tmu.Unlock()
	}
	s.emu.Unlock()
	if len(ended) > 0 {
		s.mu.Lock()
		s.expired += int64(len(ended))
		s.mu.Unlock()
		s.hub.Options().Logger.Info("mcpsdk: resource subscriptions ended: their access token expired", "subscriptions", len(ended))
	}
}

// ExpiredSubscriptions counts the resources/subscribe subscriptions ended
// because the token that made them expired.
func (s *Subscriptions) ExpiredSubscriptions() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.expired
}
