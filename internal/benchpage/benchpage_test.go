package benchpage

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const sampleBench = `goos: linux
pkg: go.phpboyscout.uk/mcp/resources/integration
BenchmarkPGStoreOneRow/gateway-2         	    4023	    297662 ns/op	    166164 cpu-ns/op	    8806 B/op	     180 allocs/op
BenchmarkPGStoreOneRow/raw-2             	   40000	     30000 ns/op	     20000 cpu-ns/op	     860 B/op	      11 allocs/op
    pgstore_test.go:12: a log line
BenchmarkPGStoreOneRow/gateway-2         	    4986	    300000 ns/op	    180000 cpu-ns/op	    8778 B/op	     180 allocs/op
BenchmarkPGStoreOneRow/raw-2             	   40000	    100000 ns/op	     20000 cpu-ns/op	     860 B/op	      11 allocs/op
BenchmarkBroken-2   	 12	  NaN ns/op
BenchmarkOdd-2   	 12	  5 ns/op 7
BenchmarkExecToFirstRead 	      15	 106600000 ns/op	        88.30 ms-median-base	       106.6 ms-median-this
--- SKIP: BenchmarkOAuthBodyRead
    oauth_bench_test.go:33: needs the Hydra of scripts/services.sh
--- SKIP: BenchmarkFleetScaling
PASS
`

func TestParseGoBench(t *testing.T) {
	gb, err := ParseGoBench(strings.NewReader(sampleBench))
	if err != nil {
		t.Fatal(err)
	}
	if len(gb.Results) != 5 {
		t.Fatalf("results = %d, want 5 (NaN and odd lines dropped): %+v", len(gb.Results), gb.Results)
	}
	r := gb.Results[0]
	if r.Name != "BenchmarkPGStoreOneRow/gateway" || r.Procs != 2 || r.Iters != 4023 || len(r.Metrics) != 4 {
		t.Errorf("first = %+v", r)
	}
	if v, ok := r.Value("cpu-ns/op"); !ok || v != 166164 {
		t.Errorf("cpu-ns/op = %v, %v", v, ok)
	}
	last := gb.Results[4]
	if last.Name != "BenchmarkExecToFirstRead" || last.Procs != 1 {
		t.Errorf("no procs suffix: %+v", last)
	}
	if v, _ := last.Value("ms-median-base"); v != 88.3 {
		t.Errorf("ms-median-base = %v", v)
	}
	want := []Skip{{"BenchmarkOAuthBodyRead", "needs the Hydra of scripts/services.sh"}, {"BenchmarkFleetScaling", ""}}
	if len(gb.Skips) != 2 || gb.Skips[0] != want[0] || gb.Skips[1] != want[1] {
		t.Errorf("skips = %+v, want %+v", gb.Skips, want)
	}
}

func TestGoBenchTablePairsRunsWithTheSibling(t *testing.T) {
	gb, _ := ParseGoBench(strings.NewReader(sampleBench))
	e := Entry{Sibling: "raw", Units: []string{"ns/op", "allocs/op", "missing/op"}}
	tb := goBenchTable(e, gb)
	if got := strings.Join(tb.head, ","); got != "benchmark,µs/op,allocs/op,time x raw,CPU x raw,runs" {
		t.Fatalf("head = %s", got)
	}
	gw := tb.rows[0]
	// Medians: (297.662+300)/2 µs; per-run ratios 9.92 and 3.00 (median
	// 6.46), not the ratio of the medians (298.8/65 = 4.60).
	if gw[1] != "299" || gw[2] != "180" || gw[3] != "6.46x (3.00-9.92)" || gw[4] != "8.65x (8.31-9.00)" || gw[5] != "2" {
		t.Errorf("gateway row = %q", gw)
	}
	if raw := tb.rows[1]; raw[3] != "" || raw[0] != "`PGStoreOneRow/raw`" {
		t.Errorf("raw row = %q", raw)
	}
}

func TestGoBenchTableRatioOfUnits(t *testing.T) {
	gb, _ := ParseGoBench(strings.NewReader(sampleBench))
	tb := goBenchTable(Entry{Units: []string{"ms-median-this"}, Ratio: [2]string{"ms-median-this", "ms-median-base"}}, gb)
	row := tb.rows[len(tb.rows)-1]
	if row[0] != "`ExecToFirstRead`" || row[1] != "107" || row[2] != "1.21x" {
		t.Errorf("row = %q", row)
	}
}

func TestBuildReportsWhatDidNotRun(t *testing.T) {
	e := Entry{Name: "x", Kind: GoBench}
	for _, c := range []struct {
		name    string
		e       Entry
		raw     string
		o       Outcome
		ran     bool
		ok      bool
		contain string
	}{
		{"pending", Entry{Pending: "no benchmark yet"}, "", Outcome{}, false, false, "not run: no benchmark yet"},
		{"not in the run", e, "", Outcome{}, false, false, "not run: not part of this run"},
		{"skipped", e, "--- SKIP: BenchmarkX\n    x_test.go:3: needs MCPRES_POSTGRES_URL\nPASS\n", Outcome{}, true, false, "not run: exit 0, skipped: needs MCPRES_POSTGRES_URL"},
		{"no such benchmark", e, "PASS\nok  \tpkg\t0.01s\n", Outcome{}, true, false, "not run: exit 0, ok pkg 0.01s"},
		{"tool missing", Entry{Kind: Peers}, "peers: error: need Node.js >= 22.5\n", Outcome{Exit: 2}, true, false, "not run: exit 2, peers: error: need Node.js >= 22.5"},
		{"timeout", e, "compiling\n", Outcome{Exit: -1, TimedOut: true, Seconds: 90}, true, false, "not run: stopped at its timeout after 90 s"},
		{"failed with results", e, sampleBench + "FAIL\n", Outcome{Exit: 1}, true, true, "failed: exit 1"},
		{"ok", e, sampleBench, Outcome{}, true, true, "ok"},
	} {
		var raw []byte
		if c.raw != "" {
			raw = []byte(c.raw)
		}
		tab, st := Build(c.e, raw, c.o, c.ran)
		if st.Ran != c.ok || !strings.Contains(st.Text, c.contain) || (tab != "") != c.ok {
			t.Errorf("%s: status %+v, table %d bytes; want ran=%v and %q", c.name, st, len(tab), c.ok, c.contain)
		}
	}
}

func TestParseLoadAB(t *testing.T) {
	runs := parseFile(t, "load-ab.txt", ParseLoadAB)
	if len(runs) != 10 {
		t.Fatalf("runs = %d, want 10", len(runs))
	}
	want := ABRun{Label: "old", RPS: 278.5, ServerCPU: 3.02, PGCPU: 1.90, Driver: 1.14}
	if !reflect.DeepEqual(runs[0], want) {
		t.Errorf("first = %+v, want %+v", runs[0], want)
	}
	tb := loadABTable(runs, Entry{Kinds: []string{"index"}, RSS: true})
	// Medians: old 278.5, 297.4, 326.0, 210.0, 216.0 -> 278.5; new 956.3,
	// 878.0, 757.2, 758.8, 612.5 -> 758.8.
	if r := tb.rows[0]; r[0] != "req/s" || r[3] != "2.72x" {
		t.Errorf("req/s row = %q", r)
	}
	if r := tb.rows[len(tb.rows)-1]; r[3] != "0, 0 of 10" || len(tb.rows) != 5 {
		t.Errorf("last row = %q of %d (runs without RSS or kinds: no rows for them)", r, len(tb.rows))
	}
}

// The script's memory and per-kind p50 figures: a row each, the medians'
// ratio; kinds not asked for get none.
func TestLoadABMemoryAndKinds(t *testing.T) {
	const out = `old     339.9 req/s  wrong 0  exit 0  server CPU/request 1.83 ms  PostgreSQL CPU/request 1.11 ms  driver CPU/request 0.86 ms  server RSS peak 41.2 MiB end 40.3 MiB  p50 ms index 14.92 body 16.31 object 16.93 joined 21.02 project 40.58 list 2.02  load 5.95 7.73
new     536.8 req/s  wrong 0  exit 0  server CPU/request 1.16 ms  PostgreSQL CPU/request 0.64 ms  driver CPU/request 0.66 ms  server RSS peak 47.1 MiB end 45.7 MiB  p50 ms index 7.08 body 7.69 object 17.78 joined 17.05 project 8.21 list 2.37  load 7.73 8.44
new     500.0 req/s  wrong 1  exit 1  server CPU/request 1.20 ms  PostgreSQL CPU/request 0.70 ms  driver CPU/request 0.70 ms  server RSS peak 49.1 MiB end 45.0 MiB  p50 ms  load 7.73 8.44
medians of 1 old and 2 new runs:
  p50 index ms                  14.92       7.08     0.47x
`
	runs, err := ParseLoadAB(strings.NewReader(out))
	if err != nil || len(runs) != 3 {
		t.Fatalf("runs = %+v, %v", runs, err)
	}
	if r := runs[1]; r.PeakRSS != 47.1 || r.EndRSS != 45.7 || len(r.P50) != 6 || r.P50["list"] != 2.37 || r.P50["index"] != 7.08 {
		t.Errorf("new run = %+v", r)
	}
	if runs[2].P50 != nil || runs[2].PeakRSS != 49.1 {
		t.Errorf("run without kinds = %+v", runs[2])
	}
	tb := loadABTable(runs, Entry{Kinds: []string{"index", "object", "missing"}, RSS: true})
	var names []string
	for _, r := range tb.rows {
		names = append(names, r[0])
	}
	if got := strings.Join(names, ","); got != "req/s,server CPU/request ms,PostgreSQL CPU/request ms,driver CPU/request ms,server peak RSS MiB,p50 index ms,p50 object ms,wrong answers, runs not exiting 0" {
		t.Fatalf("rows = %s", got)
	}
	if r := tb.rows[4]; r[1] != "41.2" || r[2] != "47.1, 49.1" || r[3] != "1.17x" {
		t.Errorf("RSS row = %q", r)
	}
	if r := tb.rows[5]; r[2] != "7.08" || r[3] != "0.47x" {
		t.Errorf("index row = %q", r)
	}
}

func TestParseLoad(t *testing.T) {
	run := parseFile(t, "load.txt", ParseLoad)
	if run.Result != "PASS" || len(run.Phases) != 2 {
		t.Fatalf("run = %+v", run)
	}
	p := run.Phases[1]
	if p.Name != "load" || p.Clients != 64 || p.Requests != 30975 || p.RPS != 515.4 || p.P99 != 458.28 || len(p.Kinds) != 6 {
		t.Errorf("load phase = %+v", p)
	}
	if k := p.Kinds[1]; k != (KindLatency{"body", 7354, 86.38, 116.52, 129.25}) {
		t.Errorf("body = %+v", k)
	}
	tb := loadTable(run)
	if len(tb.rows) != 8 || tb.rows[0][0] != "load" || tb.rows[7][0] != "verdict: PASS" {
		t.Errorf("rows = %q", tb.rows)
	}
}

func TestParsePeers(t *testing.T) {
	rows := parseFile(t, "peers.txt", ParsePeers)
	if len(rows) != 4 {
		t.Fatalf("rows = %+v", rows)
	}
	want := PeerRow{Server: "server-postgres", Calls: 2000, P50: 2.140, P90: 4.188, P99: 14.951, CPU: 1.495, StartMS: 223.918}
	if rows[2] != want {
		t.Errorf("server-postgres = %+v, want %+v", rows[2], want)
	}
	tb := peersTable(rows)
	if r := tb.rows[2]; r[9] != "0.86x" || r[8] != "224" || len(r) != 10 {
		t.Errorf("row = %q (no memory printed: no memory columns)", r)
	}
}

// The processes' memory after the calls: two columns, empty for a server
// whose memory is unknown.
func TestParsePeersMemory(t *testing.T) {
	const out = `server             calls   wrong  failed          p50          p90          p99 process CPU/call
ours                 300       0       0     1.499 ms     1.927 ms     3.869 ms       1.300 ms
baseline             300       0       0     2.953 ms     4.186 ms     6.152 ms       2.433 ms
dbhub                300       0       0     2.397 ms     3.199 ms     6.769 ms       1.867 ms
(wrong and failed are of all calls, the warm-up's included)

server memory after the calls (/proc/PID/status: VmHWM the peak, VmRSS now):
  ours                 41.2 MiB peak     40.9 MiB now: files 25.0 MiB, anonymous 15.9 MiB
  baseline             29.7 MiB peak     29.7 MiB now
  dbhub            unknown
`
	rows, err := ParsePeers(strings.NewReader(out))
	if err != nil || len(rows) != 3 {
		t.Fatalf("rows = %+v, %v", rows, err)
	}
	if rows[0].PeakRSS != 41.2 || rows[0].RSS != 40.9 || rows[0].FileRSS != 25 || rows[0].AnonRSS != 15.9 || rows[1].FileRSS != 0 || rows[2].PeakRSS != 0 {
		t.Errorf("rows = %+v", rows)
	}
	tb := peersTable(rows)
	if h := tb.head[len(tb.head)-2:]; h[0] != "peak RSS MiB" || h[1] != "RSS MiB" {
		t.Errorf("head = %q", tb.head)
	}
	if r := tb.rows[1]; r[10] != "29.7" || r[11] != "29.7" || tb.rows[2][10] != "" {
		t.Errorf("rows = %q", tb.rows)
	}
}

func TestRunInfoRoundTrip(t *testing.T) {
	ri := RunInfo{Commit: "abc1234", Dirty: true, Baseline: "5f643d6", Mode: "quick", Started: "2026-12-03 16:00 UTC",
		CPU: "AMD  EPYC\tx", Cores: 2, Memory: "23.4 GiB", Go: "go version go1.26.8 linux/amd64", OS: "Debian, Linux 6.18",
		LoadBefore: "1.0 2.0 3.0", Outcomes: []Outcome{{"peers", 2, 0.5, false}, {"fleet", -1, 240, true}}}
	var b bytes.Buffer
	if err := ri.Write(&b); err != nil {
		t.Fatal(err)
	}
	got, err := ParseRunInfo(&b)
	if err != nil {
		t.Fatal(err)
	}
	ri.CPU = "AMD EPYC x" // whitespace folded, so that one value is one line
	if got.Commit != ri.Commit || got.Dirty != ri.Dirty || got.CPU != ri.CPU || got.Cores != 2 || len(got.Outcomes) != 2 || got.Outcomes[1] != ri.Outcomes[1] {
		t.Errorf("got %+v, want %+v", got, ri)
	}
}

func TestLint(t *testing.T) {
	ok := "# Benchmarks\n\n| a | b |\n[x](#the-machine) `5f643d6` &#39; issues page\n"
	if p := Lint(ok); len(p) != 0 {
		t.Errorf("Lint(ok) = %q", p)
	}
	for _, bad := range []string{"see issue 37\n", "Issue #37 asked\n", "as in #12.\n", "(#7)\n", strings.Repeat("x\n", MaxLines+1)} {
		if p := Lint(bad); len(p) == 0 {
			t.Errorf("Lint(%.20q) found nothing", bad)
		}
	}
	if c := Commits("at `abc1234`, `abc1234` and `0123456789abcdef0123` but not `abc12` nor `ABC1234` nor 1234567\n"); len(c) != 2 || c[0] != "abc1234" {
		t.Errorf("Commits = %q", c)
	}
}

// The entries are well formed: unique names, known sections, commands
// for both modes unless pending.
func TestEntries(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range Entries {
		if seen[e.Name] || e.Name == "" || e.Name == "run" || strings.ContainsAny(e.Name, "/ ,") {
			t.Errorf("entry name %q: empty, repeated, reserved or not a file name", e.Name)
		}
		seen[e.Name] = true
		if !strings.Contains(strings.Join(Sections, "\n")+"\n", e.Section+"\n") {
			t.Errorf("%s: section %q is not in Sections", e.Name, e.Section)
		}
		if e.Pending == "" && (e.Full == "" || e.Quick == "" || e.Title == "") {
			t.Errorf("%s: needs a title and both commands, or Pending", e.Name)
		}
	}
}

func parseFile[T any](t *testing.T, name string, parse func(r io.Reader) (T, error)) T {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestParseLoadFaults(t *testing.T) {
	run := parseFile(t, "load-faults.txt", ParseLoad)
	var names []string
	for _, p := range run.Phases {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "warm-up,load+faults,recovery" || run.Result != "PASS" {
		t.Fatalf("phases %s, result %q", got, run.Result)
	}
	if !strings.HasPrefix(run.Faults, "overwrite row+object=12,") {
		t.Errorf("faults = %q", run.Faults)
	}
	tb := loadTable(run)
	if len(tb.rows) != 3 || !strings.Contains(tb.rows[2][0], "faults injected: overwrite") {
		t.Errorf("rows = %q", tb.rows)
	}
}

// A run whose tables would not fit is cut to MaxLines lines, the rest
// left to the raw outputs; the page names the commit, the baseline and
// every entry that did not run, and cites no issue.
func TestPageFitsAndSaysWhatDidNotRun(t *testing.T) {
	dir := t.TempDir()
	var many strings.Builder
	for i := range 40 {
		fmt.Fprintf(&many, "BenchmarkWide/case=%d/gateway-2 \t 100 \t %d ns/op \t 7 allocs/op\nBenchmarkWide/case=%d/raw-2 \t 100 \t 1000 ns/op \t 1 allocs/op\n", i, 2000+i, i)
	}
	var entries []Entry
	ri := RunInfo{Commit: "abc1234", Baseline: "5f643d6", Mode: "full"}
	for i := range 12 {
		e := Entry{Name: fmt.Sprintf("wide%d", i), Section: "Raw storage", Title: fmt.Sprintf("Wide %d", i), Kind: GoBench, Sibling: "raw", Full: "go test", Quick: "go test"}
		entries = append(entries, e)
		if err := os.WriteFile(filepath.Join(dir, e.Name+".txt"), []byte(many.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		ri.Outcomes = append(ri.Outcomes, Outcome{Name: e.Name})
	}
	entries = append(entries, Entry{Name: "later", Section: "Still to come", Title: "Later", Pending: "no benchmark yet"},
		Entry{Name: "absent", Section: "Load", Title: "Absent", Kind: Load, Full: "x", Quick: "x"})
	page, st := Page(ri, entries, dir, "docs/bench")
	if n := strings.Count(page, "\n"); n > MaxLines {
		t.Errorf("page has %d lines", n)
	}
	if p := Lint(page); len(p) != 0 {
		t.Errorf("Lint: %q", p)
	}
	for _, want := range []string{"`abc1234`", "`5f643d6`", "more rows in the raw output", "| later | Still to come | no benchmark yet |",
		"| absent | Load | not part of this run |", "[wide0](#wide-0)", "### Wide 11\n", "`Wide/case=0/gateway` | 2 | 7 | 2.00x | 1 |"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if !st[0].Ran || st[12].Ran || st[13].Ran {
		t.Errorf("statuses = %+v", st)
	}
	if c := Commits(page); len(c) != 2 {
		t.Errorf("commits = %q", c)
	}
}

// Every entry renders a table from the raw output of a run of its command
// (testdata/entries/NAME.txt, kept from a run): at least one row, every
// unit of Units a column with a value in some row, and the Ratio and
// Sibling columns filled where the entry asks for them. An entry whose
// benchmark names its units otherwise, or that has no sample output,
// fails here rather than showing an empty or missing table on the page.
func TestEveryEntryRendersARunOfIt(t *testing.T) {
	for _, e := range Entries {
		if e.Pending != "" {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("testdata", "entries", e.Name+".txt"))
		if err != nil {
			t.Errorf("%s: no sample output of its command: %v", e.Name, err)
			continue
		}
		tb, st := build(e, raw, Outcome{}, true)
		if !st.Ran || st.Text != "ok" || len(tb.rows) == 0 {
			t.Errorf("%s: %d rows, status %+v", e.Name, len(tb.rows), st)
			continue
		}
		var want []string
		for _, u := range e.Units {
			want = append(want, unitHead(u))
		}
		if e.Ratio[0] != "" {
			want = append(want, ratioHead(e.Ratio))
		}
		if e.Sibling != "" {
			want = append(want, "time x "+e.Sibling)
		}
		for _, h := range want {
			col := slices.Index(tb.head, h)
			if col < 0 {
				t.Errorf("%s: no column %q in %q", e.Name, h, tb.head)
				continue
			}
			if !slices.ContainsFunc(tb.rows, func(r []string) bool { return r[col] != "" }) {
				t.Errorf("%s: column %q is empty in every row", e.Name, h)
			}
		}
	}
}

// The memory entry's table: a row per figure of each part of
// memory-ab.sh, the baseline's and this commit's medians and their ratio,
// and the failures of all parts.
func TestMemoryTable(t *testing.T) {
	raw, err := os.ReadFile("testdata/entries/memory.txt")
	if err != nil {
		t.Fatal(err)
	}
	tb := memoryTable(raw, [2]string{})
	want := [][]string{
		{"300 sequential reads over stdio: peak RSS MiB", "33.3", "41", "1.23x"},
		{"300 sequential reads: RSS after them MiB", "33.2", "41", "1.23x"},
		{"of it, the pages of files (the executable's code and data) MiB", "22.3", "25.1", "1.13x"},
		{"of it, anonymous pages (heap, stacks) MiB", "10.9", "15.9", "1.46x"},
		{"16 clients: peak RSS MiB", "42.4", "49.5", "1.17x"},
		{"16 clients: S3 object p50 ms", "33.8", "36.6", "1.08x"},
		{"200 sessions, one subscription each: RSS MiB", "57.5", "69.6", "1.21x"},
		{"200 sessions: growth per session KiB", "128", "186", "1.45x"},
		{"1,000 templates, once checked: RSS MiB", "39.5", "47.0", "1.19x"},
		{"wrong or failed answers; runs not exiting 0", "", "", "0; 0 of 4"},
	}
	if !reflect.DeepEqual(tb.rows, want) {
		t.Errorf("rows:\n%q\nwant\n%q", tb.rows, want)
	}
	// Several runs: the median and the range; a failed run is counted.
	more := "old  exit 0  sessions 10: server RSS before 30.0 MiB, with the sessions 40.0 MiB, peak 40.0 MiB, per session 1024.0 KiB\n" +
		"old  exit 0  sessions 10: server RSS before 30.0 MiB, with the sessions 44.0 MiB, peak 44.0 MiB, per session 1433.6 KiB\n" +
		"new  exit 1  sessions: none measured\n"
	tb = memoryTable([]byte(more), [2]string{"a", "b"})
	if tb.head[1] != "a" || len(tb.rows) != 3 || tb.rows[0][1] != "42 (40-44)" || tb.rows[0][2] != "" || tb.rows[2][3] != "0; 1 of 3" {
		t.Errorf("table = %q %q", tb.head, tb.rows)
	}
}

// A table of an entry that keeps it whole is never cut; the others are,
// and a run in which every entry ran has no table of those that did not.
func TestPageKeepsTheTablesOfKeepEntries(t *testing.T) {
	dir := t.TempDir()
	var many strings.Builder
	for i := range 40 {
		fmt.Fprintf(&many, "BenchmarkWide/case=%d-2 \t 100 \t %d ns/op\n", i, 2000+i)
	}
	ri := RunInfo{Commit: "abc1234", Baseline: "5f643d6", MemBaseline: "ec54ebe", Mode: "full"}
	var entries []Entry
	for i := range 12 {
		e := Entry{Name: fmt.Sprintf("wide%d", i), Section: "Raw storage", Title: fmt.Sprintf("Wide %d", i), Kind: GoBench, Full: "go test", Quick: "go test", Keep: i == 3}
		entries = append(entries, e)
		if err := os.WriteFile(filepath.Join(dir, e.Name+".txt"), []byte(many.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		ri.Outcomes = append(ri.Outcomes, Outcome{Name: e.Name})
	}
	page, _ := Page(ri, entries, dir, "docs/bench")
	if n := strings.Count(page, "\n"); n > MaxLines {
		t.Errorf("page has %d lines", n)
	}
	kept := page[strings.Index(page, "### Wide 3\n"):strings.Index(page, "### Wide 4\n")]
	if !strings.Contains(kept, "`Wide/case=39`") || strings.Contains(kept, "more rows") {
		t.Errorf("the kept table was cut:\n%s", kept)
	}
	if !strings.Contains(page, "more rows in the raw output") || strings.Contains(page, "| not run |") || !strings.Contains(page, "| memory baseline | `ec54ebe`") {
		t.Errorf("page:\n%s", page)
	}
}
