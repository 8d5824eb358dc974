package core

import "context"

// Change tells subscribers that storage changed. It names the changed
// entities by opaque change keys, the same strings that
// [ChangeSource.ChangeKeys] returns for the targets that depend on them;
// it never carries rows, bodies or principals. A change is a hint, not a
// proof: whoever acts on it re-authorizes and re-reads under current policy.
type Change struct {
	// Keys name the changed entities.
	Keys []string
	// All says that anything may have changed: the source lost track (for
	// example a listener reconnected and may have missed notifications),
	// so every subscription must be treated as possibly changed.
	All bool
}

// ChangeSource reports storage changes for subscriptions. A store offers
// one beside its readers (the memory store directly, the Postgres store
// through a LISTEN connection); adapters run it and match its changes to
// subscriptions through the keys of their authorized targets.
//
// Implementations must be safe for concurrent use.
type ChangeSource interface {
	// Watch calls changed for every change until ctx ends, then returns
	// ctx's error; it returns early only when it cannot go on. changed must
	// return quickly (it only queues work) and may be called from several
	// goroutines.
	Watch(ctx context.Context, changed func(Change)) error
	// ChangeKeys returns the change keys whose change may change what a
	// read of t returns, or nil for a target the source does not know. It
	// looks at t's URI, representation and private authorization data only
	// and never does I/O.
	ChangeKeys(t ResourceTarget) []string
}
