package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/mcpsdk"
)

// memSink records batches; while down it fails; block holds writes.
type memSink struct {
	mu      sync.Mutex
	events  []*mcpsdk.AuditEvent
	batches int
	down    bool
	block   chan struct{}
}

func (m *memSink) Write(ctx context.Context, b []*mcpsdk.AuditEvent) error {
	if m.block != nil {
		select {
		case <-m.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return errors.New("down")
	}
	m.events = append(m.events, b...)
	m.batches++
	return nil
}

func (m *memSink) Close() error { return nil }

func (m *memSink) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.events)
}

func ev(uri string) *mcpsdk.AuditEvent {
	return &mcpsdk.AuditEvent{Time: time.Now(), Method: mcpsdk.MethodReadResource, URI: uri, Result: "complete", Revision: "r"}
}

// In refuse mode an accepted event is written before Audit returns, and a
// sink that is down refuses the request.
func TestRefuseWaitsForTheSink(t *testing.T) {
	s := &memSink{}
	tr := New(s, Options{Mode: Refuse, WriteTimeout: time.Second})
	ctx := context.Background()
	if err := tr.Audit(ctx, ev("a://1")); err != nil {
		t.Fatal(err)
	}
	if s.count() != 1 {
		t.Fatalf("accepted event not written: %d", s.count())
	}
	s.mu.Lock()
	s.down = true
	s.mu.Unlock()
	if err := tr.Audit(ctx, ev("a://2")); err == nil {
		t.Fatal("a sink that is down accepted an event")
	}
	if lost, err := tr.Close(ctx); lost != 0 || err != nil {
		t.Fatalf("close: %d, %v", lost, err)
	}
	if err := tr.Audit(ctx, ev("a://3")); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed trail: %v", err)
	}
}

// A refuse-mode request waits at most WriteTimeout on a stuck sink, and
// a full queue refuses at once.
func TestRefuseIsBounded(t *testing.T) {
	s := &memSink{block: make(chan struct{})}
	tr := New(s, Options{Mode: Refuse, QueueSize: 1, BatchSize: 1, WriteTimeout: 100 * time.Millisecond})
	ctx := context.Background()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = tr.Audit(ctx, ev("a://x")) }()
	}
	wg.Wait()
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("requests waited %v on a stuck sink", d)
	}
	for i, err := range errs {
		if err == nil {
			t.Errorf("request %d accepted by a stuck sink", i)
		}
	}
	close(s.block)
	sd, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	tr.Close(sd)
}

// In continue mode nothing waits, and every event the sink did not write
// is counted as dropped.
func TestContinueCountsEveryDrop(t *testing.T) {
	s := &memSink{}
	tr := New(s, Options{Mode: Continue, QueueSize: 8, BatchSize: 4})
	ctx := context.Background()
	const n = 200
	for i := 0; i < n; i++ {
		if i == 50 {
			s.mu.Lock()
			s.down = true
			s.mu.Unlock()
		}
		if i == 120 {
			s.mu.Lock()
			s.down = false
			s.mu.Unlock()
		}
		if err := tr.Audit(ctx, ev("a://x")); err != nil {
			t.Fatal(err)
		}
	}
	lost, err := tr.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := int64(s.count()) + tr.Dropped() + lost; got != n {
		t.Fatalf("written %d + dropped %d + lost %d = %d, want %d", s.count(), tr.Dropped(), lost, got, n)
	}
	if tr.Dropped() == 0 {
		t.Fatal("a sink that was down dropped nothing")
	}
}

// Close writes what is queued, and counts what it could not write within
// its grace period.
func TestCloseFlushesAndCountsLost(t *testing.T) {
	s := &memSink{block: make(chan struct{})}
	tr := New(s, Options{Mode: Continue, QueueSize: 16, BatchSize: 1, WriteTimeout: time.Minute})
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		tr.Audit(ctx, ev("a://x"))
	}
	sd, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	go func() { time.Sleep(20 * time.Millisecond); cancel(); close(s.block) }()
	lost, _ := tr.Close(sd)
	if int64(s.count())+lost != 5 || lost == 0 {
		t.Fatalf("written %d, lost %d of 5", s.count(), lost)
	}
}

// The JSON file holds one event per line and rotates by size, keeping
// Keep old files.
func TestJSONFileRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	j, err := OpenJSONFile(path, JSONFileOptions{MaxBytes: 600, Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		if err := j.Write(ctx, []*mcpsdk.AuditEvent{ev("a://x")}); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	names, _ := filepath.Glob(path + "*")
	if len(names) != 3 {
		t.Fatalf("files %q, want the file and 2 rotated ones", names)
	}
	for _, n := range names {
		fi, _ := os.Stat(n)
		if fi.Size() > 600 || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %d bytes, mode %v", n, fi.Size(), fi.Mode())
		}
		f, _ := os.Open(n)
		sc := bufio.NewScanner(f)
		lines := 0
		for sc.Scan() {
			var e mcpsdk.AuditEvent
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.URI != "a://x" {
				t.Errorf("%s: line %q: %v", n, sc.Text(), err)
			}
			lines++
		}
		f.Close()
		if lines == 0 {
			t.Errorf("%s is empty", n)
		}
	}
}

// A refuse-mode request that stopped waiting leaves no event behind
// unless its batch was already being written: the read it refused is not
// recorded as served.
func TestRefusedWaitIsNotWrittenLater(t *testing.T) {
	s := &memSink{block: make(chan struct{})}
	tr := New(s, Options{Mode: Refuse, QueueSize: 8, BatchSize: 1, WriteTimeout: 200 * time.Millisecond})
	ctx := context.Background()
	done := make(chan error, 1)
	go func() { done <- tr.Audit(ctx, ev("a://in-flight")) }()
	time.Sleep(50 * time.Millisecond) // the writer holds the first event's batch
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := tr.Audit(short, ev("a://given-up")); err == nil {
		t.Fatal("a stuck sink accepted an event")
	}
	close(s.block)
	<-done
	sd, cancel2 := context.WithTimeout(ctx, time.Second)
	defer cancel2()
	tr.Close(sd)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.events {
		if e.URI == "a://given-up" {
			t.Fatal("the event of a refused read was written after its request gave up")
		}
	}
}
