package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.phpboyscout.uk/mcp/resources/core"
)

// firstUseTimeout bounds the check a source runs at its first use when its
// host never called [Source.Check] (see [Source]).
const firstUseTimeout = 10 * time.Second

// firstUseRetry is how long after a failed check at first use the source
// answers reads with the outage at once, before a read tries again.
const firstUseRetry = 5 * time.Second

// firstUse is the check a source runs itself, at the first read through a
// statement no check has accepted, when its host never called
// [Source.Check]: one at a time, its failure logged once.
type firstUse struct {
	explicit atomic.Bool // the host called Check: it decides, not the reads
	log      *slog.Logger

	mu       sync.Mutex
	running  chan struct{} // closed when the check in flight ends; nil when none
	failed   error         // why the last check failed; nil when none did
	failedAt time.Time
	logged   bool // the failure's ERROR line was written
}

// serve returns the checked form of st for a request: at once when a
// check accepted it; after the check at first use when the host never
// called Check (the request waits for the one in flight, bounded by its
// own context); else [ErrNotChecked]. While the check at first use fails,
// the error is the typed outage (core.FailureOutage) of [ErrNotChecked] and why.
func (src *Source) serve(ctx context.Context, st *statement) (*prepared, error) {
	for {
		if p := st.ready.Load(); p != nil {
			return p, nil
		}
		a := &src.first
		if a.explicit.Load() || src.s == nil { // checked by its host, or offline
			return st.load()
		}
		a.mu.Lock()
		if ch := a.running; ch != nil {
			a.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if a.failed != nil && time.Since(a.failedAt) < firstUseRetry {
			err := a.failed
			a.mu.Unlock()
			return nil, notServing(err)
		}
		ch := make(chan struct{})
		a.running = ch
		a.mu.Unlock()

		cctx, cancel := context.WithTimeout(ctx, firstUseTimeout)
		err := src.check(cctx)
		cancel()

		a.mu.Lock()
		a.running = nil
		close(ch)
		logIt := false
		switch {
		case err == nil:
			a.failed = nil
		case ctx.Err() != nil:
			// The request ended, not the source: the next read tries again.
		default:
			a.failed, a.failedAt = err, time.Now()
			logIt, a.logged = !a.logged, true
		}
		a.mu.Unlock()
		if logIt {
			a.log.Error("postgres: the source cannot serve: its host never called Source.Check, and the check at its first use failed; reads answer with a storage outage until a check passes",
				"source", src.name, "reason", err.Error())
		}
		switch {
		case err == nil:
			return st.load()
		case ctx.Err() != nil:
			return nil, ctx.Err()
		}
		return nil, notServing(err)
	}
}

// notServing is the outage of a read while the check at first use fails.
func notServing(err error) error {
	return core.NewFailure(core.FailureOutage, fmt.Errorf("%w: the check at first use failed: %w", ErrNotChecked, err))
}
