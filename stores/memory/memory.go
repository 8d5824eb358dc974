// Package memory is a small, concurrent, in-memory store of versioned items
// with per-principal grants, served as MCP resources through package core.
//
// It keeps the guarantees every store of this module keeps (package
// storetest proves them): a plan pins each item's version, and a read
// refuses an item that changed since ([ErrChanged]) or that the principal
// may no longer see (core.FailureUnavailable); a read is bounded by its item's Limit
// before any byte is copied. Every change, grant and revocation takes effect
// on the very next read.
//
// Hosts use it in their own tests, and the reference server runs its
// embedded demo on it:
//
//	st := memory.New(nil)
//	st.Put("readme", memory.Item{MIMEType: "text/markdown", Text: true, Body: []byte("# Hello")})
//	st.Grant("readme", "alice", memory.Access{Read: true})
//	b := st.Binding(core.ResourceDefinition{URITemplate: "mem://docs/{key}", Name: "doc"}, memory.KeyFromVar("key"))
//	res, err := core.NewResources([]core.ResourceBinding{b}, st.Policy())
//	...
//	result, err := res.Read(core.WithCaller(ctx, core.Caller{Principal: "alice"}), "mem://docs/readme")
package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"go.phpboyscout.uk/mcp/resources/core"

	"go.phpboyscout.uk/mcp/resources/internal/mediatype"
)

// ErrChanged is the cause of a read whose item has a newer version than the
// plan pinned (or was replaced under the same key). It is not Unavailable,
// so the gateway reports the item as read_failed, which is retryable: a
// fresh read plans the new version.
var ErrChanged = errors.New("memory: item changed since it was planned")

// ErrNotPlanned is the cause of a read whose target this store did not plan.
var ErrNotPlanned = errors.New("memory: target was not planned by this store")

// errNotVisible is the one private cause of every denial, so that a missing
// item and one the principal may not see fail alike.
var errNotVisible = errors.New("memory: no such item for this principal")

// Item is a stored item's content.
type Item struct {
	// MIMEType is the item's media type, returned with every read.
	MIMEType string
	// Text makes reads return a text payload (Body must then be UTF-8);
	// otherwise they return a blob.
	Text bool
	// Body is the content; it is copied. Empty is an explicit empty item.
	Body []byte
}

// Access is what a grant lets a principal do with one item. A principal
// without a grant does not see the item at all.
type Access struct {
	// Read lets the principal read the body. A grant without Read leaves the
	// item visible but read-denied: the gateway reports it as unavailable.
	Read bool
	// DiscloseURI lets an issue about the item name its URI to the
	// principal.
	DiscloseURI bool
}

// Options configure a Store. The zero value is usable.
type Options struct {
	// Caller returns the caller of a request. Nil means [core.CallerFrom].
	Caller func(context.Context) (core.Caller, error)
}

// Store is a concurrent in-memory store. The zero value is not usable;
// build one with New.
type Store struct {
	caller func(context.Context) (core.Caller, error)

	mu      sync.RWMutex
	items   map[string]*entry
	version uint64 // last version handed out, across all keys

	bodyReads atomic.Int64

	watchers watchers // change listeners (live.go)
}

// entry is one stored item. Its content fields never change after Put; a
// new version is a new entry. grants is guarded by Store.mu.
type entry struct {
	version  uint64
	mimeType string
	text     bool
	body     []byte
	grants   map[string]Access
}

// New returns an empty Store.
func New(opts *Options) *Store {
	s := &Store{items: map[string]*entry{}, caller: core.CallerFrom}
	if opts != nil && opts.Caller != nil {
		s.caller = opts.Caller
	}
	return s
}

// principal returns the principal of the request's caller.
func (s *Store) principal(ctx context.Context) (string, error) {
	c, err := s.caller(ctx)
	return c.Principal, err
}

// Put stores it under key as a new version and returns that version.
// Versions increase across the whole store, so a key that is deleted and
// put again never repeats an earlier version. Grants on an existing key
// are kept. Put fails for text that is not UTF-8 or an invalid MIME type.
func (s *Store) Put(key string, it Item) (uint64, error) {
	switch {
	case it.Text && !utf8.Valid(it.Body):
		return 0, fmt.Errorf("memory: item %q: text body is not valid UTF-8", key)
	case !mediatype.Valid(it.MIMEType):
		return 0, fmt.Errorf("memory: item %q: invalid MIME type", key)
	}
	body := append([]byte{}, it.Body...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version++
	e := &entry{version: s.version, mimeType: it.MIMEType, text: it.Text, body: body, grants: map[string]Access{}}
	if old, ok := s.items[key]; ok {
		e.grants = old.grants
	}
	s.items[key] = e
	s.watchers.changed(key) // under s.mu: listeners only queue work
	return e.version, nil
}

// Delete removes the item under key with its grants, and reports whether it
// existed.
func (s *Store) Delete(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.items[key]
	delete(s.items, key)
	if ok {
		defer s.watchers.changed(key)
	}
	return ok
}

// Grant sets principal's access to the item under key, replacing an earlier
// grant. It reports whether the item exists.
func (s *Store) Grant(key, principal string, a Access) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.items[key]
	if ok {
		e.grants[principal] = a
		defer s.watchers.changed(key)
	}
	return ok
}

// Revoke removes principal's grant on the item under key: the item is then
// neither visible nor readable to principal. It reports whether a grant
// existed.
func (s *Store) Revoke(key, principal string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.items[key]
	if !ok {
		return false
	}
	_, had := e.grants[principal]
	delete(e.grants, principal)
	if had {
		defer s.watchers.changed(key)
	}
	return had
}

// BodyReads returns how many bodies the store has handed out, for tests
// that prove planning reads none.
func (s *Store) BodyReads() int64 { return s.bodyReads.Load() }

// Ref names one stored item as a plan item: the canonical wire URI the
// item gets in a result, and its key in the store.
type Ref struct {
	URI string
	Key string
}

// KeyFromVar returns a plan function for a template binding whose variable
// name holds the key: the request URI is the item's URI.
func KeyFromVar(name string) func(core.ResourceMatch) ([]Ref, error) {
	return func(m core.ResourceMatch) ([]Ref, error) {
		key, ok := m.Var(name)
		if !ok {
			return nil, fmt.Errorf("memory: template has no variable %q", name)
		}
		return []Ref{{URI: m.URI(), Key: key}}, nil
	}
}

// Binding returns a binding of def whose resolver plans the items refs
// names for a match (see Resolver) and whose reader is s.Read.
func (s *Store) Binding(def core.ResourceDefinition, refs func(core.ResourceMatch) ([]Ref, error)) core.ResourceBinding {
	return core.ResourceBinding{Definition: def, Resolver: s.Resolver(refs), Reader: core.ItemReader(s.Read)}
}

// Resolver returns a core.Resolver that plans the items refs names for a
// match, in order, reading identity metadata only (never a body) under the
// caller's access. When refs names exactly one item at the request URI, that
// item is the requested target and a caller who may not see it gets
// core.FailureUnavailable, as for a missing item. Otherwise the requested target is
// the bundle (representation "bundle", no authorization data) and items the
// caller may not see, or that do not exist, are left out of the plan.
func (s *Store) Resolver(refs func(core.ResourceMatch) ([]Ref, error)) core.Resolver {
	return core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
		rs, err := refs(m)
		if err != nil {
			return core.ResourceReadPlan{}, err
		}
		if len(rs) == 1 && rs[0].URI == m.URI() {
			t, err := s.Target(ctx, rs[0].URI, rs[0].Key)
			if err != nil {
				return core.ResourceReadPlan{}, err
			}
			return core.NewResourceReadPlan(t, t)
		}
		requested, err := core.NewResourceTarget(m.URI(), "bundle", nil)
		if err != nil {
			return core.ResourceReadPlan{}, err
		}
		items := make([]core.ResourceTarget, 0, len(rs))
		for _, r := range rs {
			t, err := s.Target(ctx, r.URI, r.Key)
			switch {
			case core.KindOf(err) == core.FailureUnavailable:
				continue
			case err != nil:
				return core.ResourceReadPlan{}, err
			}
			items = append(items, t)
		}
		return core.NewResourceReadPlan(requested, items...)
	})
}

// pin is a target's private authorization data: the planned identity.
type pin struct {
	Store   string `json:"store"`
	Key     string `json:"key"`
	Version uint64 `json:"version"`
}

const storeTag = "memory"

// Target plans the item under key as a target at uri, pinned to its
// current version. It reads identity metadata only. A missing item and one
// the caller has no grant on both give core.FailureUnavailable.
func (s *Store) Target(ctx context.Context, uri, key string) (core.ResourceTarget, error) {
	if err := ctx.Err(); err != nil {
		return core.ResourceTarget{}, err
	}
	principal, err := s.principal(ctx)
	if err != nil {
		return core.ResourceTarget{}, core.NewFailure(core.FailureUnavailable, err)
	}
	s.mu.RLock()
	e, ok := s.items[key]
	var version uint64
	if ok {
		_, ok = e.grants[principal]
		version = e.version
	}
	s.mu.RUnlock()
	if !ok {
		return core.ResourceTarget{}, core.NewFailure(core.FailureUnavailable, errNotVisible)
	}
	authz, err := json.Marshal(pin{Store: storeTag, Key: key, Version: version})
	if err != nil {
		return core.ResourceTarget{}, err
	}
	return core.NewResourceTarget(uri, "item", authz)
}

// Read reads the body of a target that s planned. It refuses, in this
// order: a canceled request (its context error), a caller without a current
// read grant or a missing item (core.FailureUnavailable), an item whose version is
// not the planned one (ErrChanged), and an item over item.Limit
// (core.TooLarge with its size). core.ItemReader(s.Read) is s's
// core.Reader.
func (s *Store) Read(ctx context.Context, item core.ReadItem) (core.ResourcePayload, error) {
	t := item.Target
	if err := ctx.Err(); err != nil {
		return core.ResourcePayload{}, err
	}
	var p pin
	if err := json.Unmarshal(t.AuthorizationData(), &p); err != nil || p.Store != storeTag {
		return core.ResourcePayload{}, ErrNotPlanned
	}
	principal, err := s.principal(ctx)
	if err != nil {
		return core.ResourcePayload{}, core.NewFailure(core.FailureUnavailable, err)
	}
	s.mu.RLock()
	e, ok := s.items[p.Key]
	var a Access
	if ok {
		a, ok = e.grants[principal]
	}
	s.mu.RUnlock()
	switch {
	case !ok || !a.Read:
		return core.ResourcePayload{}, core.NewFailure(core.FailureUnavailable, errNotVisible)
	case e.version != p.Version:
		return core.ResourcePayload{}, ErrChanged
	case int64(len(e.body)) > item.Limit:
		return core.ResourcePayload{}, &core.TooLargeError{Size: int64(len(e.body))}
	}
	if err := ctx.Err(); err != nil {
		return core.ResourcePayload{}, err
	}
	s.bodyReads.Add(1)
	if e.text {
		return core.TextPayload(e.mimeType, string(e.body)), nil
	}
	return core.BlobPayload(e.mimeType, e.body), nil
}

// Policy returns a core.ResourcePolicy backed by the store's grants, for
// hosts whose policy is the grants themselves. Discover lets any caller
// with a principal know of every definition. An item target of this store
// is visible to a principal with a grant on it (disclosing its URI when the
// grant says so) and readable with a Read grant; any other target (a
// bundle's requested target) is visible and readable to a caller with a
// principal. Decide answers a whole pass under one lock of the store, and
// denies the whole read (an Unavailable error) to a caller without a
// principal.
func (s *Store) Policy() core.ResourcePolicy {
	return core.ResourcePolicy{
		Discover: func(ctx context.Context, _ core.ResourceDefinition) error {
			_, err := s.principal(ctx)
			if err != nil {
				return core.NewFailure(core.FailureUnavailable, err)
			}
			return nil
		},
		Decide: func(ctx context.Context, pass core.PolicyPass) ([]core.TargetDecision, error) {
			principal, err := s.principal(ctx)
			if err != nil {
				return nil, core.NewFailure(core.FailureUnavailable, err)
			}
			ds := make([]core.TargetDecision, len(pass.Targets))
			s.mu.RLock()
			defer s.mu.RUnlock()
			for i, t := range pass.Targets {
				ds[i] = s.decideLocked(principal, t)
			}
			return ds, nil
		},
	}
}

// decideLocked is the policy's one rule, under s.mu: a target of this store
// follows principal's grant on the item it pins (none: hidden); any other
// target is visible and readable.
func (s *Store) decideLocked(principal string, t core.ResourceTarget) core.TargetDecision {
	var p pin
	if json.Unmarshal(t.AuthorizationData(), &p) != nil || p.Store != storeTag {
		return core.TargetDecision{Visibility: core.Visibility{Visible: true}, Read: true}
	}
	e, ok := s.items[p.Key]
	if !ok {
		return core.TargetDecision{}
	}
	a, ok := e.grants[principal]
	if !ok {
		return core.TargetDecision{}
	}
	return core.TargetDecision{Visibility: core.Visibility{Visible: true, DiscloseIssueURI: a.DiscloseURI}, Read: a.Read}
}
