package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"go.phpboyscout.uk/mcp/resources/config"
	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/connerr"
)

// The bounds of the health of the sources while serving (docs/operations.md
// states them).
const (
	// minProofInterval is the shortest --proof-interval: a proof costs a
	// round trip per statement, and a shorter schedule would be a busy loop.
	minProofInterval = 100 * time.Millisecond
	// proofTimeout bounds one run of a source's proof; a run that does not
	// finish in time fails, and the source serves nothing until one passes.
	proofTimeout = 10 * time.Second
	// proofRetry is the first wait before a proof that could not run (its
	// database did not answer) runs again; it doubles up to the interval.
	proofRetry = time.Second
	// readyWait bounds a /readyz answer while the start-up checks run.
	readyWait = 5 * time.Second
	// readyCheckTimeout bounds each source's check of one /readyz; the
	// sources are checked at once, so one that does not answer costs the
	// others nothing.
	readyCheckTimeout = time.Second
)

// The states of a source that /readyz shows.
const (
	stateServing     = "serving"      // it answers now and its last proof passed
	stateUnavailable = "unavailable"  // it does not answer its check now
	stateProofFailed = "proof failed" // it answers, but its last proof failed: it serves nothing
	stateStarting    = "starting"     // the start-up checks run
)

// The triggers of a proof run, each the index of its trigger label in
// proofTriggers.
const (
	triggerSchedule  = iota // --proof-interval passed since the last run
	triggerReconnect        // the source's pool lost every connection and connected again
	triggerRetry            // the last run could not reach the database
)

var proofTriggers = [...]string{"schedule", "reconnect", "retry"}

// sourceReady is what a backend knows of one source for its health: its
// name and the file's readiness of it (config.Ready: how to check that it
// answers, prove it again and see its pool reconnect, and its standbys);
// the embedded demo's has no Check and always answers.
type sourceReady struct {
	name string
	config.Ready
}

// sourceHealth is one source's state while serving.
type sourceHealth struct {
	sourceReady
	// resolves says a binding plans on the source: while one of those
	// serves, the replica is ready.
	resolves bool
	proofOK  atomic.Bool // the last proof passed (the start-up check's counts)
	failures atomic.Int64
	runs     [len(proofTriggers)]atomic.Int64
	problem  string                 // what the last failed proof logged; the source's watch alone uses it
	shown    atomic.Pointer[string] // the state /readyz last logged
}

// health runs the proofs of the sources while serving and answers
// /readyz. A source whose proof fails stops serving in its store (postgres
// Source.Prove); health logs it once, counts it, and shows it.
type health struct {
	sources  []*sourceHealth
	gates    func() []readyCheck // what every source needs besides itself (the authorization server)
	startup  func() *startup
	interval time.Duration
	log      *slog.Logger
	cancel   context.CancelFunc // set by start
	wg       sync.WaitGroup
}

// checkProofInterval refuses a --proof-interval that cannot mean a schedule.
func checkProofInterval(d time.Duration) error {
	if d < minProofInterval {
		return fmt.Errorf("--proof-interval must be at least %s, got %s", minProofInterval, d)
	}
	return nil
}

// newHealth returns the health of be's sources, its metrics registered with
// m. Its proofs start with start.
func newHealth(be *backend, interval time.Duration, log *slog.Logger, m *metrics) *health {
	h := &health{interval: interval, log: log, gates: func() []readyCheck { return be.ready }, startup: func() *startup { return be.startup }}
	resolves := map[string]bool{}
	for i := range be.bindings {
		resolves[be.storeOf(i)] = true
	}
	for _, src := range be.stores {
		s := &sourceHealth{sourceReady: src, resolves: resolves[src.name]}
		s.proofOK.Store(true)
		h.sources = append(h.sources, s)
		if src.Standbys != nil {
			standbyMetrics(m, src.name, src.Standbys)
		}
		if src.Prove == nil {
			continue
		}
		labels := prometheus.Labels{"source": src.name}
		m.funcMetric(false, "mcpres_source_proof_ok", "1 while the source's last storage-enforcement proof passed (the start-up check's counts), 0 while it failed and the source serves nothing; 0 before the start-up checks pass. PostgreSQL sources only.", labels,
			func() float64 {
				if h.started() && s.proofOK.Load() {
					return 1
				}
				return 0
			})
		m.funcMetric(true, "mcpres_source_proof_failures_total", "Runs of the source's storage-enforcement proof while serving that failed: a relation it reads is not enforced, or the proof could not run.", labels,
			func() float64 { return float64(s.failures.Load()) })
		for i, tr := range proofTriggers {
			m.funcMetric(true, "mcpres_source_proof_runs_total", "Runs of the source's storage-enforcement proof while serving, by trigger: schedule (--proof-interval), reconnect (its pool lost every connection and connected again), retry (the last run could not reach the database).",
				prometheus.Labels{"source": src.name, "trigger": tr}, func() float64 { return float64(s.runs[i].Load()) })
		}
	}
	return h
}

// started reports whether the start-up checks have passed.
func (h *health) started() bool {
	st := h.startup()
	if st == nil {
		return false
	}
	select {
	case <-st.done:
		return st.err == nil
	default:
		return false
	}
}

// start proves every PostgreSQL source again, each on a goroutine of its
// own, once the start-up checks have passed, until ctx ends or stop.
func (h *health) start(ctx context.Context) {
	ctx, h.cancel = context.WithCancel(ctx)
	h.wg.Go(func() {
		if h.startup().wait(ctx) != nil {
			return
		}
		for _, s := range h.sources {
			if s.Prove != nil {
				h.wg.Go(func() { h.watch(ctx, s) })
			}
		}
	})
}

// stop ends the proofs and waits for them, so that the pools they use can
// be closed.
func (h *health) stop() {
	h.cancel()
	h.wg.Wait()
}

// watch proves s every interval and after each reconnect of its pool, one
// run at a time: the interval counts from the end of one run to the start
// of the next, a reconnect while a run is under way makes one more run
// after it, and a run that could not reach the database is retried sooner
// (proofRetry, doubling up to the interval).
func (h *health) watch(ctx context.Context, s *sourceHealth) {
	// The start-up check proved the source after its own connections.
	select {
	case <-s.Reconnected:
	default:
	}
	timer := time.NewTimer(h.interval)
	defer timer.Stop()
	trigger, retry := triggerSchedule, proofRetry
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-s.Reconnected:
			trigger = triggerReconnect
		}
		err := h.prove(ctx, s, trigger)
		if ctx.Err() != nil {
			return
		}
		next := h.interval
		trigger = triggerSchedule
		if _, broken := errors.AsType[*core.ConfigError](err); err != nil && !broken {
			next, trigger = min(retry, h.interval), triggerRetry
			retry = min(2*retry, h.interval)
		} else {
			retry = proofRetry
		}
		timer.Reset(next)
	}
}

// prove runs s's proof once, within proofTimeout, counts it, and logs a
// change of its outcome: one ERROR line naming the source and what the
// proof refused when it breaks (a *core.ConfigError naming the relation),
// one WARN line when it could not run, one INFO line when it passes again.
// A run cut short by ctx (shutting down) counts for nothing.
func (h *health) prove(ctx context.Context, s *sourceHealth, trigger int) error {
	pctx, cancel := context.WithTimeout(ctx, proofTimeout)
	err := s.Prove(pctx)
	cancel()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	s.runs[trigger].Add(1)
	if err == nil {
		if !s.proofOK.Swap(true) {
			h.log.Info("the storage-enforcement proof passes again: the source serves", "source", s.name)
		}
		s.problem = ""
		return nil
	}
	s.failures.Add(1)
	s.proofOK.Store(false)
	level, msg, problem := slog.LevelWarn, "the storage-enforcement proof could not run: the source serves nothing until it passes", connerr.Cause(err, proofTimeout)
	if ce, ok := errors.AsType[*core.ConfigError](err); ok {
		level, msg, problem = slog.LevelError, "the storage-enforcement proof failed while serving: the source serves nothing until it passes", strings.TrimPrefix(ce.Error(), "core: ")
	}
	if problem != s.problem {
		s.problem = problem
		h.log.Log(ctx, level, msg, "source", s.name, "trigger", proofTriggers[trigger], "err", problem)
	}
	return err
}

// readiness is the body of a /readyz answer.
type readiness struct {
	Ready   bool              `json:"ready"`
	Reason  string            `json:"reason,omitempty"`
	Sources map[string]string `json:"sources"`
}

// readyz answers /readyz: 200 while the start-up checks have passed, what
// every source needs answers (the authorization server), and at least one
// source that plans resources serves; else 503 with the reason. The body
// shows each source's state either way (see docs/operations.md).
func (h *health) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyWait)
	defer cancel()
	rd := readiness{Sources: make(map[string]string, len(h.sources))}
	// While the start-up checks run, the probe waits for them within its
	// own time.
	if err := h.startup().wait(ctx); err != nil {
		rd.Reason, rd.Sources = "the storage failed its start-up check", h.all(stateUnavailable)
		if ctx.Err() != nil {
			rd.Reason, rd.Sources = "the start-up checks of the storage are running", h.all(stateStarting)
		}
		answerReady(w, rd)
		return
	}
	cctx, ccancel := context.WithTimeout(ctx, readyCheckTimeout)
	defer ccancel()
	states := make([]string, len(h.sources))
	var wg sync.WaitGroup
	for i, s := range h.sources {
		wg.Go(func() { states[i] = h.state(cctx, s) })
	}
	var gate string
	for _, g := range h.gates() {
		if err := g.check(ctx); err != nil {
			h.log.Warn("not ready", "dependency", g.name, "err", err)
			gate = g.name + " is not answering"
			break
		}
	}
	wg.Wait()
	for i, s := range h.sources {
		rd.Sources[s.name] = states[i]
		rd.Ready = rd.Ready || s.resolves && states[i] == stateServing
	}
	switch {
	case gate != "":
		rd.Ready, rd.Reason = false, gate
	case !rd.Ready:
		rd.Reason = "no source can serve"
	}
	answerReady(w, rd)
}

// all maps every source to state.
func (h *health) all(state string) map[string]string {
	m := make(map[string]string, len(h.sources))
	for _, s := range h.sources {
		m[s.name] = state
	}
	return m
}

// state checks s now and logs a change of its state, once however many
// probes see it.
func (h *health) state(ctx context.Context, s *sourceHealth) string {
	state, cause := stateServing, ""
	if s.Check != nil {
		if err := s.Check(ctx); err != nil {
			state, cause = stateUnavailable, connerr.Cause(err, readyCheckTimeout)
		}
	}
	if state == stateServing && !s.proofOK.Load() {
		state = stateProofFailed
	}
	if old := s.shown.Load(); (old == nil && state != stateServing) || (old != nil && *old != state) {
		if s.shown.CompareAndSwap(old, &state) {
			if state == stateServing {
				h.log.Info("source ready again", "source", s.name)
			} else {
				attrs := []any{"source", s.name, "state", state}
				if cause != "" {
					attrs = append(attrs, "err", cause)
				}
				h.log.Warn("source not ready", attrs...)
			}
		}
	}
	return state
}

// answerReady writes rd as JSON, 200 when it is ready, else 503.
func answerReady(w http.ResponseWriter, rd readiness) {
	b, _ := json.Marshal(rd)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !rd.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, _ = w.Write(append(b, '\n'))
}
