package postgres

import (
	"context"
	"sync"
)

// fairGate orders the store's transactions for a pool's connections. Past
// the pool's size, transactions wait here rather than in the pool's own
// queue, which serves them first come, first served: there a request for
// a rarely read resource waits behind every queued read of a busy one.
//
// A waiting transaction is served in this order:
//   - a recheck first: its request has already read its bodies, which
//     it holds until the recheck answers;
//   - then a statement that had no transaction waiting (a sparse one,
//     such as an index read now and then), for one transaction; if more
//     of it wait by then, it joins the turn below;
//   - then one transaction of each statement with a queue in turn (round
//     robin), so a statement waits behind at most one of each other
//     statement's transactions, however many of those are queued.
//
// This is the sparse-flow rule of fair queueing in network schedulers
// (FQ-CoDel): a rarely read resource passes a busy one's queue, and no
// statement starves, since each in the turn is served once a round.
//
// A gate never holds more slots than the pool has connections, so a
// transaction past the gate finds a connection unless one is used outside
// the store's reads (the proof, LISTEN), and then waits in the pool.
type fairGate struct {
	mu     sync.Mutex
	free   int
	urgent []*gateWaiter        // rechecks, first come, first served
	flows  map[string]*gateFlow // by statement, while it has waiters
	sparse []*gateFlow          // flows that had no waiter, first come
	ring   []*gateFlow          // flows with a queue, in turn
}

// gateFlow is the queue of one statement's waiting transactions.
type gateFlow struct {
	sql     string
	waiters []*gateWaiter
}

// gateWaiter is one waiting transaction. ready is closed when it is
// given a slot; gone is set by a waiter whose context ended first, so the
// slot passes on.
type gateWaiter struct {
	ready chan struct{}
	gone  bool
}

func newFairGate(slots int) *fairGate {
	return &fairGate{free: max(1, slots), flows: map[string]*gateFlow{}}
}

// urgentKey marks a context whose transactions are rechecks.
type urgentKey struct{}

// recheckContext returns ctx marked so that its transactions pass the
// gate before any first read of a request.
func recheckContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, urgentKey{}, true)
}

// enter waits for a slot for a transaction of the statement sql, or
// until ctx ends. Each successful enter must be followed by one leave.
func (g *fairGate) enter(ctx context.Context, sql string) error {
	g.mu.Lock()
	if g.free > 0 && len(g.urgent) == 0 && len(g.sparse) == 0 && len(g.ring) == 0 {
		g.free--
		g.mu.Unlock()
		return nil
	}
	w := &gateWaiter{ready: make(chan struct{})}
	if ctx.Value(urgentKey{}) != nil {
		g.urgent = append(g.urgent, w)
	} else {
		f := g.flows[sql]
		if f == nil {
			f = &gateFlow{sql: sql}
			g.flows[sql] = f
			g.sparse = append(g.sparse, f)
		}
		f.waiters = append(f.waiters, w)
	}
	g.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		select {
		case <-w.ready: // given a slot as ctx ended: hand it on
			g.mu.Unlock()
			g.leave()
		default:
			w.gone = true // next skips it
			g.mu.Unlock()
		}
		return ctx.Err()
	}
}

// leave frees the slot of a transaction that entered, handing it to the
// next waiter, if any.
func (g *fairGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		w := g.next()
		if w == nil {
			g.free++
			return
		}
		if !w.gone {
			close(w.ready)
			return
		}
	}
}

// next removes and returns the next waiter, nil if none waits.
func (g *fairGate) next() *gateWaiter {
	if len(g.urgent) > 0 {
		w := g.urgent[0]
		g.urgent[0] = nil
		g.urgent = g.urgent[1:]
		return w
	}
	var f *gateFlow
	switch {
	case len(g.sparse) > 0:
		f = g.sparse[0]
		g.sparse[0] = nil
		g.sparse = g.sparse[1:]
	case len(g.ring) > 0:
		f = g.ring[0]
		g.ring[0] = nil
		g.ring = g.ring[1:]
	default:
		return nil
	}
	w := f.waiters[0]
	f.waiters[0] = nil
	f.waiters = f.waiters[1:]
	if len(f.waiters) > 0 {
		g.ring = append(g.ring, f) // to the back of the turn
	} else {
		delete(g.flows, f.sql)
	}
	return w
}
