package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
)

// snapshot is the server's resource use at one instant.
type snapshot struct {
	goroutines int // the server's, from its /metrics (go_goroutines)
	pgConns    int // client backends on the driver's database, but the driver's own
	httpConns  int // established TCP connections to the server's port, server side
	sessions   int // the server's open MCP sessions (mcpres_sessions_active)
	// requests counts the resource requests the server answered so far,
	// by outcome (complete, partial, failed), from mcpres_requests_total.
	requests map[string]int
	// handled is the time the server spent in its handler so far, by
	// method, from mcpres_request_duration_seconds (its _sum and _count).
	handled map[string]handling
}

// handling is the server's own time on the requests of one method: from
// the adapter's handler receiving the request to its answer, without the
// HTTP exchange, the SDK's decoding and encoding and the wait for a CPU
// before and after.
type handling struct {
	seconds  float64
	requests int
}

// served returns the requests the server answered between before and s,
// in all and by outcome.
func (s snapshot) served(before snapshot) (int, map[string]int) {
	total, by := 0, map[string]int{}
	for k, v := range s.requests {
		if n := v - before.requests[k]; n != 0 {
			by[k] = n
			total += n
		}
	}
	return total, by
}

// peak returns the larger of each measure of s and o.
func (s snapshot) peak(o snapshot) snapshot {
	return snapshot{goroutines: max(s.goroutines, o.goroutines), pgConns: max(s.pgConns, o.pgConns),
		httpConns: max(s.httpConns, o.httpConns), sessions: max(s.sessions, o.sessions)}
}

func (s snapshot) String() string {
	return fmt.Sprintf("goroutines %d, postgres connections %d, http connections %d, mcp sessions %d",
		s.goroutines, s.pgConns, s.httpConns, s.sessions)
}

// goroutineSlack is how many goroutines above the baseline still count as
// back at baseline: the runtime and the HTTP server keep a few short-lived
// ones (a connection's background read, a timer) that come and go.
const goroutineSlack = 3

// atBaseline reports whether s uses no more than base (within
// goroutineSlack for goroutines).
func (s snapshot) atBaseline(base snapshot) bool {
	return s.goroutines <= base.goroutines+goroutineSlack && s.pgConns <= base.pgConns &&
		s.httpConns <= base.httpConns && s.sessions <= base.sessions
}

// metrics returns the server's /metrics text (at most 4 MiB).
func (srv *server) metrics() ([]byte, error) {
	resp, err := srv.hc.Get("http://" + srv.Addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(io.LimitReader(resp.Body, 4<<20))
}

// take measures the server now.
func (srv *server) take(ctx context.Context, db *database) (snapshot, error) {
	var s snapshot
	body, err := srv.metrics()
	if err != nil {
		return s, err
	}
	m, err := parseMetrics(bytes.NewReader(body), "go_goroutines", "mcpres_sessions_active")
	if err != nil {
		return s, err
	}
	s.goroutines, s.sessions = int(m["go_goroutines"]), int(m["mcpres_sessions_active"])
	s.requests = requestsByOutcome(body)
	s.handled = handledByMethod(body)
	if s.pgConns, err = db.clientConns(ctx); err != nil {
		return s, err
	}
	_, port, _ := net.SplitHostPort(srv.Addr)
	p, _ := strconv.Atoi(port)
	s.httpConns, err = establishedTo(p)
	return s, err
}

// parseMetrics reads the named unlabelled samples of a Prometheus text
// exposition.
func parseMetrics(r io.Reader, names ...string) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		for _, n := range names {
			if f[0] == n {
				v, err := strconv.ParseFloat(f[1], 64)
				if err != nil {
					return nil, fmt.Errorf("metric %s: %w", n, err)
				}
				out[n] = v
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("/metrics has no %s", n)
		}
	}
	return out, nil
}

// requestsByOutcome sums the server's mcpres_requests_total samples by
// their outcome label.
func requestsByOutcome(metrics []byte) map[string]int {
	out := map[string]int{}
	eachSample(metrics, "mcpres_requests_total", func(labels string, v float64) {
		out[label(labels, "outcome")] += int(v)
	})
	return out
}

// handledByMethod sums the _sum and _count samples of the server's
// mcpres_request_duration_seconds by their method label.
func handledByMethod(metrics []byte) map[string]handling {
	out := map[string]handling{}
	add := func(labels string, seconds float64, requests int) {
		m := label(labels, "method")
		h := out[m]
		h.seconds, h.requests = h.seconds+seconds, h.requests+requests
		out[m] = h
	}
	eachSample(metrics, "mcpres_request_duration_seconds_sum", func(labels string, v float64) { add(labels, v, 0) })
	eachSample(metrics, "mcpres_request_duration_seconds_count", func(labels string, v float64) { add(labels, 0, int(v)) })
	return out
}

// eachSample calls fn with the labels and the value of each labelled
// sample of the metric name in a Prometheus text exposition.
func eachSample(metrics []byte, name string, fn func(labels string, v float64)) {
	for _, line := range strings.Split(string(metrics), "\n") {
		rest, ok := strings.CutPrefix(line, name+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			fn(labels, v)
		}
	}
}

// label returns the value of key in a sample's labels, "" without it.
func label(labels, key string) string {
	_, after, ok := strings.Cut(labels, key+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, `"`)
	return v
}

// handledSince formats the server's mean time in its handler per request
// of each method between before and s, in ms, methods in byte order.
func (s snapshot) handledSince(before snapshot) string {
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(s.handled)) {
		h, b := s.handled[m], before.handled[m]
		if n := h.requests - b.requests; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %.3f (%d)", m, (h.seconds-b.seconds)*1000/float64(n), n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// establishedTo counts the established TCP sockets whose local port is
// port (the server's side of its connections), from /proc/net/tcp and
// /proc/net/tcp6.
func establishedTo(port int) (int, error) {
	n := 0
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		c, err := countEstablished(f, port)
		if err != nil && !os.IsNotExist(err) {
			return 0, err
		}
		n += c
	}
	return n, nil
}

func countEstablished(path string, port int) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return countEstablishedIn(f, port)
}

// countEstablishedIn counts the lines of a /proc/net/tcp table in state
// 01 (ESTABLISHED) whose local address has port.
func countEstablishedIn(r io.Reader, port int) (int, error) {
	want := fmt.Sprintf(":%04X", port)
	n := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[0] == "sl" {
			continue
		}
		if strings.HasSuffix(f[1], want) && f[3] == "01" {
			n++
		}
	}
	return n, sc.Err()
}
