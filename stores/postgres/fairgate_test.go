package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitingAt returns how many transactions wait at g.
func waitingAt(g *fairGate) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(g.urgent)
	for _, f := range g.flows {
		n += len(f.waiters)
	}
	return n
}

// queued starts a transaction of sql that waits at g, and returns once it
// waits; the transaction appends its name to order when it passes, then
// leaves when done is closed.
func queued(t *testing.T, g *fairGate, ctx context.Context, sql, name string, mu *sync.Mutex, order *[]string, done <-chan struct{}, wg *sync.WaitGroup) {
	t.Helper()
	before := waitingAt(g)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := g.enter(ctx, sql); err != nil {
			mu.Lock()
			*order = append(*order, name+":"+err.Error())
			mu.Unlock()
			return
		}
		mu.Lock()
		*order = append(*order, name)
		mu.Unlock()
		<-done
		g.leave()
	}()
	for waitingAt(g) == before {
		time.Sleep(time.Millisecond)
	}
}

func TestFairGateServesRechecksThenSparseStatementsThenEachInTurn(t *testing.T) {
	g := newFairGate(1)
	ctx := context.Background()
	if err := g.enter(ctx, "held"); err != nil { // the one slot
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		order []string
		wg    sync.WaitGroup
	)
	done := map[string]chan struct{}{}
	queue := func(ctx context.Context, sql, name string) {
		done[name] = make(chan struct{})
		queued(t, g, ctx, sql, name, &mu, &order, done[name], &wg)
	}
	passed := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			mu.Lock()
			got := len(order)
			mu.Unlock()
			if got == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d passed, want %d: %v", got, n, order)
			}
		}
	}
	// Two busy statements queue three and two reads; each passes once
	// (as a sparse statement) and then has a queue, taken in turn.
	for _, name := range []string{"a1", "a2", "a3"} {
		queue(ctx, "a", name)
	}
	for _, name := range []string{"b1", "b2"} {
		queue(ctx, "b", name)
	}
	g.leave()
	passed(1)
	close(done["a1"])
	passed(2)
	// A rare statement and a recheck arrive behind both queues: first
	// come, first served, or a plain turn, would serve a2 first.
	queue(ctx, "rare", "rare")
	queue(recheckContext(ctx), "recheck", "recheck")
	for i, name := range []string{"b1", "recheck", "rare", "a2", "b2"} {
		close(done[name])
		passed(3 + i)
	}
	close(done["a3"])
	wg.Wait()
	want := []string{"a1", "b1", "recheck", "rare", "a2", "b2", "a3"}
	if !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	if g.free != 1 || len(g.ring) != 0 || len(g.sparse) != 0 || len(g.flows) != 0 || len(g.urgent) != 0 {
		t.Fatalf("after all left: free %d, ring %d, sparse %d, flows %d, urgent %d", g.free, len(g.ring), len(g.sparse), len(g.flows), len(g.urgent))
	}
}

func TestFairGateWaiterWhoseContextEndsPassesItsTurnOn(t *testing.T) {
	g := newFairGate(1)
	if err := g.enter(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		order []string
		wg    sync.WaitGroup
	)
	done := make(chan struct{})
	close(done)
	ctx, cancel := context.WithCancel(context.Background())
	queued(t, g, ctx, "a", "cancelled", &mu, &order, done, &wg)
	queued(t, g, context.Background(), "b", "next", &mu, &order, done, &wg)
	cancel()
	for {
		mu.Lock()
		n := len(order)
		mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	g.leave()
	wg.Wait()
	want := []string{"cancelled:" + context.Canceled.Error(), "next"}
	if !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	if g.free != 1 {
		t.Fatalf("free %d after all left, want 1", g.free)
	}
}

func TestFairGateNeverHoldsMoreThanItsSlots(t *testing.T) {
	const slots = 3
	g := newFairGate(slots)
	var (
		mu        sync.Mutex
		in, most  int
		wg        sync.WaitGroup
		cancelled int
	)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			if i%7 == 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Duration(i%3)*time.Microsecond)
				defer cancel()
			}
			if i%5 == 0 {
				ctx = recheckContext(ctx)
			}
			if err := g.enter(ctx, []string{"a", "b", "c", "d"}[i%4]); err != nil {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Error(err)
				}
				mu.Lock()
				cancelled++
				mu.Unlock()
				return
			}
			mu.Lock()
			in++
			most = max(most, in)
			mu.Unlock()
			time.Sleep(50 * time.Microsecond)
			mu.Lock()
			in--
			mu.Unlock()
			g.leave()
		}()
	}
	wg.Wait()
	if most > slots || most == 0 {
		t.Fatalf("%d transactions past the gate at once, want 1 to %d", most, slots)
	}
	if g.free != slots {
		t.Fatalf("free %d after all left, want %d (%d cancelled)", g.free, slots, cancelled)
	}
}

// BenchmarkFairGate measures a transaction's pass through the gate, alone
// (the fast path: a slot is free and nobody waits) and with 16 goroutines
// over 4 slots and 4 statements, against a channel semaphore of the same
// size, which serves the waiters in no order of its own.
func BenchmarkFairGate(b *testing.B) {
	sqls := []string{"SELECT 1", "SELECT 2", "SELECT 3", "SELECT 4"}
	for _, par := range []int{1, 16} {
		b.Run(fmt.Sprintf("goroutines=%d/gate", par), func(b *testing.B) {
			g := newFairGate(4)
			ctx := context.Background()
			b.ReportAllocs()
			b.SetParallelism(par)
			var n atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				sql := sqls[n.Add(1)%4]
				for pb.Next() {
					if err := g.enter(ctx, sql); err != nil {
						b.Error(err)
						return
					}
					g.leave()
				}
			})
		})
		b.Run(fmt.Sprintf("goroutines=%d/channel", par), func(b *testing.B) {
			sem := make(chan struct{}, 4)
			b.ReportAllocs()
			b.SetParallelism(par)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					sem <- struct{}{}
					<-sem
				}
			})
		})
	}
}
