// Package benchpage runs the module's benchmarks and writes BENCHMARKS.md
// from one run: it holds the list of benchmarks ([Entries]), the parsers
// of their raw outputs (`go test -bench`, scripts/load-ab.sh, cmd/mcp-load,
// cmd/mcp-peers) and the page's tables. scripts/bench.sh runs it.
package benchpage

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"strings"
)

// maxLine bounds one line of a raw output; longer lines are skipped.
const maxLine = 1 << 16

// Metric is one value a benchmark reported, with its unit (ns/op, B/op,
// cpu-ns/op, req/s, ...).
type Metric struct {
	Value float64
	Unit  string
}

// BenchResult is one result line of `go test -bench`: the benchmark's
// name without its GOMAXPROCS suffix, its iterations and its metrics in
// the order printed.
type BenchResult struct {
	Name    string
	Procs   int
	Iters   int64
	Metrics []Metric
}

// Value returns the metric of r in unit, and whether r reported it.
func (r BenchResult) Value(unit string) (float64, bool) {
	for _, m := range r.Metrics {
		if m.Unit == unit {
			return m.Value, true
		}
	}
	return 0, false
}

// Skip is a benchmark that skipped itself, with the first line of its
// reason.
type Skip struct {
	Name   string
	Reason string
}

// BenchOutput is what [ParseGoBench] found in one output.
type BenchOutput struct {
	Results []BenchResult
	Skips   []Skip
}

// ParseGoBench reads the output of `go test -bench` (any number of
// packages and -count runs, with test logs mixed in) and returns its
// result lines and skipped benchmarks. Lines that are not results are
// ignored; a result line with a non-finite value or a unit without a value
// is ignored as a whole. It fails only when r does.
func ParseGoBench(r io.Reader) (BenchOutput, error) {
	var out BenchOutput
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxLine)
	var skipping string
	for sc.Scan() {
		line := sc.Text()
		if skipping != "" {
			reason := strings.TrimSpace(line)
			indented := strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")
			if indented && reason != "" && !strings.HasPrefix(reason, "---") {
				// "file_test.go:12: needs ..." -> "needs ..."
				if i := strings.Index(reason, ": "); i > 0 && strings.Contains(reason[:i], ".go:") {
					reason = reason[i+2:]
				}
				out.Skips = append(out.Skips, Skip{Name: skipping, Reason: reason})
				skipping = ""
				continue
			}
			out.Skips = append(out.Skips, Skip{Name: skipping})
			skipping = ""
		}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "--- SKIP: "); ok {
			name, _, _ := strings.Cut(rest, " ")
			if strings.HasPrefix(name, "Benchmark") {
				skipping = name
			}
			continue
		}
		if res, ok := parseResult(line); ok {
			out.Results = append(out.Results, res)
		}
	}
	if skipping != "" {
		out.Skips = append(out.Skips, Skip{Name: skipping})
	}
	return out, sc.Err()
}

// parseResult parses "BenchmarkX/sub-2   1000   123 ns/op   45 B/op".
func parseResult(line string) (BenchResult, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || len(f)%2 != 0 || !strings.HasPrefix(f[0], "Benchmark") {
		return BenchResult{}, false
	}
	iters, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || iters <= 0 {
		return BenchResult{}, false
	}
	res := BenchResult{Name: f[0], Procs: 1, Iters: iters}
	if i := strings.LastIndexByte(f[0], '-'); i > 0 {
		if p, err := strconv.Atoi(f[0][i+1:]); err == nil && p > 0 {
			res.Name, res.Procs = f[0][:i], p
		}
	}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return BenchResult{}, false
		}
		res.Metrics = append(res.Metrics, Metric{Value: v, Unit: f[i+1]})
	}
	return res, true
}
