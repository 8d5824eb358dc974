package benchpage

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

// FuzzParseGoBench: any input parses without panicking; every result has
// a Benchmark name, iterations and finite metrics, and printed again as
// go test prints it, parses to itself.
func FuzzParseGoBench(f *testing.F) {
	f.Add(sampleBench)
	f.Add("BenchmarkX-8 \t 10 \t 1.5e3 ns/op\n--- SKIP: BenchmarkY\n\tskip\n")
	f.Add("BenchmarkX- 1 1 x\nBenchmark 0 1 ns/op\n")
	f.Fuzz(func(t *testing.T, in string) {
		gb, err := ParseGoBench(strings.NewReader(in))
		if err != nil {
			return // a line over the bound
		}
		for _, r := range gb.Results {
			if !strings.HasPrefix(r.Name, "Benchmark") || r.Iters <= 0 || r.Procs <= 0 || len(r.Metrics) == 0 {
				t.Fatalf("bad result %+v", r)
			}
			line := fmt.Sprintf("%s-%d\t%d", r.Name, r.Procs, r.Iters)
			for _, m := range r.Metrics {
				if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) || m.Unit == "" {
					t.Fatalf("bad metric %+v", m)
				}
				line += fmt.Sprintf("\t%v %s", m.Value, m.Unit)
			}
			again, _ := ParseGoBench(strings.NewReader(line))
			if len(again.Results) != 1 || fmt.Sprint(again.Results[0]) != fmt.Sprint(r) {
				t.Fatalf("%q parses to %+v, printed %q parses to %+v", in, r, line, again.Results)
			}
		}
		// The table of any output is well formed.
		tb := goBenchTable(Entry{Sibling: "raw", Ratio: [2]string{"ns/op", "B/op"}}, gb)
		for _, row := range tb.rows {
			if len(row) != len(tb.head) {
				t.Fatalf("row %q under head %q", row, tb.head)
			}
		}
	})
}

// FuzzParseTools: the parsers of the tools' outputs and of run.txt take
// any input without panicking, and what they return renders.
func FuzzParseTools(f *testing.F) {
	for _, name := range []string{"load-ab.txt", "load.txt", "peers.txt"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	var ri bytes.Buffer
	_ = RunInfo{Commit: "abc1234", Outcomes: []Outcome{{"x", 1, 2, true}}}.Write(&ri)
	f.Add(ri.String())
	f.Fuzz(func(t *testing.T, in string) {
		if runs, err := ParseLoadAB(strings.NewReader(in)); err == nil {
			_ = loadABTable(runs, Entry{Kinds: []string{"index", "list"}, RSS: true}).String()
		}
		if run, err := ParseLoad(strings.NewReader(in)); err == nil {
			_ = loadTable(run).String()
		}
		if rows, err := ParsePeers(strings.NewReader(in)); err == nil {
			_ = peersTable(rows).String()
		}
		got, err := ParseRunInfo(strings.NewReader(in))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := got.Write(&b); err != nil {
			t.Fatal(err)
		}
		again, _ := ParseRunInfo(&b)
		if fmt.Sprint(again) != fmt.Sprint(got) {
			t.Fatalf("run info %+v written and read again is %+v", got, again)
		}
		for _, e := range Entries {
			Build(e, []byte(in), Outcome{}, true)
		}
	})
}
