package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCountEstablishedInCountsTheServerSideOfItsPortOnly(t *testing.T) {
	// Port 40369 is 9DB1. Rows: server side established (2), client side of
	// the same connection (remote port 9DB1), the listener (state 0A), and
	// a TIME_WAIT (06).
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:9DB1 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:9DB1 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:C350 0100007F:9DB1 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:9DB1 0100007F:C351 01 00000000:00000000 00:00000000 00000000     0        0 4 1 0000000000000000 20 4 30 10 -1
   4: 0100007F:9DB1 0100007F:C352 06 00000000:00000000 00:00000000 00000000     0        0 0 3 0000000000000000
`
	n, err := countEstablishedIn(strings.NewReader(table), 40369)
	if err != nil || n != 2 {
		t.Fatalf("countEstablishedIn = %d, %v: want 2", n, err)
	}
}

func TestParseMetricsReadsUnlabelledSamplesAndNamesAMissingOne(t *testing.T) {
	text := "# HELP go_goroutines Number of goroutines.\n# TYPE go_goroutines gauge\ngo_goroutines 12\n" +
		"mcpres_requests_total{method=\"resources/read\"} 3\nmcpres_sessions_active 2\n"
	m, err := parseMetrics(strings.NewReader(text), "go_goroutines", "mcpres_sessions_active")
	if err != nil || m["go_goroutines"] != 12 || m["mcpres_sessions_active"] != 2 {
		t.Fatalf("parseMetrics = %v, %v", m, err)
	}
	if _, err := parseMetrics(strings.NewReader(text), "go_threads"); err == nil || !strings.Contains(err.Error(), "go_threads") {
		t.Fatalf("a missing metric: %v", err)
	}
}

func TestPercentileIsNearestRank(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 100; i++ {
		s = append(s, time.Duration(i))
	}
	for p, want := range map[float64]time.Duration{50: 50, 95: 95, 99: 99, 100: 100, 0.5: 1} {
		if got := percentile(s, p); got != want {
			t.Errorf("p%v = %d, want %d", p, got, want)
		}
	}
	if percentile(nil, 50) != 0 || percentile([]time.Duration{7}, 99) != 7 {
		t.Error("percentile of no or one sample")
	}
}

func TestSnapshotAtBaselineAllowsOnlyGoroutineSlack(t *testing.T) {
	base := snapshot{goroutines: 10, pgConns: 4, httpConns: 0, sessions: 0}
	for _, c := range []struct {
		s    snapshot
		want bool
	}{
		{base, true},
		{snapshot{goroutines: 10 + goroutineSlack, pgConns: 2}, true},
		{snapshot{goroutines: 11 + goroutineSlack, pgConns: 4}, false},
		{snapshot{goroutines: 10, pgConns: 5}, false},
		{snapshot{goroutines: 10, pgConns: 4, httpConns: 1}, false},
		{snapshot{goroutines: 10, pgConns: 4, sessions: 1}, false},
	} {
		if got := c.s.atBaseline(base); got != c.want {
			t.Errorf("%v at baseline %v: %v, want %v", c.s, base, got, c.want)
		}
	}
}

func TestFlagsRefuseNonLoopbackAndUnboundedRuns(t *testing.T) {
	t.Setenv("MCPRES_POSTGRES_URL", "")
	t.Setenv("MCPRES_VERSITYGW", "/bin/true")
	for _, args := range [][]string{
		{}, // no --postgres
		{"--postgres=postgres://u@127.0.0.1/db", "--clients=0"},
		{"--postgres=postgres://u@127.0.0.1/db", "--clients=100000"},
		{"--postgres=postgres://u@127.0.0.1/db", "--duration=1h"},
		{"--postgres=postgres://u@127.0.0.1/db", "--faults", "--sweep=1,2"},
		{"--postgres=postgres://u@127.0.0.1/db", "--sweep=1,x"},
		{"--postgres=postgres://u@127.0.0.1/db", "--standby=postgres://u@192.0.2.1:5432/db"},
		{"--postgres=postgres://u@127.0.0.1/db", "--standby=http://127.0.0.1/db"},
		{"--postgres=postgres://u@127.0.0.1/db", "--sessions=-1"},
		{"--postgres=postgres://u@127.0.0.1/db", "--sessions=100000"},
		{"--postgres=postgres://u@127.0.0.1/db", "--sessions=10", "--faults"},
		{"--postgres=postgres://u@127.0.0.1/db", "--sessions=10", "--sweep=1"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
	if _, err := createDatabase(context.Background(), "postgres://u@192.0.2.1:5432/db"); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("a non-loopback database host: %v", err)
	}
	for _, h := range []string{"127.0.0.1", "localhost", "::1", "127.3.4.5"} {
		if err := loopbackOnly("x", h); err != nil {
			t.Errorf("loopbackOnly(%q): %v", h, err)
		}
	}
}

func TestServedCountsTheServersRequestsBetweenTwoSnapshots(t *testing.T) {
	metrics := func(complete, failed int) []byte {
		return []byte("# TYPE mcpres_requests_total counter\n" +
			"mcpres_requests_total{kind=\"\",method=\"resources/read\",outcome=\"complete\"} " + strconv.Itoa(complete) + "\n" +
			"mcpres_requests_total{kind=\"\",method=\"resources/list\",outcome=\"complete\"} 1\n" +
			"mcpres_requests_total{kind=\"unavailable\",method=\"resources/read\",outcome=\"failed\"} " + strconv.Itoa(failed) + "\n" +
			"mcpres_request_duration_seconds_count{method=\"resources/read\",outcome=\"complete\"} 99\n")
	}
	before := snapshot{requests: requestsByOutcome(metrics(10, 0))}
	after := snapshot{requests: requestsByOutcome(metrics(25, 3))}
	n, by := after.served(before)
	if n != 18 || by["complete"] != 15 || by["failed"] != 3 || len(by) != 2 {
		t.Fatalf("served = %d %v: want 18 (complete 15, failed 3)", n, by)
	}
}

func TestMedianOfTakesEachFiguresMedianAndSumsTheCounts(t *testing.T) {
	runs := []summary{
		{clients: 8, elapsed: time.Second, requests: 100, throughput: 100, p50: 3, p95: 30, p99: 90, unexpected: map[string]int{}},
		{clients: 8, elapsed: time.Second, requests: 300, throughput: 300, p50: 1, p95: 10, p99: 70, nWrong: 1, unexpected: map[string]int{"x": 2}},
		{clients: 8, elapsed: time.Second, requests: 200, throughput: 200, p50: 2, p95: 20, p99: 80, unexpected: map[string]int{}},
	}
	m := medianOf(runs)
	if m.throughput != 200 || m.p50 != 2 || m.p95 != 20 || m.p99 != 80 || m.requests != 600 || m.nWrong != 1 || m.unexpected["x"] != 2 {
		t.Fatalf("medianOf = %+v", m)
	}
	if !strings.HasPrefix(m.csvRow(), "8,3.0,600,200.0,") {
		t.Fatalf("csv row %q", m.csvRow())
	}
}

func TestHandledSinceIsTheMeanOfEachMethodOverThePhase(t *testing.T) {
	text := func(listSum, readSum float64, lists, reads int) []byte {
		return fmt.Appendf(nil, "# TYPE mcpres_request_duration_seconds histogram\n"+
			"mcpres_request_duration_seconds_bucket{method=\"resources/list\",outcome=\"complete\",le=\"0.0005\"} %d\n"+
			"mcpres_request_duration_seconds_sum{method=\"resources/list\",outcome=\"complete\"} %g\n"+
			"mcpres_request_duration_seconds_count{method=\"resources/list\",outcome=\"complete\"} %d\n"+
			"mcpres_request_duration_seconds_sum{method=\"resources/read\",outcome=\"complete\"} %g\n"+
			"mcpres_request_duration_seconds_count{method=\"resources/read\",outcome=\"complete\"} %d\n"+
			"mcpres_request_duration_seconds_sum{method=\"resources/read\",outcome=\"failed\"} 1\n"+
			"mcpres_request_duration_seconds_count{method=\"resources/read\",outcome=\"failed\"} 1\n"+
			"mcpres_store_call_duration_seconds_sum{store=\"postgres\",op=\"read\"} 9\n",
			lists, listSum, lists, readSum, reads)
	}
	before := snapshot{handled: handledByMethod(text(0.5, 10, 100, 40))}
	// The phase: 50 more lists in 10 ms, 20 more reads in 1 s; the failed
	// read's second and the store's series count before and after alike.
	after := snapshot{handled: handledByMethod(text(0.51, 11, 150, 60))}
	if got, want := after.handledSince(before), "resources/list 0.200 (50), resources/read 50.000 (20)"; got != want {
		t.Fatalf("handledSince = %q, want %q", got, want)
	}
	if got := before.handledSince(before); got != "none" {
		t.Fatalf("no request in the phase: %q", got)
	}
}
