package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// One resource's unusable grant rows are counted every time and logged at
// most once per grantWarnEvery, with the rows held back in between; each
// resource has its own limit.
func TestUnusableGrantsAreRateLimitedPerResource(t *testing.T) {
	var out bytes.Buffer
	u := newUnusableGrants(slog.New(slog.NewTextHandler(&out, nil)))
	now := time.Unix(1e9, 0)
	u.now = func() time.Time { return now }
	u.seen("report", 3)
	u.seen("report", 3)
	u.seen("reports", 1)
	now = now.Add(grantWarnEvery - time.Second)
	u.seen("report", 2)
	now = now.Add(time.Second)
	u.seen("report", 4)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{"resource=report rows=3", "resource=reports rows=1", "resource=report rows=9"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], "level=WARN") || !strings.Contains(lines[i], w) {
			t.Errorf("line %d %q lacks %q", i, lines[i], w)
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(u.counter)
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 {
		t.Fatalf("gather: %v, %d families", err, len(mfs))
	}
	var n float64
	for _, m := range mfs[0].GetMetric() {
		if m.GetLabel()[0].GetValue() == "report" {
			n = m.GetCounter().GetValue()
		}
	}
	if n != 12 {
		t.Errorf(`counter{resource="report"} = %v, want 12`, n)
	}
}
