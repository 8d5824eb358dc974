package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

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
// check accepted it; while the host's Check runs, after checking st alone
// (checkAhead); after the check at first use when the host never called
// Check (the request waits for the one in flight, bounded by its own
// context); else [ErrNotChecked]. While the check at first use, or of st
// alone, fails, the error is the typed outage (core.FailureOutage) of
// [ErrNotChecked] and why.
func (src *Source) serve(ctx context.Context, st *statement) (*prepared, error) {
	for {
		if p := st.ready.Load(); p != nil {
			return p, nil
		}
		a := &src.first
		if src.ahead.checks.Load() > 0 && src.pooled() {
			return src.checkAheadOf(ctx, st) // the host's Check runs, and has not accepted st yet
		}
		if a.explicit.Load() || src.s == nil { // checked by its host, or offline
			return st.load()
		}
		a.mu.Lock()
		if ch := a.running; ch != nil {
			a.mu.Unlock()
			if err := await(ctx, ch); err != nil {
				return nil, err
			}
			continue
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
		return afterCheck(ctx, st, err)
	}
}

// afterCheck is a read's answer for st once the check it ran ended with err:
// st's checked form, ctx's error when the request ended first, or the
// outage of a failed check.
func afterCheck(ctx context.Context, st *statement, err error) (*prepared, error) {
	switch {
	case err == nil:
		return st.load()
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	return nil, notServing(err)
}

// await waits for the check in flight that closes ch, or for ctx.
func await(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// notServing is the outage of a read while the check at first use fails.
func notServing(err error) error {
	return core.NewFailure(core.FailureOutage, fmt.Errorf("%w: the check at first use failed: %w", ErrNotChecked, err))
}

// checkAheadTimeout bounds the check of one read's statement while the
// host's Check runs, besides the read's own context.
const checkAheadTimeout = 10 * time.Second

// checkAhead lets a read be served while the host's Check of a big file
// runs: a statement Check has not accepted yet is checked and proven at
// its first use, with the other statements of its binding and the
// policies' (aheadGroup), on a connection of its own (Check's every step,
// for those statements: the role, the prepare and probe as the role, the
// proof from the catalog), and serves once they pass. Each statement is
// checked once at a time; later reads of it wait for that check. What it
// finds wrong fails the read as an outage; Check finds it too, and
// reports it.
type checkAhead struct {
	checks    atomic.Int32  // the host's Check calls running
	begun     chan struct{} // closed once a Check has begun
	beginOnce sync.Once
	mu        sync.Mutex
	flight    map[*statement]chan struct{} // the statements being checked, closed when done
}

// CheckStarted returns a channel that is closed once a call of
// [Source.Check] has begun: from then until it returns, a read through a
// statement it has not accepted yet checks and proves that statement (with
// its binding's others and the policies') first, instead of failing with
// [ErrNotChecked], so that a host may serve while the check of a big file
// runs (see [Source]).
func (src *Source) CheckStarted() <-chan struct{} { return src.ahead.begun }

// begin counts a Check that starts, and returns its end.
func (a *checkAhead) begin() func() {
	a.checks.Add(1)
	a.beginOnce.Do(func() {
		if a.begun != nil { // nil for an offline source
			close(a.begun)
		}
	})
	return func() { a.checks.Add(-1) }
}

// checkAheadOf returns st's checked form: at once once a check accepted
// it, else after checking it with the statements a read of its binding
// needs besides (see aheadGroup).
func (src *Source) checkAheadOf(ctx context.Context, st *statement) (*prepared, error) {
	a := &src.ahead
	for {
		if p := st.ready.Load(); p != nil {
			return p, nil
		}
		a.mu.Lock()
		if ch := a.flight[st]; ch != nil {
			a.mu.Unlock()
			if err := await(ctx, ch); err != nil {
				return nil, err
			}
			continue
		}
		if a.flight == nil {
			a.flight = map[*statement]chan struct{}{}
		}
		group := src.aheadGroup(st)
		ch := make(chan struct{})
		for _, g := range group {
			a.flight[g] = ch
		}
		a.mu.Unlock()
		err := src.checkGroup(ctx, group)
		a.mu.Lock()
		for _, g := range group {
			delete(a.flight, g)
		}
		close(ch)
		a.mu.Unlock()
		return afterCheck(ctx, st, err)
	}
}

// aheadGroup returns st and the host statements a read through it needs
// besides, that no check has accepted and none checks now: its binding's
// (plan, body, completions, grant) and those of no binding (the
// policies' decide statements), so that a read costs one check ahead,
// not one per statement. a.mu is held.
func (src *Source) aheadGroup(st *statement) []*statement {
	group := []*statement{st}
	src.mu.Lock()
	defer src.mu.Unlock()
	for _, b := range []string{st.path.Binding, ""} {
		for _, o := range src.byBinding[b] {
			if o != st && !o.derived && o.ready.Load() == nil && src.ahead.flight[o] == nil {
				group = append(group, o)
			}
		}
		if st.path.Binding == "" {
			break
		}
	}
	return group
}

// pooled says the source's DB is a pool, whose other connections a read
// can check its statement on while Check uses one (a single *pgx.Conn is
// Check's alone).
func (src *Source) pooled() bool {
	if src.s == nil {
		return false
	}
	_, single := src.s.db.(*pgx.Conn)
	return !single
}

// checkGroup checks and proves stmts, host statements (the statements
// built from others are checked by Check alone; reads fall back to their
// hosts until then), on one connection, and stores their checked forms.
func (src *Source) checkGroup(ctx context.Context, stmts []*statement) error {
	ctx, cancel := context.WithTimeout(ctx, checkAheadTimeout)
	defer cancel()
	conn, release, err := src.roleConn(ctx)
	if err != nil {
		return err
	}
	defer release()
	checked, err := src.newChecker(conn, func() {}).checkStatements(ctx, stmts)
	if err != nil {
		return err
	}
	if err := src.proveStatements(ctx, conn, stmts, func() {}); err != nil {
		return err
	}
	for i, st := range stmts {
		st.ready.Store(checked[i])
	}
	return nil
}
