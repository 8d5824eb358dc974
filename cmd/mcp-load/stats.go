package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// stats collects what one phase's requests did: latencies, outcomes by
// kind, unexpected outcomes and wrong answers.
type stats struct {
	mu         sync.Mutex
	lat        [numOps][]time.Duration
	tally      map[string]int
	unexpected map[string]int
	wrong      []string // the first few, for the report
	nWrong     int
	requests   int
}

func newStats() *stats {
	return &stats{tally: map[string]int{}, unexpected: map[string]int{}}
}

// maxWrongKept bounds the wrong answers quoted in the report.
const maxWrongKept = 20

// add records one response.
func (s *stats) add(o op, d time.Duration, v verdict) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	s.lat[o] = append(s.lat[o], d)
	s.tally[v.outcome]++
	if v.unexpected != "" {
		s.unexpected[v.unexpected]++
	}
	for _, w := range v.wrong {
		s.nWrong++
		if len(s.wrong) < maxWrongKept {
			s.wrong = append(s.wrong, w)
		}
	}
}

// counts returns the number of requests, unexpected outcomes and wrong
// answers so far.
func (s *stats) counts() (requests, unexpected, wrong int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.unexpected {
		unexpected += n
	}
	return s.requests, unexpected, s.nWrong
}

// summary is the outcome of one phase, ready to print or write as CSV.
type summary struct {
	name       string
	clients    int
	elapsed    time.Duration
	requests   int
	throughput float64 // requests per second
	p50, p95   time.Duration
	p99, max   time.Duration
	byOp       [numOps]opSummary
	tally      map[string]int
	unexpected map[string]int
	wrong      []string
	nWrong     int
}

type opSummary struct {
	n             int
	p50, p95, p99 time.Duration
}

// percentile returns the p-th percentile (0 < p <= 100) of sorted samples
// by the nearest-rank method.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[max(0, min(rank, len(sorted)-1))]
}

func (s *stats) summarize(name string, clients int, elapsed time.Duration) summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := summary{name: name, clients: clients, elapsed: elapsed, requests: s.requests,
		tally: maps.Clone(s.tally), unexpected: maps.Clone(s.unexpected), wrong: slices.Clone(s.wrong), nWrong: s.nWrong}
	var all []time.Duration
	for o := range numOps {
		l := slices.Clone(s.lat[o])
		slices.Sort(l)
		sum.byOp[o] = opSummary{n: len(l), p50: percentile(l, 50), p95: percentile(l, 95), p99: percentile(l, 99)}
		all = append(all, l...)
	}
	slices.Sort(all)
	sum.p50, sum.p95, sum.p99 = percentile(all, 50), percentile(all, 95), percentile(all, 99)
	if len(all) > 0 {
		sum.max = all[len(all)-1]
	}
	if elapsed > 0 {
		sum.throughput = float64(s.requests) / elapsed.Seconds()
	}
	return sum
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

// print writes the phase's summary.
func (s summary) print(w io.Writer) {
	fmt.Fprintf(w, "phase %s: %d clients, %.1fs, %d requests, %.1f req/s\n", s.name, s.clients, s.elapsed.Seconds(), s.requests, s.throughput)
	fmt.Fprintf(w, "  latency ms: p50 %s  p95 %s  p99 %s  max %s\n", ms(s.p50), ms(s.p95), ms(s.p99), ms(s.max))
	for o := range numOps {
		b := s.byOp[o]
		if b.n > 0 {
			fmt.Fprintf(w, "    %-8s %7d requests  p50 %s  p95 %s  p99 %s\n", op(o), b.n, ms(b.p50), ms(b.p95), ms(b.p99))
		}
	}
	fmt.Fprintf(w, "  responses by kind: %s\n", formatCounts(s.tally))
	nUnexpected := 0
	for _, n := range s.unexpected {
		nUnexpected += n
	}
	fmt.Fprintf(w, "  unexpected: %d", nUnexpected)
	if nUnexpected > 0 {
		fmt.Fprintf(w, " (%s)", formatCounts(s.unexpected))
	}
	fmt.Fprintf(w, "\n  wrong: %d\n", s.nWrong)
	for _, x := range s.wrong {
		fmt.Fprintf(w, "    WRONG %s\n", x)
	}
}

// formatCounts prints a tally as "key=n, ..." in descending count order.
func formatCounts(m map[string]int) string {
	keys := slices.Collect(maps.Keys(m))
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// csvHeader and csvRow write one summary per line, for the plot.
const csvHeader = "clients,seconds,requests,throughput_rps,p50_ms,p95_ms,p99_ms,max_ms,unexpected,wrong\n"

func (s summary) csvRow() string {
	n := 0
	for _, c := range s.unexpected {
		n += c
	}
	return fmt.Sprintf("%d,%.1f,%d,%.1f,%s,%s,%s,%s,%d,%d\n", s.clients, s.elapsed.Seconds(), s.requests, s.throughput,
		ms(s.p50), ms(s.p95), ms(s.p99), ms(s.max), n, s.nWrong)
}

// medianOf returns a summary whose figures (throughput and each latency
// percentile, taken one by one) are the medians of runs, with their total
// requests, unexpected outcomes and wrong answers.
func medianOf(runs []summary) summary {
	if len(runs) == 1 {
		return runs[0]
	}
	med := func(f func(summary) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	out := summary{name: runs[0].name, clients: runs[0].clients, unexpected: map[string]int{}}
	for _, r := range runs {
		out.elapsed += r.elapsed
		out.requests += r.requests
		out.nWrong += r.nWrong
		for k, n := range r.unexpected {
			out.unexpected[k] += n
		}
	}
	out.throughput = med(func(r summary) float64 { return r.throughput })
	d := func(f func(summary) time.Duration) time.Duration {
		return time.Duration(med(func(r summary) float64 { return float64(f(r)) }))
	}
	out.p50 = d(func(r summary) time.Duration { return r.p50 })
	out.p95 = d(func(r summary) time.Duration { return r.p95 })
	out.p99 = d(func(r summary) time.Duration { return r.p99 })
	out.max = d(func(r summary) time.Duration { return r.max })
	return out
}
