package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/core"
)

// This file routes body statements to the hot standbys of a source
// (SourceOptions.Standbys). Everything that decides stays on the primary:
// plans, decide statements, grants, listing, completion, the recheck and
// LISTEN. A standby lags, so its row-level security may still let through
// a grant the primary revoked a moment ago; a body read there is safe
// because the plan and both decisions ran, or run, on the primary and the
// body is pinned to the planned version: the standby serves a body only
// when it holds that exact version, and every other item (no row, another
// version) is read again on the primary within the same read. A body goes
// to a standby only when the policy in force is a decide statement of the
// source, run on the primary at the recheck: where the database decides
// (row-level security alone, [DatabaseDecides]), the body statement is the
// decision, and it stays on the primary.

// Defaults of the standby settings of [SourceOptions].
const (
	// DefaultStandbyMaxLag is the replay lag past which a standby is not
	// used, when SourceOptions.StandbyMaxLag is zero.
	DefaultStandbyMaxLag = 5 * time.Second
	// DefaultStandbyProbeInterval is how often a standby's lag is probed,
	// when SourceOptions.StandbyProbeInterval is zero.
	DefaultStandbyProbeInterval = time.Second
)

// Why a body meant for a standby was read on the primary (see
// [StandbyStats].Fallbacks).
const (
	// FallbackMissing: the standby had no row for the planned key (not yet
	// replayed, or not visible there).
	FallbackMissing = "missing"
	// FallbackOtherVersion: the standby's row had another version than the
	// planned one.
	FallbackOtherVersion = "other_version"
	// FallbackLagging: every standby lagged more than the bound.
	FallbackLagging = "lagging"
	// FallbackDown: no standby answered (down, refused, not probed yet),
	// or the one asked failed.
	FallbackDown = "down"
)

// FallbackReasons are the reasons of [StandbyStats].Fallbacks, in order.
var FallbackReasons = []string{FallbackMissing, FallbackOtherVersion, FallbackLagging, FallbackDown}

// States of a standby ([StandbyStat].State).
const (
	standbyUnchecked int32 = iota // not probed yet
	standbyReady                  // serving bodies
	standbyLagging                // replay lag over the bound
	standbyDown                   // unreachable, or its last statement failed
	standbyRefused                // its login or role failed the role check
)

var standbyStateNames = [...]string{"unchecked", "ready", "lagging", "down", "refused"}

// standby is one hot standby of a source: its own session (the source's
// role, principal, claims and timeouts on the standby's DB) and what the
// probe last found.
type standby struct {
	s     *session
	index int
	state atomic.Int32
	// lag is the replay lag the last probe measured (nanoseconds;
	// math.MaxInt64 when it could not be measured), lagBytes the WAL the
	// standby had not replayed.
	lag, lagBytes atomic.Int64
	probed        atomic.Int64 // when the last probe started (UnixNano)
	probing       atomic.Bool
	roleChecked   atomic.Bool
	bodies, bytes atomic.Int64
}

// standbys are a source's standbys and their counters.
type standbys struct {
	list      []*standby
	maxLag    time.Duration
	interval  time.Duration
	next      atomic.Uint64   // round robin
	fallbacks [4]atomic.Int64 // by FallbackReasons
	// primaryBodies and primaryBytes count the bodies the binding reads
	// took from the primary (all of them without standbys).
	primaryBodies, primaryBytes atomic.Int64
}

// newStandbys opens a session per standby DB of opts.
func newStandbys(opts SourceOptions, so *sessionOptions) (*standbys, error) {
	switch {
	case opts.StandbyMaxLag < 0:
		return nil, core.ConfigPath{Source: opts.Name, Field: "StandbyMaxLag"}.Reject("must not be negative", nil)
	case opts.StandbyProbeInterval < 0:
		return nil, core.ConfigPath{Source: opts.Name, Field: "StandbyProbeInterval"}.Reject("must not be negative", nil)
	}
	sb := &standbys{maxLag: opts.StandbyMaxLag, interval: opts.StandbyProbeInterval}
	if sb.maxLag == 0 {
		sb.maxLag = DefaultStandbyMaxLag
	}
	if sb.interval == 0 {
		sb.interval = DefaultStandbyProbeInterval
	}
	for i, db := range opts.Standbys {
		s, err := newSession(db, so)
		if err != nil {
			return nil, core.ConfigPath{Source: opts.Name, Field: "Standbys", Key: strconv.Itoa(i)}.Reject(err.Error(), nil)
		}
		sb.list = append(sb.list, &standby{s: s, index: i})
	}
	return sb, nil
}

// fallback counts n bodies read on the primary for reason.
func (sb *standbys) fallback(reason string, n int) {
	for i, r := range FallbackReasons {
		if r == reason {
			sb.fallbacks[i].Add(int64(n))
		}
	}
}

// pick returns a ready standby, round robin, starting a probe of each
// whose last one is older than the interval; without one it returns the
// reason the bodies go to the primary.
func (src *Source) pick(ctx context.Context) (*standby, string) {
	sb := src.standbys
	now := time.Now().UnixNano()
	for _, s := range sb.list {
		if now-s.probed.Load() >= int64(sb.interval) && s.probing.CompareAndSwap(false, true) {
			go func() {
				defer s.probing.Store(false)
				src.probeStandby(context.WithoutCancel(ctx), s)
			}()
		}
	}
	n := uint64(len(sb.list))
	start := sb.next.Add(1)
	lagging := false
	for i := range n {
		s := sb.list[(start+i)%n]
		switch s.state.Load() {
		case standbyReady:
			return s, ""
		case standbyLagging:
			lagging = true
		}
	}
	if lagging {
		return nil, FallbackLagging
	}
	return nil, FallbackDown
}

// probeTimeout bounds one probe of a standby.
func (sb *standbys) probeTimeout() time.Duration {
	return min(max(sb.interval, time.Second), 5*time.Second)
}

// sqlPrimaryLSN is the primary's WAL position, sqlStandbyLag what a
// standby has replayed of it: its lag is zero once it replayed up to
// the position (or it is not in recovery at all), else the time since
// the last transaction it replayed; lag_bytes is the WAL still to replay.
const (
	sqlPrimaryLSN = `SELECT pg_current_wal_lsn()::text`
	sqlStandbyLag = `SELECT CASE WHEN NOT pg_is_in_recovery() OR pg_last_wal_replay_lsn() >= $1::pg_lsn THEN 0::float8
	ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8, 'Infinity'::float8) END,
	CASE WHEN pg_is_in_recovery() THEN greatest(coalesce(pg_wal_lsn_diff($1::pg_lsn, pg_last_wal_replay_lsn()), 0), 0)::int8 ELSE 0::int8 END`
)

// probeStandby checks s once, bounded by the probe timeout: on its first
// success the role check of [Source.Check], then its replay lag against
// the primary's WAL position; it sets s's state. A role check that fails
// returns its error and leaves s refused for good.
func (src *Source) probeStandby(ctx context.Context, s *standby) error {
	sb := src.standbys
	s.probed.Store(time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(ctx, sb.probeTimeout())
	defer cancel()
	if s.state.Load() == standbyRefused {
		return nil
	}
	if !s.roleChecked.Load() {
		conn, release, err := dbConn(ctx, s.s.db, src.name)
		if err == nil {
			err = src.checkRole(ctx, conn, s.s.role)
			release()
		}
		var ce *core.ConfigError
		switch {
		case errors.As(err, &ce):
			s.state.Store(standbyRefused)
			return fmt.Errorf("standby %d: %w", s.index, err)
		case err != nil:
			s.state.Store(standbyDown)
			return nil
		}
		s.roleChecked.Store(true)
	}
	var lsn string
	if err := queryRow(ctx, src.s.db, sqlPrimaryLSN, nil, &lsn); err != nil {
		return nil // the primary's trouble is the reads' own; keep the state
	}
	var lag float64
	var lagBytes int64
	if err := queryRow(ctx, s.s.db, sqlStandbyLag, []any{lsn}, &lag, &lagBytes); err != nil {
		s.state.Store(standbyDown)
		return nil
	}
	d := int64(math.MaxInt64)
	if lag < float64(math.MaxInt64)/float64(time.Second) {
		d = int64(lag * float64(time.Second))
	}
	s.lag.Store(d)
	s.lagBytes.Store(lagBytes)
	if time.Duration(d) > sb.maxLag {
		s.state.Store(standbyLagging)
	} else {
		s.state.Store(standbyReady)
	}
	return nil
}

// queryRow runs sql on db as one batch and scans its one row into dest.
func queryRow(ctx context.Context, db DB, sql string, args []any, dest ...any) error {
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br := db.SendBatch(ctx, b)
	err := br.QueryRow().Scan(dest...)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// probeStandbys probes every standby at once, for [Source.Check]: a
// standby that cannot be reached is only not used until a later probe
// reaches it; one whose login or role fails the role check is an error.
func (src *Source) probeStandbys(ctx context.Context) error {
	if src.standbys == nil {
		return nil
	}
	errs := make([]error, len(src.standbys.list))
	done := make(chan struct{})
	for i, s := range src.standbys.list {
		go func() {
			defer func() { done <- struct{}{} }()
			if s.probing.CompareAndSwap(false, true) {
				defer s.probing.Store(false)
				errs[i] = src.probeStandby(ctx, s)
			}
		}()
	}
	for range src.standbys.list {
		<-done
	}
	return errors.Join(errs...)
}

// routedBodies reads items as [session.bodies] does: on a ready standby
// with plain (the bodies statement without a folded recheck) when routed
// is set and there is one, each item the standby did not hold at its
// planned version then read again on the primary with primary; else on
// the primary with primary.
func (src *Source) routedBodies(ctx context.Context, routed bool, primary, plain *bodiesStatement, items []bodyItem, budget int64, pass bodiesPass) ([]bodyResult, error) {
	sb := src.standbys
	if !routed || sb == nil || len(sb.list) == 0 {
		return src.primaryBodies(ctx, primary, items, budget, pass)
	}
	s, reason := src.pick(ctx)
	if s == nil {
		sb.fallback(reason, len(items))
		return src.primaryBodies(ctx, primary, items, budget, pass)
	}
	if err := src.s.brokenErr(); err != nil {
		return nil, err
	}
	// The standby gets half the time left, so that the primary has the
	// rest when it fails.
	sctx, cancel := ctx, context.CancelFunc(func() {})
	if dl, ok := ctx.Deadline(); ok {
		sctx, cancel = context.WithTimeout(ctx, time.Until(dl)/2)
	}
	res, err := s.s.bodies(sctx, plain, items, budget, pass)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		s.state.Store(standbyDown)
		s.probed.Store(time.Now().UnixNano())
		sb.fallback(FallbackDown, len(items))
		return src.primaryBodies(ctx, primary, items, budget, pass)
	}
	var again []int
	left := budget
	for k, r := range res {
		switch {
		case !r.found:
			sb.fallback(FallbackMissing, 1)
			again = append(again, k)
		case r.version != items[k].version:
			sb.fallback(FallbackOtherVersion, 1)
			again = append(again, k)
		case r.body != nil:
			left -= int64(len(r.body))
			s.bodies.Add(1)
			s.bytes.Add(int64(len(r.body)))
		}
	}
	if len(again) == 0 {
		return res, nil
	}
	sub := make([]bodyItem, len(again))
	for j, k := range again {
		sub[j] = items[k]
	}
	pres, err := src.primaryBodies(ctx, primary, sub, left, pass)
	if err != nil {
		return nil, err
	}
	for j, k := range again {
		res[k] = pres[j]
	}
	return res, nil
}

// primaryBodies is [session.bodies] on the primary, counted.
func (src *Source) primaryBodies(ctx context.Context, st *bodiesStatement, items []bodyItem, budget int64, pass bodiesPass) ([]bodyResult, error) {
	res, err := src.s.bodies(ctx, st, items, budget, pass)
	if err == nil && src.standbys != nil {
		for _, r := range res {
			if r.body != nil {
				src.standbys.primaryBodies.Add(1)
				src.standbys.primaryBytes.Add(int64(len(r.body)))
			}
		}
	}
	return res, err
}

// StandbyStats is what a source's standbys served, as
// [Source.StandbyStats] reports it.
type StandbyStats struct {
	// Standbys has one entry per SourceOptions.Standbys, in order.
	Standbys []StandbyStat
	// Fallbacks counts the bodies read on the primary instead of a
	// standby, by reason (each of [FallbackReasons]).
	Fallbacks map[string]int64
	// PrimaryBodies and PrimaryBytes count the bodies (and their bytes)
	// that the bindings' body reads took from the primary.
	PrimaryBodies, PrimaryBytes int64
}

// StandbyStat is one standby's state and counters.
type StandbyStat struct {
	// Index is its position in SourceOptions.Standbys.
	Index int
	// State is "ready" (serving bodies), "lagging" (its replay lags more
	// than SourceOptions.StandbyMaxLag), "down" (unreachable, or its last
	// statement failed), "refused" (its login or role failed the role
	// check) or "unchecked" (not probed yet).
	State string
	// Lag is the replay lag the last probe measured (the time since the
	// last transaction it replayed while it is behind the primary, zero
	// once it caught up); LagBytes the WAL it had still to replay.
	// Lag is math.MaxInt64 when it could not be measured.
	Lag      time.Duration
	LagBytes int64
	// Bodies and Bytes count the bodies it served, and their bytes.
	Bodies, Bytes int64
}

// StandbyStats returns the state and counters of the source's standbys;
// nil Standbys when it has none. It sends no request.
func (src *Source) StandbyStats() StandbyStats {
	out := StandbyStats{Fallbacks: map[string]int64{}}
	sb := src.standbys
	if sb == nil {
		return out
	}
	for i, r := range FallbackReasons {
		out.Fallbacks[r] = sb.fallbacks[i].Load()
	}
	out.PrimaryBodies, out.PrimaryBytes = sb.primaryBodies.Load(), sb.primaryBytes.Load()
	for _, s := range sb.list {
		out.Standbys = append(out.Standbys, StandbyStat{Index: s.index, State: standbyStateNames[s.state.Load()],
			Lag: time.Duration(s.lag.Load()), LagBytes: s.lagBytes.Load(), Bodies: s.bodies.Load(), Bytes: s.bytes.Load()})
	}
	return out
}
