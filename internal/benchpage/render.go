package benchpage

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// MaxLines is the most lines the page may have.
const MaxLines = 250

// maxRows bounds the rows of one table at first; [Page] lowers it until
// the page fits in [MaxLines].
const maxRows = 12

// Status is what the page says of one entry.
type Status struct {
	// Ran is true when the entry has a table.
	Ran bool
	// Text is "ok", "failed (...)" or "not run: why".
	Text string
}

// table is a Markdown table: a header and rows of cells.
type table struct {
	head []string
	rows [][]string
}

func (t table) String() string { return t.text(maxRows) }

// text is the table with at most limit rows; a last row says how many
// more the raw output has.
func (t table) text(limit int) string {
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
		}
		b.WriteString("\n")
	}
	line(t.head)
	sep := make([]string, len(t.head))
	for i := range sep {
		sep[i] = "---:"
	}
	sep[0] = "---"
	b.WriteString("|" + strings.Join(sep, "|") + "|\n")
	for i, r := range t.rows {
		if i == limit {
			line(append([]string{fmt.Sprintf("(%d more rows in the raw output)", len(t.rows)-limit)}, make([]string, len(t.head)-1)...))
			break
		}
		line(r)
	}
	return b.String()
}

// Command returns the command of e for mode ("quick" or "full").
func (e Entry) Command(mode string) string {
	if mode == "quick" {
		return e.Quick
	}
	return e.Full
}

// Build reads the raw output of e (nil when there is none) and returns its
// table and status. outcome is how its command ended, if it ran.
func Build(e Entry, raw []byte, outcome Outcome, ran bool) (string, Status) {
	t, st := build(e, raw, outcome, ran)
	if !st.Ran {
		return "", st
	}
	return t.String(), st
}

func build(e Entry, raw []byte, outcome Outcome, ran bool) (table, Status) {
	switch {
	case e.Pending != "":
		return table{}, Status{Text: "not run: " + e.Pending}
	case !ran || raw == nil:
		return table{}, Status{Text: "not run: not part of this run"}
	}
	var t table
	var why string
	switch e.Kind {
	case GoBench:
		gb, _ := ParseGoBench(bytes.NewReader(raw))
		t = goBenchTable(e, gb)
		if len(gb.Skips) > 0 {
			why = "skipped: " + gb.Skips[0].Reason
		}
	case LoadAB:
		runs, _ := ParseLoadAB(bytes.NewReader(raw))
		t = loadABTable(runs, e)
	case Load:
		run, _ := ParseLoad(bytes.NewReader(raw))
		t = loadTable(run)
	case Peers:
		rows, _ := ParsePeers(bytes.NewReader(raw))
		t = peersTable(rows)
	case MemoryAB:
		t = memoryTable(raw, e.Sides)
	}
	if why == "" {
		why = lastLine(raw)
	}
	switch {
	case outcome.TimedOut && len(t.rows) == 0:
		return table{}, Status{Text: fmt.Sprintf("not run: stopped at its timeout after %.0f s", outcome.Seconds)}
	case len(t.rows) == 0:
		return table{}, Status{Text: fmt.Sprintf("not run: exit %d, %s", outcome.Exit, why)}
	case outcome.TimedOut:
		return t, Status{Ran: true, Text: fmt.Sprintf("failed: stopped at its timeout after %.0f s; partial table", outcome.Seconds)}
	case outcome.Exit != 0:
		return t, Status{Ran: true, Text: fmt.Sprintf("failed: exit %d, %s; partial table", outcome.Exit, why)}
	}
	return t, Status{Ran: true, Text: "ok"}
}

// lastLine is the last non-empty line of raw, cut to a short reason.
func lastLine(raw []byte) string {
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l != "" && !strings.HasPrefix(l, "#") && l != "FAIL" && !strings.HasPrefix(l, "FAIL\t") && !strings.HasPrefix(l, "exit status") {
			return shorten(l)
		}
	}
	return "no output"
}

func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "`", "'")
	if r := []rune(s); len(r) > 120 {
		s = string(r[:117]) + "..."
	}
	return s
}

// unitHead is how a unit heads a column: times in µs rather than ns
// (unitScale), except per item.
func unitHead(u string) string {
	switch u {
	case "cpu-ns/op":
		return "CPU µs/op"
	case "srv-ns/op":
		return "server µs/op"
	}
	if unitScale(u) != 1 {
		return strings.Replace(u, "ns/", "µs/", 1)
	}
	return u
}

func unitScale(u string) float64 {
	if strings.HasSuffix(u, "ns/op") || strings.HasSuffix(u, "ns/read") {
		return 1e-3
	}
	return 1
}

// ratioHead heads the column of e.Ratio: the two units without their
// common prefix ("this / base" for ms-median-this and ms-median-base).
func ratioHead(r [2]string) string {
	a, b := r[0], r[1]
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	if n == len(a) || n == len(b) {
		n = 0
	}
	return a[n:] + " / " + b[n:]
}

// timesInTurns says whether r times two operations in turns in one loop
// (benchutil.Ratio reports NAME/base): its ns/op is of both, so it is not
// divided by a sibling.
func timesInTurns(r BenchResult) bool {
	return slices.ContainsFunc(r.Metrics, func(m Metric) bool { return strings.HasSuffix(m.Unit, "/base") })
}

// goBenchTable has a row per benchmark (medians over its -count runs), a
// column per unit, the per-run ratios to the sibling named e.Sibling and
// of e.Ratio's two units, and the number of runs.
func goBenchTable(e Entry, gb BenchOutput) table {
	var names []string
	byName := map[string][]BenchResult{}
	var seen []string
	for _, r := range gb.Results {
		if _, ok := byName[r.Name]; !ok {
			names = append(names, r.Name)
		}
		byName[r.Name] = append(byName[r.Name], r)
		for _, m := range r.Metrics {
			if !slices.Contains(seen, m.Unit) {
				seen = append(seen, m.Unit)
			}
		}
	}
	units := e.Units
	if len(units) == 0 {
		units = seen
	}
	units = slices.DeleteFunc(slices.Clone(units), func(u string) bool { return !slices.Contains(seen, u) })
	t := table{head: []string{"benchmark"}}
	for _, u := range units {
		t.head = append(t.head, unitHead(u))
	}
	cpu := slices.Contains(seen, "cpu-ns/op")
	if e.Sibling != "" {
		t.head = append(t.head, "time x "+e.Sibling)
		if cpu {
			t.head = append(t.head, "CPU x "+e.Sibling)
		}
	}
	if e.Ratio[0] != "" {
		t.head = append(t.head, ratioHead(e.Ratio))
	}
	t.head = append(t.head, "runs")
	for _, name := range names {
		rs := byName[name]
		row := []string{"`" + strings.TrimPrefix(name, "Benchmark") + "`"}
		for _, u := range units {
			if v := median(values(rs, u)); !math.IsNaN(v) {
				row = append(row, fmtNum(v*unitScale(u)))
			} else {
				row = append(row, "")
			}
		}
		if e.Sibling != "" {
			sib := siblingOf(name, e.Sibling)
			base, ok := byName[sib]
			var tr, cr string
			if ok && sib != name && !timesInTurns(rs[0]) {
				tr, cr = fmtRatio(pairRatios(rs, base, "ns/op")), fmtRatio(pairRatios(rs, base, "cpu-ns/op"))
			}
			row = append(row, tr)
			if cpu {
				row = append(row, cr)
			}
		}
		if e.Ratio[0] != "" {
			var rat []float64
			for _, r := range rs {
				a, okA := r.Value(e.Ratio[0])
				b, okB := r.Value(e.Ratio[1])
				if okA && okB && b > 0 {
					rat = append(rat, a/b)
				}
			}
			row = append(row, fmtRatio(rat))
		}
		row = append(row, fmt.Sprint(len(rs)))
		t.rows = append(t.rows, row)
	}
	return t
}

// siblingOf is name with its last element replaced by sib.
func siblingOf(name, sib string) string {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return sib
	}
	return name[:i+1] + sib
}

// values returns the values of unit in rs, in run order.
func values(rs []BenchResult, unit string) []float64 {
	var vs []float64
	for _, r := range rs {
		if v, ok := r.Value(unit); ok {
			vs = append(vs, v)
		}
	}
	return vs
}

// pairRatios divides the i-th run of rs by the i-th run of base, in unit:
// run in rounds of -count 1, the i-th runs of two siblings ran in the
// same round, one after the other.
func pairRatios(rs, base []BenchResult, unit string) []float64 {
	var out []float64
	for i := range min(len(rs), len(base)) {
		a, okA := rs[i].Value(unit)
		b, okB := base[i].Value(unit)
		if okA && okB && b > 0 {
			out = append(out, a/b)
		}
	}
	return out
}

// median of vs (NaN when empty); it sorts a copy.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// fmtRatio is the median of ratios, with their range when there are
// several: "1.52x (1.34-2.10)".
func fmtRatio(ratios []float64) string {
	if len(ratios) == 0 {
		return ""
	}
	m := fmt.Sprintf("%.2fx", median(ratios))
	if len(ratios) > 1 {
		m += fmt.Sprintf(" (%.2f-%.2f)", slices.Min(ratios), slices.Max(ratios))
	}
	return m
}

// fmtNum prints v to about three significant digits, with thousands
// separators.
func fmtNum(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1000:
		s := fmt.Sprintf("%.0f", a)
		var b strings.Builder
		for i, c := range s {
			if i > 0 && (len(s)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(c)
		}
		if v < 0 {
			return "-" + b.String()
		}
		return b.String()
	case a >= 100 || v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// loadABTable puts the runs of the script's two sides (old and new) side
// by side, with the ratio of their medians; e.Sides names them (by
// default the baseline and this commit). e.Kinds adds a row of the p50 of
// each of those kinds of request, e.RSS one of the server's peak RSS.
func loadABTable(runs []ABRun, e Entry) table {
	sides := e.Sides
	if sides[0] == "" {
		sides = [2]string{"baseline", "this commit"}
	}
	t := table{head: []string{"", sides[0], sides[1], "ratio of medians"}}
	if len(runs) == 0 {
		return t
	}
	type metric struct {
		name string
		f    func(ABRun) (float64, bool)
	}
	always := func(f func(ABRun) float64) func(ABRun) (float64, bool) {
		return func(r ABRun) (float64, bool) { return f(r), true }
	}
	metrics := []metric{
		{"req/s", always(func(r ABRun) float64 { return r.RPS })},
		{"server CPU/request ms", always(func(r ABRun) float64 { return r.ServerCPU })},
		{"PostgreSQL CPU/request ms", always(func(r ABRun) float64 { return r.PGCPU })},
		{"driver CPU/request ms", always(func(r ABRun) float64 { return r.Driver })},
	}
	if e.RSS {
		metrics = append(metrics, metric{"server peak RSS MiB", func(r ABRun) (float64, bool) { return r.PeakRSS, r.PeakRSS > 0 }})
	}
	for _, k := range e.Kinds {
		metrics = append(metrics, metric{"p50 " + k + " ms", func(r ABRun) (float64, bool) { v, ok := r.P50[k]; return v, ok }})
	}
	for _, m := range metrics {
		var vs [2][]float64
		var ss [2][]string
		for _, r := range runs {
			side := slices.Index([]string{"old", "new"}, r.Label)
			if v, ok := m.f(r); ok && side >= 0 {
				vs[side] = append(vs[side], v)
				ss[side] = append(ss[side], fmtNum(v))
			}
		}
		if len(vs[0])+len(vs[1]) == 0 {
			continue
		}
		ratio := ""
		if mo, mn := median(vs[0]), median(vs[1]); mo > 0 && mn > 0 {
			ratio = fmt.Sprintf("%.2fx", mn/mo)
		}
		t.rows = append(t.rows, []string{m.name, strings.Join(ss[0], ", "), strings.Join(ss[1], ", "), ratio})
	}
	wrong, bad := 0, 0
	for _, r := range runs {
		wrong += r.Wrong
		if r.Exit != 0 {
			bad++
		}
	}
	t.rows = append(t.rows, []string{"wrong answers, runs not exiting 0", "", "", fmt.Sprintf("%d, %d of %d", wrong, bad, len(runs))})
	return t
}

// loadTable has a row per measured phase and, for the load phase, one per
// kind of request.
func loadTable(run LoadRun) table {
	t := table{head: []string{"phase", "clients", "s", "requests", "req/s", "p50 ms", "p95 ms", "p99 ms", "unexpected", "wrong"}}
	for _, p := range run.Phases {
		if p.Name == "warm-up" {
			continue
		}
		t.rows = append(t.rows, []string{p.Name, fmt.Sprint(p.Clients), fmtNum(p.Seconds), fmtNum(float64(p.Requests)),
			fmtNum(p.RPS), fmtNum(p.P50), fmtNum(p.P95), fmtNum(p.P99), fmt.Sprint(p.Unexpected), fmt.Sprint(p.Wrong)})
		if p.Name != "load" {
			continue
		}
		for _, k := range p.Kinds {
			t.rows = append(t.rows, []string{p.Name + ": " + k.Kind, "", "", fmtNum(float64(k.Requests)), "",
				fmtNum(k.P50), fmtNum(k.P95), fmtNum(k.P99), "", ""})
		}
	}
	if len(t.rows) > 0 && (run.Result != "" || run.Faults != "") {
		v := "verdict: " + or(run.Result, "none")
		if run.Faults != "" {
			v += "; faults injected: " + run.Faults
		}
		t.rows = append(t.rows, []string{v, "", "", "", "", "", "", "", "", ""})
	}
	return t
}

// peersTable has a row per server, with its p50 against ours, and its
// process's peak and last resident memory when the run printed them.
func peersTable(rows []PeerRow) table {
	t := table{head: []string{"server", "calls", "wrong", "failed", "p50 ms", "p90 ms", "p99 ms", "CPU/call ms", "exec to initialize ms", "ours / it, p50"}}
	var ours float64
	mem := false
	for _, r := range rows {
		if r.Server == "ours" {
			ours = r.P50
		}
		mem = mem || r.PeakRSS > 0
	}
	if mem {
		t.head = append(t.head, "peak RSS MiB", "RSS MiB")
	}
	for _, r := range rows {
		ratio := ""
		if r.Server != "ours" && ours > 0 && r.P50 > 0 {
			ratio = fmt.Sprintf("%.2fx", ours/r.P50)
		}
		start := ""
		if r.StartMS > 0 {
			start = fmtNum(r.StartMS)
		}
		row := []string{r.Server, fmt.Sprint(r.Calls), fmt.Sprint(r.Wrong), fmt.Sprint(r.Failed),
			fmtNum(r.P50), fmtNum(r.P90), fmtNum(r.P99), fmtNum(r.CPU), start, ratio}
		if mem {
			peak, now := "", ""
			if r.PeakRSS > 0 {
				peak, now = fmtNum(r.PeakRSS), fmtNum(r.RSS)
			}
			row = append(row, peak, now)
		}
		t.rows = append(t.rows, row)
	}
	return t
}

var (
	abHeadRE      = regexp.MustCompile(`^load-ab: (\d+) pairs, (\d+) clients`)
	bigTemplateRE = regexp.MustCompile(`/templates=(\d+)(?:/shapes=\d+)?$`)
)

// memoryTable has a row per figure of scripts/memory-ab.sh, both sides'
// medians (with their range over several runs) and the ratio this / the
// baseline: the peak and last RSS after the sequential reads (peers.sh's
// "baseline" and "ours"), the peak RSS and S3 object p50 under load
// (load-ab.sh), the RSS with the subscribed sessions and its growth per
// session (sessions-ab.sh), the RSS once each big file is checked, its
// first read answered (the benchmark's rss-MiB-base and rss-MiB-this); and the wrong or
// failed answers and failed runs of all of them. sides names the columns
// (by default the memory baseline and this commit).
func memoryTable(raw []byte, sides [2]string) table {
	if sides[0] == "" {
		sides = [2]string{"memory baseline", "this commit"}
	}
	t := table{head: []string{"setting", sides[0], sides[1], "this / baseline"}}
	row := func(name string, old, new []float64) {
		if len(old)+len(new) == 0 {
			return
		}
		ratio := ""
		if mo, mn := median(old), median(new); mo > 0 && mn > 0 {
			ratio = fmt.Sprintf("%.2fx", mn/mo)
		}
		t.rows = append(t.rows, []string{name, fmtMedian(old), fmtMedian(new), ratio})
	}
	one := func(v float64) []float64 {
		if v <= 0 {
			return nil
		}
		return []float64{v}
	}
	bad, failed, runs := 0, 0, 0

	peers, _ := ParsePeers(bytes.NewReader(raw))
	var ours, base *PeerRow
	for i, r := range peers {
		bad += r.Wrong + r.Failed
		switch r.Server {
		case "ours":
			ours = &peers[i]
		case "baseline":
			base = &peers[i]
		}
	}
	if ours != nil && base != nil {
		row(fmt.Sprintf("%s sequential reads over stdio: peak RSS MiB", fmtNum(float64(ours.Calls))), one(base.PeakRSS), one(ours.PeakRSS))
		row(fmt.Sprintf("%s sequential reads: RSS after them MiB", fmtNum(float64(ours.Calls))), one(base.RSS), one(ours.RSS))
		row("of it, the pages of files (the executable's code and data) MiB", one(base.FileRSS), one(ours.FileRSS))
		row("of it, anonymous pages (heap, stacks) MiB", one(base.AnonRSS), one(ours.AnonRSS))
	}

	clients := 0
	_ = eachLine(bytes.NewReader(raw), func(line string) {
		if m := abHeadRE.FindStringSubmatch(line); m != nil {
			clients = atoi(m[2])
		}
	})
	ab, _ := ParseLoadAB(bytes.NewReader(raw))
	var rss, obj [2][]float64
	for _, r := range ab {
		side := slices.Index([]string{"old", "new"}, r.Label)
		if side < 0 {
			continue
		}
		runs++
		bad += r.Wrong
		if r.Exit != 0 {
			failed++
		}
		if r.PeakRSS > 0 {
			rss[side] = append(rss[side], r.PeakRSS)
		}
		if v, ok := r.P50["object"]; ok {
			obj[side] = append(obj[side], v)
		}
	}
	row(fmt.Sprintf("%d clients: peak RSS MiB", clients), rss[0], rss[1])
	row(fmt.Sprintf("%d clients: S3 object p50 ms", clients), obj[0], obj[1])

	sr, _ := ParseSessionsAB(bytes.NewReader(raw))
	var with, per [2][]float64
	n := 0
	for _, r := range sr {
		side := slices.Index([]string{"old", "new"}, r.Label)
		if side < 0 {
			continue
		}
		runs++
		if r.Exit != 0 {
			failed++
		}
		if r.Measured {
			n = r.Sessions
			with[side] = append(with[side], r.With)
			per[side] = append(per[side], r.PerSessionKiB)
		}
	}
	row(fmt.Sprintf("%s sessions, one subscription each: RSS MiB", fmtNum(float64(n))), with[0], with[1])
	row(fmt.Sprintf("%s sessions: growth per session KiB", fmtNum(float64(n))), per[0], per[1])

	gb, _ := ParseGoBench(bytes.NewReader(raw))
	var sizes []string
	byN := map[string][2][]float64{}
	for _, r := range gb.Results {
		m := bigTemplateRE.FindStringSubmatch(r.Name)
		if m == nil {
			continue
		}
		if _, ok := byN[m[1]]; !ok {
			sizes = append(sizes, m[1])
		}
		v := byN[m[1]]
		if x, ok := r.Value("rss-MiB-base"); ok {
			v[0] = append(v[0], x)
		}
		if x, ok := r.Value("rss-MiB-this"); ok {
			v[1] = append(v[1], x)
		}
		byN[m[1]] = v
	}
	for _, size := range sizes {
		row(fmt.Sprintf("%s templates, once checked: RSS MiB", fmtNum(num(size))), byN[size][0], byN[size][1])
	}
	if len(t.rows) > 0 {
		t.rows = append(t.rows, []string{"wrong or failed answers; runs not exiting 0", "", "", fmt.Sprintf("%d; %d of %d", bad, failed, runs)})
	}
	return t
}

// fmtMedian is the median of vs, with their range when there are several:
// "52.1 (51.0-53.4)".
func fmtMedian(vs []float64) string {
	if len(vs) == 0 {
		return ""
	}
	s := fmtNum(median(vs))
	if len(vs) > 1 {
		s += fmt.Sprintf(" (%s-%s)", fmtNum(slices.Min(vs)), fmtNum(slices.Max(vs)))
	}
	return s
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ReadRaw reads the raw output of e from dir, nil when there is none.
func ReadRaw(dir string, e Entry) []byte {
	b, err := os.ReadFile(filepath.Join(dir, e.Name+".txt"))
	if err != nil {
		return nil
	}
	return b
}
