package benchpage

import (
	"bufio"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// ABRun is one run of scripts/load-ab.sh: which binary ("old" or "new"),
// its requests per second, wrong answers, exit status and CPU time per
// request (ms) of the server, the PostgreSQL cluster and the driver; the
// server's peak resident memory (VmHWM) and its last sample (VmRSS), in
// MiB, and the load phase's p50 (ms) by kind of request, when the script
// printed them (0 and nil otherwise).
type ABRun struct {
	Label                    string
	RPS                      float64
	Wrong, Exit              int
	ServerCPU, PGCPU, Driver float64
	PeakRSS, EndRSS          float64
	P50                      map[string]float64
}

var (
	abRE      = regexp.MustCompile(`^(\S+)\s+([0-9.]+) req/s\s+wrong (\d+)\s+exit (\d+)\s+server CPU/request ([0-9.]+) ms\s+PostgreSQL CPU/request ([0-9.]+) ms\s+driver CPU/request ([0-9.]+) ms`)
	abRSSRE   = regexp.MustCompile(`\sserver RSS peak ([0-9.]+) MiB end ([0-9.]+) MiB`)
	abKindsRE = regexp.MustCompile(`\sp50 ms((?: [a-z-]+ [0-9.]+)*)(?:\s|$)`)
)

// ParseLoadAB returns the runs that scripts/load-ab.sh printed, in order;
// other lines are ignored.
func ParseLoadAB(r io.Reader) ([]ABRun, error) {
	var runs []ABRun
	err := eachLine(r, func(line string) {
		m := abRE.FindStringSubmatch(line)
		if m == nil {
			return
		}
		run := ABRun{Label: m[1], RPS: num(m[2]), Wrong: atoi(m[3]), Exit: atoi(m[4]),
			ServerCPU: num(m[5]), PGCPU: num(m[6]), Driver: num(m[7])}
		if m := abRSSRE.FindStringSubmatch(line); m != nil {
			run.PeakRSS, run.EndRSS = num(m[1]), num(m[2])
		}
		if m := abKindsRE.FindStringSubmatch(line); m != nil {
			f := strings.Fields(m[1])
			for i := 0; i+1 < len(f); i += 2 {
				if run.P50 == nil {
					run.P50 = map[string]float64{}
				}
				run.P50[f[i]] = num(f[i+1])
			}
		}
		runs = append(runs, run)
	})
	return runs, err
}

// Phase is one phase of a cmd/mcp-load run (warm-up, load, recovery):
// clients, seconds, requests, throughput, latency percentiles (ms) of all
// requests and of each kind of request, and the unexpected and wrong
// answers.
type Phase struct {
	Name              string
	Clients           int
	Seconds           float64
	Requests          int
	RPS               float64
	P50, P95, P99     float64
	Kinds             []KindLatency
	Unexpected, Wrong int
}

// KindLatency is the latency of one kind of request of a [Phase].
type KindLatency struct {
	Kind          string
	Requests      int
	P50, P95, P99 float64
}

// LoadRun is what cmd/mcp-load printed: its phases, the faults it
// injected (its "faults injected:" line, "" without faults) and its
// verdict ("PASS", "FAIL", or "" when it printed none).
type LoadRun struct {
	Phases []Phase
	Faults string
	Result string
}

var (
	phaseRE   = regexp.MustCompile(`^phase ([a-z+-]+): (\d+) clients, ([0-9.]+)s, (\d+) requests, ([0-9.]+) req/s`)
	latencyRE = regexp.MustCompile(`^\s+latency ms: p50 ([0-9.]+)\s+p95 ([0-9.]+)\s+p99 ([0-9.]+)`)
	kindRE    = regexp.MustCompile(`^\s+([a-z-]+)\s+(\d+) requests\s+p50 ([0-9.]+)\s+p95 ([0-9.]+)\s+p99 ([0-9.]+)`)
	countRE   = regexp.MustCompile(`^\s+(unexpected|wrong): (\d+)`)
)

// ParseLoad reads the output of cmd/mcp-load (its progress lines and
// other logs are ignored).
func ParseLoad(r io.Reader) (LoadRun, error) {
	var run LoadRun
	var cur *Phase
	err := eachLine(r, func(line string) {
		if m := phaseRE.FindStringSubmatch(line); m != nil {
			run.Phases = append(run.Phases, Phase{Name: m[1], Clients: atoi(m[2]), Seconds: num(m[3]),
				Requests: atoi(m[4]), RPS: num(m[5])})
			cur = &run.Phases[len(run.Phases)-1]
			return
		}
		if v, ok := strings.CutPrefix(line, "faults injected: "); ok {
			run.Faults = strings.TrimSpace(v)
			cur = nil
			return
		}
		if v, ok := strings.CutPrefix(line, "RESULT: "); ok {
			run.Result = strings.TrimSpace(v)
			cur = nil
			return
		}
		if cur == nil {
			return
		}
		if m := latencyRE.FindStringSubmatch(line); m != nil {
			cur.P50, cur.P95, cur.P99 = num(m[1]), num(m[2]), num(m[3])
		} else if m := kindRE.FindStringSubmatch(line); m != nil {
			cur.Kinds = append(cur.Kinds, KindLatency{Kind: m[1], Requests: atoi(m[2]), P50: num(m[3]), P95: num(m[4]), P99: num(m[5])})
		} else if m := countRE.FindStringSubmatch(line); m != nil {
			if m[1] == "wrong" {
				cur.Wrong = atoi(m[2])
			} else {
				cur.Unexpected = atoi(m[2])
			}
		} else if !strings.HasPrefix(line, " ") {
			cur = nil
		}
	})
	return run, err
}

// PeerRow is one server of a cmd/mcp-peers run: its calls, wrong and
// failed answers, latency percentiles (ms), CPU per call (ms), when
// measured the median time from exec to initialize answered (ms), and
// when printed its process's peak and last resident memory after its
// calls, and of the last the pages of files and the anonymous ones (MiB).
type PeerRow struct {
	Server               string
	Calls, Wrong, Failed int
	P50, P90, P99, CPU   float64
	StartMS              float64
	PeakRSS, RSS         float64
	FileRSS, AnonRSS     float64
}

var (
	peerRE    = regexp.MustCompile(`^(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([0-9.]+) ms\s+([0-9.]+) ms\s+([0-9.]+) ms\s+([0-9.]+) ms\s*$`)
	startRE   = regexp.MustCompile(`^\s+(\S+)\s+([0-9.]+) ms \(`)
	peerMemRE = regexp.MustCompile(`^\s+(\S+)\s+([0-9.]+) MiB peak\s+([0-9.]+) MiB now(?:: files ([0-9.]+) MiB, anonymous ([0-9.]+) MiB)?`)
)

// ParsePeers reads the output of cmd/mcp-peers and returns its servers in
// the order of its table, with their start-up medians when it measured
// them.
func ParsePeers(r io.Reader) ([]PeerRow, error) {
	var rows []PeerRow
	starts := map[string]float64{}
	mem := map[string][4]float64{}
	inStarts := false
	err := eachLine(r, func(line string) {
		switch {
		case strings.HasPrefix(line, "exec to initialize"):
			inStarts = true
			return
		case inStarts:
			if m := startRE.FindStringSubmatch(line); m != nil {
				starts[m[1]] = num(m[2])
				return
			}
			inStarts = false
		}
		if m := peerMemRE.FindStringSubmatch(line); m != nil {
			mem[m[1]] = [4]float64{num(m[2]), num(m[3]), num(m[4]), num(m[5])}
			return
		}
		if m := peerRE.FindStringSubmatch(line); m != nil {
			rows = append(rows, PeerRow{Server: m[1], Calls: atoi(m[2]), Wrong: atoi(m[3]), Failed: atoi(m[4]),
				P50: num(m[5]), P90: num(m[6]), P99: num(m[7]), CPU: num(m[8])})
		}
	})
	for i := range rows {
		rows[i].StartMS = starts[rows[i].Server]
		m := mem[rows[i].Server]
		rows[i].PeakRSS, rows[i].RSS, rows[i].FileRSS, rows[i].AnonRSS = m[0], m[1], m[2], m[3]
	}
	return rows, err
}

// SessionsRun is one run of scripts/sessions-ab.sh: which binary ("old"
// or "new"), its exit status, and when it measured them the sessions it
// held and the server's resident memory (MiB): before them, with them
// open, its peak; and the growth per session (KiB).
type SessionsRun struct {
	Label              string
	Exit               int
	Sessions           int
	Before, With, Peak float64
	PerSessionKiB      float64
	Measured           bool
}

var sessionsRE = regexp.MustCompile(`^(\S+)\s+exit (\d+)\s+(?:sessions (\d+): server RSS before ([0-9.]+) MiB, with the sessions ([0-9.]+) MiB, peak ([0-9.]+) MiB, per session (-?[0-9.]+) KiB|sessions: none measured)`)

// ParseSessionsAB returns the runs that scripts/sessions-ab.sh printed,
// in order; other lines are ignored.
func ParseSessionsAB(r io.Reader) ([]SessionsRun, error) {
	var runs []SessionsRun
	err := eachLine(r, func(line string) {
		m := sessionsRE.FindStringSubmatch(line)
		if m == nil {
			return
		}
		run := SessionsRun{Label: m[1], Exit: atoi(m[2])}
		if m[3] != "" {
			run.Measured = true
			run.Sessions, run.Before, run.With, run.Peak, run.PerSessionKiB = atoi(m[3]), num(m[4]), num(m[5]), num(m[6]), num(m[7])
		}
		runs = append(runs, run)
	})
	return runs, err
}

func eachLine(r io.Reader, f func(string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxLine)
	for sc.Scan() {
		f(sc.Text())
	}
	return sc.Err()
}

// num and atoi parse what a regular expression of this file matched as a
// number; an overflow gives 0 (the figure is shown as 0, not trusted).
func num(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return v
}

func atoi(s string) int {
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return v
}
