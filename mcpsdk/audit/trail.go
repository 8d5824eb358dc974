// Package audit holds the sinks of the audit trail that the adapter's
// [mcpsdk.Auditor] hook feeds, reusable by Go hosts: a [Trail] (a bounded
// queue that writes events in batches to one [Sink], in the failure mode
// the operator chose), [JSONFile] (JSON lines to a file or stdout, with
// size-based rotation) and [Postgres] (a table written with COPY as a role
// that may only INSERT).
//
// A trail in [Refuse] mode accepts an event only once its sink has written
// it: until then the request waits, and a full queue, a sink error or the
// wait's bound refuses the request (the adapter answers a retryable
// storage outage and serves nothing). In [Continue] mode a request never
// waits on the sink: an event that does not fit the queue or that the sink
// fails to write is dropped, counted ([Trail.Dropped]) and logged at WARN
// at most once per [Options.WarnEvery].
package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.phpboyscout.uk/mcp/resources/mcpsdk"
)

// Sink writes a batch of events durably, all or none, within ctx.
type Sink interface {
	Write(ctx context.Context, batch []*mcpsdk.AuditEvent) error
	// Close releases the sink after the trail's last write.
	Close() error
}

// Mode is what a [Trail] does with an event it cannot write.
type Mode uint8

const (
	// Refuse serves nothing whose event the sink has not written.
	Refuse Mode = iota + 1
	// Continue serves anyway, dropping and counting the event.
	Continue
)

// ParseMode reads a mode as the flags and the resources file spell it:
// "refuse" or "continue".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "refuse":
		return Refuse, nil
	case "continue":
		return Continue, nil
	}
	return 0, fmt.Errorf("audit: on_failure must be refuse or continue, not %q", s)
}

// String returns "refuse" or "continue".
func (m Mode) String() string {
	switch m {
	case Refuse:
		return "refuse"
	case Continue:
		return "continue"
	}
	return "unknown"
}

// The defaults of [Options].
const (
	DefaultQueueSize    = 4096
	DefaultBatchSize    = 256
	DefaultWriteTimeout = 2 * time.Second
	DefaultWarnEvery    = 10 * time.Second
)

// Options configures [New]. Zero values select the defaults.
type Options struct {
	// Mode is Refuse (the default) or Continue.
	Mode Mode
	// QueueSize bounds the events waiting for the sink
	// ([DefaultQueueSize]); BatchSize the events of one write
	// ([DefaultBatchSize]).
	QueueSize, BatchSize int
	// WriteTimeout bounds one write of the sink and, in Refuse mode, how
	// long a request waits for its event to be written
	// ([DefaultWriteTimeout]).
	WriteTimeout time.Duration
	// Logger receives the WARN records of dropped events and the record
	// of shutdown; nil discards them. It never receives an event.
	Logger *slog.Logger
	// WarnEvery is the least time between two WARN records of drops
	// ([DefaultWarnEvery]).
	WarnEvery time.Duration
}

// ErrQueueFull is the cause of an event that did not fit the queue.
var ErrQueueFull = errors.New("audit: the queue is full")

// ErrClosed is the cause of an event offered to a closed trail.
var ErrClosed = errors.New("audit: the trail is closed")

// Trail is an [mcpsdk.Auditor] that writes events to one [Sink] through a
// bounded queue, in batches, from one goroutine. Build it with [New] and
// end it with [Trail.Close].
type Trail struct {
	sink    Sink
	opts    Options
	queue   chan pending
	dropped atomic.Int64
	written atomic.Int64
	lastW   atomic.Int64 // unix nanos of the last WARN

	mu     sync.RWMutex // guards closed against sends
	closed bool
	stop   chan struct{} // closed by Close: drain and end
	done   chan struct{} // closed when the writer ended
	lost   atomic.Int64  // events Close could not write
}

// pending is one queued event and, in Refuse mode, where its outcome goes.
type pending struct {
	e   *mcpsdk.AuditEvent
	out chan error // nil in Continue mode; buffered (1)
	// gone is set, in Refuse mode, by a request that stopped waiting: its
	// read was refused, so its event is not written unless its batch was
	// already on its way.
	gone *atomic.Bool
}

// New starts a trail writing to sink. Panics if sink is nil.
func New(sink Sink, opts Options) *Trail {
	if sink == nil {
		panic("audit: New with a nil Sink")
	}
	if opts.Mode == 0 {
		opts.Mode = Refuse
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.WarnEvery <= 0 {
		opts.WarnEvery = DefaultWarnEvery
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	t := &Trail{sink: sink, opts: opts, queue: make(chan pending, opts.QueueSize), stop: make(chan struct{}), done: make(chan struct{})}
	go t.run()
	return t
}

// Audit implements [mcpsdk.Auditor]. In Refuse mode it returns once the
// sink wrote e (nil) or could not (the error), at the latest after
// WriteTimeout or when ctx ends; in Continue mode it returns nil at once.
func (t *Trail) Audit(ctx context.Context, e *mcpsdk.AuditEvent) error {
	p := pending{e: e}
	if t.opts.Mode == Refuse {
		p.out, p.gone = make(chan error, 1), new(atomic.Bool)
	}
	t.mu.RLock()
	if t.closed {
		t.mu.RUnlock()
		return t.fail(ErrClosed, 1)
	}
	select {
	case t.queue <- p:
		t.mu.RUnlock()
	default:
		t.mu.RUnlock()
		return t.fail(ErrQueueFull, 1)
	}
	if p.out == nil {
		return nil
	}
	timer := time.NewTimer(t.opts.WriteTimeout)
	defer timer.Stop()
	select {
	case err := <-p.out:
		return err
	case <-timer.C:
		// The event is still written if its batch is on its way: a refused
		// read that left a row is a row too many, never a read served
		// unaudited.
		p.gone.Store(true)
		return errors.New("audit: the sink did not write the event in time")
	case <-ctx.Done():
		p.gone.Store(true)
		return ctx.Err()
	}
}

// fail records n events that were not written: in Continue mode they are
// dropped (nil); in Refuse mode err refuses their request.
func (t *Trail) fail(err error, n int) error {
	if t.opts.Mode == Refuse {
		return err
	}
	t.drop(n, err)
	return nil
}

// drop counts n dropped events and warns, at most once per WarnEvery.
func (t *Trail) drop(n int, cause error) {
	total := t.dropped.Add(int64(n))
	now := time.Now().UnixNano()
	last := t.lastW.Load()
	if now-last >= int64(t.opts.WarnEvery) && t.lastW.CompareAndSwap(last, now) {
		t.opts.Logger.Warn("audit: events dropped; reads were served unaudited (on_failure: continue)",
			"dropped_total", total, "cause", cause.Error())
	}
}

// Dropped returns how many events the trail dropped in Continue mode.
func (t *Trail) Dropped() int64 { return t.dropped.Load() }

// Written returns how many events the sink wrote.
func (t *Trail) Written() int64 { return t.written.Load() }

// run is the writer: it takes up to BatchSize queued events at a time and
// writes them in one call of the sink.
func (t *Trail) run() {
	defer close(t.done)
	batch := make([]pending, 0, t.opts.BatchSize)
	for {
		select {
		case <-t.stop: // Close drains the rest, within its grace
			return
		default:
		}
		select {
		case p := <-t.queue:
			batch = append(batch[:0], p)
		case <-t.stop:
			return
		}
		batch = t.fill(batch)
		t.write(context.Background(), batch, true)
	}
}

// fill adds what is queued to batch, up to BatchSize, without waiting.
func (t *Trail) fill(batch []pending) []pending {
	for len(batch) < t.opts.BatchSize {
		select {
		case p := <-t.queue:
			batch = append(batch, p)
		default:
			return batch
		}
	}
	return batch
}

// write writes batch under WriteTimeout (and parent) and tells every
// waiting request how it went; in Continue mode a failed batch counts as
// dropped when drops is set. It returns the write's error.
func (t *Trail) write(parent context.Context, batch []pending, drops bool) error {
	events := make([]*mcpsdk.AuditEvent, 0, len(batch))
	for _, p := range batch {
		if p.gone == nil || !p.gone.Load() {
			events = append(events, p.e)
		}
	}
	var err error
	if len(events) > 0 {
		ctx, cancel := context.WithTimeout(parent, t.opts.WriteTimeout)
		err = t.sink.Write(ctx, events)
		cancel()
	}
	if err == nil {
		t.written.Add(int64(len(events)))
	} else if drops && t.opts.Mode == Continue {
		t.drop(len(events), err)
	}
	for _, p := range batch {
		if p.out != nil {
			p.out <- err
		}
	}
	return err
}

// Close stops taking events, writes what is queued until ctx ends (the
// shutdown's grace period), closes the sink and returns how many queued
// events were lost, logging the count when there were any. Call it once,
// after the server stopped serving.
func (t *Trail) Close(ctx context.Context) (lost int64, err error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return t.lost.Load(), nil
	}
	t.closed = true
	t.mu.Unlock()
	close(t.stop)
	<-t.done // the writer finished its batch in flight
	batch := make([]pending, 0, t.opts.BatchSize)
	for {
		batch = t.fill(batch[:0])
		if len(batch) == 0 {
			break
		}
		if ctx.Err() != nil || t.write(ctx, batch, false) != nil {
			for _, p := range batch {
				if p.gone == nil || !p.gone.Load() {
					t.lost.Add(1) // a refused read's event is not lost
				}
				if p.out != nil {
					p.out <- ErrClosed
				}
			}
		}
	}
	lost = t.lost.Load()
	if lost > 0 {
		t.opts.Logger.Warn("audit: events lost at shutdown", "lost", lost)
	} else {
		t.opts.Logger.Info("audit: trail flushed", "written", t.written.Load(), "dropped", t.dropped.Load())
	}
	return lost, t.sink.Close()
}
