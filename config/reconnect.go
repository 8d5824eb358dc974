package config

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// reconnects watches one PostgreSQL source's pool for reconnects: a new
// connection made while the pool holds no other established one (every
// connection it had was lost or closed, and it connected again). Each
// reconnect is told on the channel [Ready].Reconnected, coalesced: the
// pool never waits for a reader, and a burst of reconnects before the
// reader looks reads as one.
type reconnects struct {
	pool atomic.Pointer[pgxpool.Pool] // set once the pool exists
	c    chan struct{}                // capacity 1
}

func newReconnects() *reconnects { return &reconnects{c: make(chan struct{}, 1)} }

// afterConnect is the pool's AfterConnect hook. While it runs, the new
// connection is the pool's constructing one: established are the others.
func (w *reconnects) afterConnect(_ context.Context, _ *pgx.Conn) error {
	p := w.pool.Load()
	if p == nil {
		return nil
	}
	if st := p.Stat(); st.TotalConns()-st.ConstructingConns() == 0 {
		select {
		case w.c <- struct{}{}:
		default: // one is pending already
		}
	}
	return nil
}
