package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// The nearest-rank percentile: p50 of 1..4 is 2, p99 of 1..100 is 99.
func TestPercentileIsNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i))
	}
	for p, want := range map[int]time.Duration{50: 50, 90: 90, 99: 99, 100: 100, 1: 1} {
		if got := percentile(ds, p); got != want {
			t.Errorf("p%d = %d, want %d", p, got, want)
		}
	}
	if got := percentile(ds[96:], 50); got != 2 {
		t.Errorf("p50 of 4,3,2,1 = %d, want 2", got)
	}
}

// A peer's answer is right only when it holds the body as a JSON string:
// the rows array as server-postgres writes it passes, a row whose value
// differs by one byte does not.
func TestPeerAnswerHoldsTheBodyAsAJSONString(t *testing.T) {
	body := `{"project" : "handbook", "title" : "A <b>&</b> 'x'"}`
	rows, err := json.MarshalIndent([]map[string]string{{"body": body}}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	// Node's JSON.stringify does not escape <, > and &.
	answer := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(rows))
	if !strings.Contains(answer, jsonString(body)) {
		t.Errorf("answer %s does not hold %s", answer, jsonString(body))
	}
	if strings.Contains(answer, jsonString(strings.Replace(body, "handbook", "handbooc", 1))) {
		t.Error("an answer with another body passes the check")
	}
}

// Every run is bounded and loopback only.
func TestFlagsRefuseUnboundedOrRemoteRuns(t *testing.T) {
	base := []string{"--server", "x", "--postgres", "postgres://u@127.0.0.1:5432/db"}
	if _, err := parseFlags(base, io.Discard); err != nil {
		t.Fatalf("loopback run refused: %v", err)
	}
	for _, extra := range [][]string{
		{"--postgres", "postgres://u@192.0.2.1:5432/db"},
		{"--bucket-endpoint", "http://example.com:9000"},
		{"--calls", "0"},
		{"--calls", "1000000"},
		{"--starts", "1000"},
		{"--call-timeout", "0s"},
		{"--max-time", "2h"},
	} {
		if _, err := parseFlags(append(append([]string{}, base...), extra...), io.Discard); err == nil {
			t.Errorf("%v accepted", extra)
		}
	}
}

// The peers' statement quotes its literals.
func TestPeerStatementQuotesLiterals(t *testing.T) {
	s := peerStatement("hand'book", "w")
	if !strings.Contains(s, `a.project_id = 'hand''book' AND a.id = 'w'`) {
		t.Errorf("statement: %s", s)
	}
}
