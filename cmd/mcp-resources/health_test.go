package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/config"
	"go.phpboyscout.uk/mcp/resources/core"
)

// passedStartup is a start-up whose checks have passed.
func passedStartup() *startup {
	s := &startup{done: make(chan struct{}), cancel: func() {}, log: newHeldLog(slog.DiscardHandler)}
	close(s.done)
	return s
}

// testHealth is the health of sources, each planning resources unless
// named in objectsOnly, after start-up checks that passed.
func testHealth(t *testing.T, interval time.Duration, log *lockedBuffer, sources []sourceReady, objectsOnly ...string) *health {
	t.Helper()
	var names []string
	for _, s := range sources {
		if !strings.Contains(strings.Join(objectsOnly, ","), s.name) {
			names = append(names, s.name)
		}
	}
	be := &backend{stores: sources, startup: passedStartup(), bindings: make([]core.ResourceBinding, len(names)),
		storeOf: func(i int) string { return names[i] }}
	if log == nil {
		log = &lockedBuffer{}
	}
	m := newMetrics()
	h := newHealth(be, interval, slog.New(slog.NewTextHandler(log, nil)), m)
	healthMetrics.Store(h, m)
	return h
}

// healthMetrics are the metrics of each testHealth.
var healthMetrics sync.Map

// reconnect tells re of reconnects until cond holds: the first ones may
// come before the source's watch has started, which takes them for the
// start-up check's.
func reconnect(t *testing.T, re chan struct{}, what string, cond func() bool) {
	t.Helper()
	eventually(t, what, func() bool {
		select {
		case re <- struct{}{}:
		default:
		}
		return cond()
	})
}

func getReady(t *testing.T, h *health) (int, readiness) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.readyz(rec, httptest.NewRequest("GET", "/readyz", nil))
	var rd readiness
	if err := json.Unmarshal(rec.Body.Bytes(), &rd); err != nil {
		t.Fatalf("/readyz body %q: %v", rec.Body.String(), err)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("/readyz Content-Type %q", ct)
	}
	return rec.Code, rd
}

// TestReadyzShowsEachSourceAndIsReadyWhileOneServes: one source down does
// not make the replica unready while another that plans resources serves;
// none serving, or only a source that plans nothing (a bucket of objects
// that rows reference), is 503 "no source can serve"; a source whose proof
// failed shows so and does not serve; what every source needs (the
// authorization server) failing is 503 naming it. Each source's state
// change is logged once however many probes see it.
func TestReadyzShowsEachSourceAndIsReadyWhileOneServes(t *testing.T) {
	var docsDown, ticketsDown atomic.Bool
	down := func(b *atomic.Bool) func(context.Context) error {
		return func(context.Context) error {
			if b.Load() {
				return fmt.Errorf("failed to connect: %w", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")})
			}
			return nil
		}
	}
	var log lockedBuffer
	h := testHealth(t, time.Hour, &log, []sourceReady{{name: "docs", Ready: config.Ready{Check: down(&docsDown)}}, {name: "tickets", Ready: config.Ready{Check: down(&ticketsDown)}},
		{name: "files", Ready: config.Ready{Check: func(context.Context) error { return nil }}}}, "files")
	want := func(code int, reason string, states map[string]string) {
		t.Helper()
		gotCode, rd := getReady(t, h)
		if gotCode != code || rd.Ready != (code == 200) || rd.Reason != reason {
			t.Errorf("/readyz %d %+v, want %d reason %q", gotCode, rd, code, reason)
		}
		for n, s := range states {
			if rd.Sources[n] != s {
				t.Errorf("/readyz sources %v, want %s %q", rd.Sources, n, s)
			}
		}
	}
	want(200, "", map[string]string{"docs": "serving", "tickets": "serving", "files": "serving"})
	ticketsDown.Store(true)
	for range 3 {
		want(200, "", map[string]string{"docs": "serving", "tickets": "unavailable"})
	}
	if n := strings.Count(log.String(), `msg="source not ready" source=tickets state=unavailable err="connection refused"`); n != 1 {
		t.Errorf("the state change was logged %d times, want once:\n%s", n, log.String())
	}
	docsDown.Store(true)
	want(503, "no source can serve", map[string]string{"docs": "unavailable", "tickets": "unavailable", "files": "serving"})
	docsDown.Store(false)
	h.sources[0].proofOK.Store(false)
	want(503, "no source can serve", map[string]string{"docs": "proof failed"})
	h.sources[0].proofOK.Store(true)
	want(200, "", map[string]string{"docs": "serving"})
	if !strings.Contains(log.String(), `msg="source ready again" source=docs`) {
		t.Errorf("no line says docs is ready again:\n%s", log.String())
	}
	h.gates = func() []readyCheck {
		return []readyCheck{{name: "authorization server", check: func(context.Context) error { return errors.New("no keys") }}}
	}
	want(503, "authorization server is not answering", map[string]string{"docs": "serving"})
}

// TestReadyzChecksTheSourcesAtOnceEachBounded: a source whose check hangs
// is unavailable after readyCheckTimeout, and the others are still
// checked and serving, in one answer within about that time.
func TestReadyzChecksTheSourcesAtOnceEachBounded(t *testing.T) {
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	h := testHealth(t, time.Hour, nil, []sourceReady{{name: "slow", Ready: config.Ready{Check: hang}}, {name: "quick", Ready: config.Ready{Check: func(context.Context) error { return nil }}}})
	start := time.Now()
	code, rd := getReady(t, h)
	if took := time.Since(start); took > readyCheckTimeout+time.Second {
		t.Errorf("/readyz took %v with one source hanging, want about %v", took, readyCheckTimeout)
	}
	if code != 200 || rd.Sources["slow"] != "unavailable" || rd.Sources["quick"] != "serving" {
		t.Errorf("/readyz %d %+v, want 200 with slow unavailable and quick serving", code, rd)
	}
}

// TestReadyzWhileTheStartupChecksRun: the embedded demo's one source, and
// the start-up checks still running, then failed.
func TestReadyzWhileTheStartupChecksRun(t *testing.T) {
	h := testHealth(t, time.Hour, nil, []sourceReady{{name: "memory"}})
	if code, rd := getReady(t, h); code != 200 || rd.Sources["memory"] != "serving" {
		t.Errorf("the demo: %d %+v", code, rd)
	}
	st := &startup{done: make(chan struct{}), cancel: func() {}}
	h.startup = func() *startup { return st }
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	rec := httptest.NewRecorder()
	h.readyz(rec, httptest.NewRequest("GET", "/readyz", nil).WithContext(ctx))
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), `"reason":"the start-up checks of the storage are running","sources":{"memory":"starting"}`) {
		t.Errorf("while the checks run: %d %s", rec.Code, rec.Body.String())
	}
	st.err = errors.New("boom")
	close(st.done)
	if code, rd := getReady(t, h); code != 503 || rd.Reason != "the storage failed its start-up check" {
		t.Errorf("after the checks failed: %d %+v", code, rd)
	}
}

// fakeProof is a source's proof that counts its runs, fails while fail
// says how, and notices two runs at once.
type fakeProof struct {
	runs, inFlight, overlaps atomic.Int64
	fail                     atomic.Pointer[error]
}

func (p *fakeProof) prove(ctx context.Context) error {
	if p.inFlight.Add(1) > 1 {
		p.overlaps.Add(1)
	}
	defer p.inFlight.Add(-1)
	p.runs.Add(1)
	time.Sleep(5 * time.Millisecond)
	if e := p.fail.Load(); e != nil {
		return *e
	}
	return nil
}

func (p *fakeProof) failWith(err error) {
	if err == nil {
		p.fail.Store(nil)
		return
	}
	p.fail.Store(&err)
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5 s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestProofRunsOnItsScheduleAndAfterAReconnectNeverTwoAtOnce: the proof
// runs every interval (never faster), once more after a reconnect, never
// two runs at once however many reconnects arrive, and the start-up
// check's own connections trigger nothing.
func TestProofRunsOnItsScheduleAndAfterAReconnectNeverTwoAtOnce(t *testing.T) {
	var p fakeProof
	re := make(chan struct{}, 1)
	re <- struct{}{} // the start-up check's connection
	h := testHealth(t, 50*time.Millisecond, nil, []sourceReady{{name: "docs", Ready: config.Ready{Prove: p.prove, Reconnected: re}}})
	start := time.Now()
	h.start(t.Context())
	time.Sleep(500 * time.Millisecond)
	h.stop()
	elapsed := time.Since(start)
	s := h.sources[0]
	runs, sched := p.runs.Load(), s.runs[0].Load()
	// The run that stop cut short counts for nothing.
	if (sched != runs && sched != runs-1) || sched < 3 || sched > int64(elapsed/(50*time.Millisecond))+1 {
		t.Errorf("%d runs (%d scheduled) in %v at a 50ms interval: want at least 3, at most one an interval, none from the start-up's connection", runs, sched, elapsed)
	}

	h = testHealth(t, time.Hour, nil, []sourceReady{{name: "docs", Ready: config.Ready{Prove: p.prove, Reconnected: re}}})
	h.start(t.Context())
	defer h.stop()
	p.runs.Store(0)
	reconnect(t, re, "a reconnect triggers a proof", func() bool { return h.sources[0].runs[1].Load() >= 1 })
	for range 200 {
		select {
		case re <- struct{}{}:
		default:
		}
	}
	time.Sleep(100 * time.Millisecond)
	if p.overlaps.Load() != 0 {
		t.Errorf("%d proofs ran while another did", p.overlaps.Load())
	}
	if n := p.runs.Load(); n < 2 || n > 200 {
		t.Errorf("%d runs after 201 reconnects", n)
	}
}

// TestProofThatBreaksLogsOneErrorLineAndRecovers: a proof that fails with
// the store's *core.ConfigError sets proof_ok to 0, counts every failed
// run, logs one ERROR line naming the source and what the proof refused
// however often it fails the same way, and one INFO line once it passes;
// a proof that could not run (the database did not answer) is one WARN
// line and is retried before the interval.
func TestProofThatBreaksLogsOneErrorLineAndRecovers(t *testing.T) {
	var p fakeProof
	var log lockedBuffer
	h := testHealth(t, 30*time.Millisecond, &log, []sourceReady{{name: "desk", Ready: config.Ready{Prove: p.prove, Reconnected: make(chan struct{}, 1)}}})
	s := h.sources[0]
	metric := func(name string) string {
		rec := httptest.NewRecorder()
		m, _ := healthMetrics.Load(h)
		m.(*metrics).handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		for _, l := range strings.Split(rec.Body.String(), "\n") {
			if strings.HasPrefix(l, name+" ") {
				return strings.TrimPrefix(l, name+" ")
			}
		}
		return ""
	}
	if got := metric(`mcpres_source_proof_ok{source="desk"}`); got != "1" {
		t.Fatalf("proof_ok before any run: %q", got)
	}
	ce := core.ConfigPath{Source: "desk", Binding: "note", Field: "Plan"}.Reject(`reads relation public.notes, whose row-level security is disabled`, nil)
	p.failWith(ce)
	h.start(t.Context())
	eventually(t, "the source is refused", func() bool { return s.failures.Load() >= 3 })
	if got := metric(`mcpres_source_proof_ok{source="desk"}`); got != "0" {
		t.Errorf("proof_ok while broken: %q", got)
	}
	if got := metric(`mcpres_source_proof_failures_total{source="desk"}`); got == "" || got == "0" {
		t.Errorf("proof_failures_total while broken: %q", got)
	}
	if code, rd := getReady(t, h); code != 503 || rd.Sources["desk"] != "proof failed" {
		t.Errorf("/readyz while broken: %d %+v", code, rd)
	}
	p.failWith(nil)
	eventually(t, "the source serves again", s.proofOK.Load)
	out := log.String()
	if n := strings.Count(out, "level=ERROR"); n != 1 || !strings.Contains(out, `level=ERROR msg="the storage-enforcement proof failed while serving: the source serves nothing until it passes" source=desk trigger=schedule err="source desk: binding \"note\": plan: reads relation public.notes, whose row-level security is disabled"`) {
		t.Errorf("want one ERROR line naming the source and the relation:\n%s", out)
	}
	if !strings.Contains(out, `level=INFO msg="the storage-enforcement proof passes again: the source serves" source=desk`) {
		t.Errorf("no INFO line once it passes:\n%s", out)
	}

	h.stop()

	// Could not run: one WARN line, retried sooner than an hour.
	log = lockedBuffer{}
	re := make(chan struct{}, 1)
	h2 := testHealth(t, time.Hour, &log, []sourceReady{{name: "desk", Ready: config.Ready{Prove: p.prove, Reconnected: re}}})
	p.failWith(errors.New("failed to connect: dial tcp 127.0.0.1:1: connect: connection refused"))
	h2.start(t.Context())
	defer h2.stop()
	reconnect(t, re, "a reconnect's run", func() bool { return h2.sources[0].runs[1].Load() >= 1 })
	eventually(t, "a retry after the failed run", func() bool { return h2.sources[0].runs[2].Load() >= 1 })
	if n := strings.Count(log.String(), "level=WARN msg=\"the storage-enforcement proof could not run"); n != 1 {
		t.Errorf("%d WARN lines for a proof that could not run, want 1:\n%s", n, log.String())
	}
}

// TestProofIntervalHasAFloor: a schedule shorter than minProofInterval is
// refused, one line.
func TestProofIntervalHasAFloor(t *testing.T) {
	if err := checkProofInterval(10 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "--proof-interval must be at least 100ms") {
		t.Errorf("10ms: %v", err)
	}
	if err := checkProofInterval(200 * time.Millisecond); err != nil {
		t.Errorf("200ms: %v", err)
	}
}
