package main

import (
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// grantWarnEvery is how often, at most, one resource's unusable grant rows
// are logged.
const grantWarnEvery = time.Minute

// unusableGrants reports the grant rows that can never serve (a NULL or
// empty key, a prefix without a trailing '/'), which refuse every read
// they should have granted: a counter by resource, and a WARN line per
// resource at most every grantWarnEvery, naming the resource (a file's,
// operator-chosen and bounded) and never the principal, key or URI.
type unusableGrants struct {
	log     *slog.Logger
	counter *prometheus.CounterVec

	mu   sync.Mutex
	last map[string]time.Time // resource -> its last WARN
	held map[string]int64     // resource -> rows seen since then
	now  func() time.Time
}

func newUnusableGrants(log *slog.Logger) *unusableGrants {
	return &unusableGrants{log: log, last: map[string]time.Time{}, held: map[string]int64{}, now: time.Now,
		counter: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpres_grant_rows_unusable_total",
			Help: "Rows of a resource's grant statement that can never grant a key (NULL or empty, or a prefix not ending in '/'), counted when the grant refused a read, by resource.",
		}, []string{"resource"})}
}

// seen records rows unusable rows of resource's grant (config
// OpenOptions.UnusableGrantRows).
func (u *unusableGrants) seen(resource string, rows int64) {
	u.counter.WithLabelValues(resource).Add(float64(rows))
	u.mu.Lock()
	now := u.now()
	u.held[resource] += rows
	if t, ok := u.last[resource]; ok && now.Sub(t) < grantWarnEvery {
		u.mu.Unlock()
		return
	}
	n := u.held[resource]
	u.last[resource], u.held[resource] = now, 0
	u.mu.Unlock()
	u.log.Warn("a grant statement returned rows that can never grant a key (NULL or empty, or a prefix without a trailing '/'): the reads they were meant to grant are refused",
		"resource", resource, "rows", n, "logged_at_most_every", grantWarnEvery.String())
}
