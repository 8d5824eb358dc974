package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
)

// startup is the one run of a backend's start-up checks. serve starts it
// before it builds the server, so that the server answers initialize (and
// everything else that needs no storage) while the checks run; the
// requests that need storage wait until the checks say serving may begin
// (gate, admit: each source answers, and each database checks a request's
// own statements ahead of the rest), and /readyz waits for their end.
//
// A failed check ends serve with its one line and exit 1, whether it is
// known before the first request or after a client connected: the
// requests waiting on it, and any made until the server stops, fail as a
// storage outage (core.FailureOutage on the wire: -32603 "resource storage
// is temporarily unavailable", retryable), and /readyz reports it.
type startup struct {
	done    chan struct{}   // closed when the checks have ended
	serving <-chan struct{} // closed when requests may be served while they run; nil: at done
	err     error           // set before done is closed
	cancel  context.CancelFunc
	log     *heldLog // serve's log, held until the checks pass
}

// startChecks runs check (nil: nothing to check) at once, in a goroutine of
// its own, under ctx. log is serve's log handler, released by started.
func startChecks(ctx context.Context, check func(context.Context) error, serving <-chan struct{}, log *heldLog) *startup {
	ctx, cancel := context.WithCancel(ctx)
	s := &startup{done: make(chan struct{}), serving: serving, cancel: cancel, log: log}
	if check == nil {
		close(s.done)
		return s
	}
	go func() {
		defer close(s.done)
		defer func() {
			if p := recover(); p != nil {
				s.err = fmt.Errorf("a start-up check panicked: %v", p)
			}
		}()
		s.err = check(ctx)
	}()
	return s
}

// stop cancels the checks if they still run and waits for them to end, so
// that the backend's pools can be closed; the log records still held are
// dropped.
func (s *startup) stop() {
	s.cancel()
	<-s.done
	s.log.release(context.Background(), false)
}

// started waits for the checks: once they pass it writes the held log
// records, then the lines of serving (the backend's notes, the transport's
// own); when they fail it drops the records and stops serving (stop),
// whose error is then the checks' one line.
func (s *startup) started(ctx context.Context, stop func(), serving func()) {
	if err := s.wait(ctx); err != nil {
		s.log.release(ctx, false)
		stop()
		return
	}
	s.log.release(ctx, true)
	serving()
}

// errStartupFailed is the private cause of a request refused because the
// start-up checks failed.
var errStartupFailed = errors.New("the storage start-up checks failed")

// wait returns once the checks have ended: nil when they passed, a
// core.FailureOutage error when they failed, ctx's error when ctx ends first.
func (s *startup) wait(ctx context.Context) error {
	select {
	case <-s.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.err != nil {
		return core.NewFailure(core.FailureOutage, errStartupFailed)
	}
	return nil
}

// admit returns once a request that needs storage may be served: when
// the checks have passed, or, while they run, once they say serving may
// begin (each source then checks what a request needs of it first); a
// core.FailureOutage error when they failed, ctx's error when ctx ends
// first.
func (s *startup) admit(ctx context.Context) error {
	select {
	case <-s.done:
		return s.wait(ctx)
	case <-s.serving: // nil: never
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-s.done:
		return s.wait(ctx)
	default:
		return nil
	}
}

// gatedMethods are the requests that need storage: they wait for the
// start-up checks to admit them. resources/list and resources/templates/list do too
// unless the backend says its listing asks no storage (listFree).
// initialize, ping, notifications, tools/list and unsubscribing never
// wait.
var gatedMethods = map[string]bool{
	"resources/read": true, "resources/subscribe": true, "completion/complete": true,
	"tools/call": true, "subscriptions/listen": true,
}

// gate is the receiving middleware that holds each request that needs
// storage until the start-up checks admit it, and answers it as a storage
// outage when they failed.
func (s *startup) gate(listFree bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if gatedMethods[method] || (!listFree && (method == "resources/list" || method == "resources/templates/list")) {
				if err := s.admit(ctx); err != nil {
					if ctx.Err() != nil {
						return nil, err
					}
					return nil, mcpsdk.WireError(core.NewFailure(core.FailureOutage, errStartupFailed), false)
				}
			}
			return next(ctx, method, req)
		}
	}
}

// endableInput returns r through a pipe, and end, which ends what it
// returns as if r had ended (r's own next read is then discarded).
func endableInput(r io.Reader) (io.Reader, func()) {
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, r)
		pw.CloseWithError(err) // nil: EOF
	}()
	return pr, func() { pw.Close() }
}

// maxHeldRecords bounds the log records held while the start-up checks
// run; later ones are dropped.
const maxHeldRecords = 256

// heldLog is serve's log handler while the start-up checks run: it holds
// the records (the SDK's session lines, a listener's reconnects) until
// release, which writes them when the checks passed and drops them when
// serve failed, so that a failure stays the one line on stderr.
type heldLog struct {
	out   slog.Handler // the handler written to, with this handler's attributes and groups
	state *heldState   // shared by every handler derived from one newHeldLog
}

type heldState struct {
	open     atomic.Bool // released with keep: write through
	mu       sync.Mutex
	released bool
	queue    []heldRecord
}

type heldRecord struct {
	h slog.Handler
	r slog.Record
}

func newHeldLog(inner slog.Handler) *heldLog { return &heldLog{out: inner, state: &heldState{}} }

// release ends the holding once: keep writes the held records, in order,
// and lets every later one through; !keep drops them and every later one.
func (h *heldLog) release(ctx context.Context, keep bool) {
	st := h.state
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.released {
		return
	}
	st.released = true
	if keep {
		for _, q := range st.queue {
			_ = q.h.Handle(ctx, q.r)
		}
		st.open.Store(true)
	}
	st.queue = nil
}

// Enabled is the inner handler's.
func (h *heldLog) Enabled(ctx context.Context, l slog.Level) bool { return h.out.Enabled(ctx, l) }

// Handle writes r, or holds it until release.
func (h *heldLog) Handle(ctx context.Context, r slog.Record) error {
	st := h.state
	if st.open.Load() {
		return h.out.Handle(ctx, r)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case st.open.Load():
		return h.out.Handle(ctx, r)
	case st.released:
		return nil
	case len(st.queue) < maxHeldRecords:
		st.queue = append(st.queue, heldRecord{h: h.out, r: r.Clone()})
	}
	return nil
}

// WithAttrs derives a handler sharing the holding.
func (h *heldLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &heldLog{out: h.out.WithAttrs(attrs), state: h.state}
}

// WithGroup derives a handler sharing the holding.
func (h *heldLog) WithGroup(name string) slog.Handler {
	return &heldLog{out: h.out.WithGroup(name), state: h.state}
}
