package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/live"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
)

// metrics are the operator's view of the server. Labels carry only fixed
// vocabularies (methods, outcomes, failure kinds, issue codes, store and
// binding kinds): never a URI, a capture or a principal.
type metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec   // method, outcome, kind
	duration     *prometheus.HistogramVec // method, outcome
	issues       *prometheus.CounterVec   // code
	storeCalls   *prometheus.CounterVec   // store, op, outcome
	storeLatency *prometheus.HistogramVec // store, op
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpres_requests_total",
			Help: "Resource requests answered, by method (resources/read, resources/list, resources/templates/list, completion/complete), outcome (complete, partial, failed) and failure kind (a core.FailureKind name such as unavailable, storage outage, invalid plan, policy failure, no item survived; internal for the adapter's own errors).",
		}, []string{"method", "outcome", "kind"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpres_request_duration_seconds",
			Help:    "Time to answer a resource request, by method and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5 ms to 16 s
		}, []string{"method", "outcome"}),
		issues: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpres_read_issues_total",
			Help: "Items missing from partial reads, by issue code (detailed issues only).",
		}, []string{"code"}),
		storeCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpres_store_calls_total",
			Help: "Store round trips (resolve: identity metadata, read: one body, or one batch of bodies from a batch reader), by store, operation and outcome (ok, unavailable, too_large, canceled, outage, error; a batch's is its first failing item's).",
		}, []string{"store", "op", "outcome"}),
		storeLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpres_store_call_duration_seconds",
			Help:    "Time of one store round trip, by store and operation.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}, []string{"store", "op"}),
	}
	m.reg.MustRegister(m.requests, m.duration, m.issues, m.storeCalls, m.storeLatency,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// observe records one request the adapter answered.
func (m *metrics) observe(_ context.Context, o mcpsdk.Observation) {
	outcome, kind := "complete", ""
	switch {
	case o.Err != nil:
		outcome, kind = "failed", failureKind(o.Err)
	case o.Result != nil && o.Result.Partial():
		outcome = "partial"
		for _, is := range o.Result.Issues() {
			m.issues.WithLabelValues(string(is.Code())).Inc()
		}
	}
	m.requests.WithLabelValues(o.Method, outcome, kind).Inc()
	m.duration.WithLabelValues(o.Method, outcome).Observe(o.Duration.Seconds())
}

// failureKind is the kind label of a failed request: the name of its
// core.FailureKind ("unavailable", "storage outage", "invalid plan", ...),
// or "internal" for an error of the adapter's own host functions. The
// vocabulary is fixed: one name per kind.
func failureKind(err error) string {
	if k := core.KindOf(err); k != 0 {
		return k.String()
	}
	return "internal"
}

// watchSessions exports the number of open MCP sessions.
func (m *metrics) watchSessions(s *mcp.Server) {
	m.funcMetric(false, "mcpres_sessions_active", "MCP sessions open now.", nil, func() float64 {
		n := 0
		for range s.Sessions() {
			n++
		}
		return float64(n)
	})
}

// funcMetric registers the metric name, a counter or else a gauge, whose
// value f reads when it is scraped.
func (m *metrics) funcMetric(counter bool, name, help string, labels prometheus.Labels, f func() float64) {
	opts := prometheus.Opts{Name: name, Help: help, ConstLabels: labels}
	if counter {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts(opts), f))
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts(opts), f))
}

// instrument wraps every binding's resolver, reader and completion (when it
// has one) so that each store round trip is counted and timed under the
// store storeOf(i) names for binding i (the object items a binding plans
// are read, and timed, by their object source's reader: objectSources).
// The names are the sources of a resources file, operator-chosen and fixed.
func (m *metrics) instrument(bs []core.ResourceBinding, storeOf func(i int) string) []core.ResourceBinding {
	out := make([]core.ResourceBinding, len(bs))
	for i, b := range bs {
		resolver, reader, complete := b.Resolver, b.Reader, b.Complete
		store := storeOf(i)
		b.Resolver = m.resolver(store, resolver)
		if complete != nil {
			b.Complete = func(ctx context.Context, req core.CompletionRequest) (core.Completion, error) {
				start := time.Now()
				c, err := complete(ctx, req)
				m.storeCall(store, "complete", start, err)
				return c, err
			}
		}
		b.Reader = m.reader(store, reader)
		out[i] = b
	}
	return out
}

// resolver returns r with each plan it makes counted and timed under
// store. A resolver that also plans several matches at once (ResolveAll,
// which core.Resources.AuthorizeAll asks a session's rechecks of) keeps
// that method, its one round trip counted once.
func (m *metrics) resolver(store string, r core.Resolver) core.Resolver {
	t := timedResolver{m: m, store: store, next: r}
	if all, ok := r.(batchResolver); ok {
		return timedBatchResolver{timedResolver: t, all: all}
	}
	return t
}

// batchResolver is a resolver with core's optional ResolveAll.
type batchResolver interface {
	ResolveAll(ctx context.Context, ms []core.ResourceMatch) ([]core.ResourceReadPlan, []error)
}

type timedResolver struct {
	m     *metrics
	store string
	next  core.Resolver
}

// Resolve plans match with the wrapped resolver, counted and timed.
func (t timedResolver) Resolve(ctx context.Context, match core.ResourceMatch) (core.ResourceReadPlan, error) {
	start := time.Now()
	p, err := t.next.Resolve(ctx, match)
	t.m.storeCall(t.store, "resolve", start, err)
	return p, err
}

type timedBatchResolver struct {
	timedResolver
	all batchResolver
}

// ResolveAll plans ms with the wrapped resolver's ResolveAll, one call
// counted and timed, its outcome the first error among its answers.
func (t timedBatchResolver) ResolveAll(ctx context.Context, ms []core.ResourceMatch) ([]core.ResourceReadPlan, []error) {
	start := time.Now()
	plans, errs := t.all.ResolveAll(ctx, ms)
	var outcome error
	for i := 0; outcome == nil && i < len(errs); i++ {
		outcome = errs[i]
	}
	t.m.storeCall(t.store, "resolve", start, outcome)
	return plans, errs
}

// reader returns reader with each storage request it makes counted and
// timed under store: an item-by-item reader's every item, a
// native batch reader's every batch, which is one round trip however many
// items it holds. A batch's outcome is its request error's, else its first
// failing item's, else ok. wrapReader keeps the reader's kind, so the
// gateway still asks an item reader item by item and a batch reader gets
// its batch whole, its results (and their decisions) passed on unchanged.
func (m *metrics) reader(store string, reader core.Reader) core.Reader {
	return wrapReader(reader, func(next core.Reader) core.Reader {
		return readFunc(func(ctx context.Context, req core.ReadRequest) ([]core.ReadResult, error) {
			start := time.Now()
			out, err := next.Read(ctx, req)
			outcome := err
			for i := 0; outcome == nil && i < len(out); i++ {
				outcome = out[i].Err
			}
			m.storeCall(store, "read", start, outcome)
			return out, err
		})
	})
}

// wrapReader returns wrap(r) with r's kind kept, for the wrappers that time,
// count or explain storage requests. When r is a [core.ItemReader], the
// result is an ItemReader too, which asks wrap(r) for one item per
// request, so that the gateway still calls it item by item, each under its
// own ItemTimeout and with the Limit admission leaves; otherwise the result
// is wrap(r) itself, which sees each native batch as the one request the
// gateway made, and must pass on its results (their Decisions included)
// unchanged. wrap is called once.
func wrapReader(r core.Reader, wrap func(next core.Reader) core.Reader) core.Reader {
	w := wrap(r)
	if _, ok := r.(core.ItemReader); !ok {
		return w
	}
	return core.ItemReader(func(ctx context.Context, item core.ReadItem) (core.ResourcePayload, error) {
		out, err := w.Read(ctx, core.ReadRequest{Items: []core.ReadItem{item}, Budget: item.Limit})
		switch {
		case err != nil:
			return core.ResourcePayload{}, err
		case len(out) != 1:
			return core.ResourcePayload{}, fmt.Errorf("core: reader returned %d results for one item", len(out))
		}
		return out[0].Payload, out[0].Err
	})
}

// readFunc is a core.Reader made of its Read function, for the wrappers
// that time or explain storage requests (see wrapReader).
type readFunc func(ctx context.Context, req core.ReadRequest) ([]core.ReadResult, error)

// Read calls f.
func (f readFunc) Read(ctx context.Context, req core.ReadRequest) ([]core.ReadResult, error) {
	return f(ctx, req)
}

// objectSources returns the core.WithObjectSource options of objects, each
// reader timed under its source's name.
func (m *metrics) objectSources(objects map[string]core.Reader) []core.Option {
	var opts []core.Option
	for name, rd := range objects {
		opts = append(opts, core.WithObjectSource(name, m.reader(name, rd)))
	}
	return opts
}

func (m *metrics) storeCall(store, op string, start time.Time, err error) {
	m.storeLatency.WithLabelValues(store, op).Observe(time.Since(start).Seconds())
	var tooLarge *core.TooLargeError
	outcome := "ok"
	switch {
	case err == nil:
	case core.KindOf(err) == core.FailureUnavailable:
		outcome = "unavailable"
	case core.KindOf(err) == core.FailureOutage:
		outcome = "outage" // the store said its storage is down (core.FailureOutage)
	case errors.As(err, &tooLarge):
		outcome = "too_large"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		outcome = "canceled"
	default:
		outcome = "error"
	}
	m.storeCalls.WithLabelValues(store, op, outcome).Inc()
}

// hubCollector exports the subscription hub's counters from one
// live.Stats per scrape. Read one by one, a scrape could count a change
// (mcpres_live_changes_total) and yet show no check pending for it
// (mcpres_live_checks_pending read before the change came) nor its
// notifications: one snapshot keeps the rule that a change counted while
// nothing is pending has had its notifications counted.
type hubCollector struct {
	stats   func() live.Stats
	metrics []hubMetric
}

// hubMetric is one metric of a hubCollector and its value in a snapshot.
type hubMetric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(live.Stats) int64
}

func newHubCollector(stats func() live.Stats) *hubCollector {
	m := func(kind prometheus.ValueType, name, help string, value func(live.Stats) int64) hubMetric {
		return hubMetric{prometheus.NewDesc(name, help, nil, nil), kind, value}
	}
	return &hubCollector{stats: stats, metrics: []hubMetric{
		m(prometheus.GaugeValue, "mcpres_subscriptions_active", "Resource subscriptions held now.",
			func(s live.Stats) int64 { return int64(s.Subscriptions) }),
		m(prometheus.GaugeValue, "mcpres_subscribers_active", "Sessions (or, on a stateless server, subscriptions/listen streams) holding a resource subscription now.",
			func(s live.Stats) int64 { return int64(s.Sessions) }),
		m(prometheus.CounterValue, "mcpres_live_changes_total", "Changes reported by the change sources (a Postgres notification, a poll that found a change, a source's reconnect).",
			func(s live.Stats) int64 { return s.Changes }),
		m(prometheus.GaugeValue, "mcpres_live_checks_pending", "Subscriptions whose re-authorization after a change is due, waiting out its interval or running. 0: every change counted in the same scrape is handled.",
			func(s live.Stats) int64 { return int64(s.Pending) }),
		m(prometheus.CounterValue, "mcpres_live_notifications_total", "notifications/resources/updated sent to subscribers.",
			func(s live.Stats) int64 { return s.Notified }),
	}}
}

// Describe sends the descriptors of c's metrics.
func (c *hubCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
}

// Collect sends c's metrics, all from one snapshot of the hub.
func (c *hubCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for _, m := range c.metrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, float64(m.value(s)))
	}
}
