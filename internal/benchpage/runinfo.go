package benchpage

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// RunInfo is what docs/bench/run.txt records of one run: the commit and
// whether the tree had changes, the baseline and the memory baseline, the
// mode, the machine, the times and load averages, and each entry's
// outcome.
type RunInfo struct {
	Commit, Baseline, Mode string
	MemBaseline            string
	Dirty                  bool
	Started, Finished      string // RFC 3339, UTC
	CPU, Memory, Go, OS    string
	Cores                  int
	LoadBefore, LoadAfter  string
	Outcomes               []Outcome
}

// Outcome is how one entry's command ended: its exit status (-1 when it
// could not start), its wall time and whether it was stopped at its
// timeout.
type Outcome struct {
	Name     string
	Exit     int
	Seconds  float64
	TimedOut bool
}

// Outcome returns the outcome of the entry named name, if it ran.
func (ri RunInfo) Outcome(name string) (Outcome, bool) {
	i := slices.IndexFunc(ri.Outcomes, func(o Outcome) bool { return o.Name == name })
	if i < 0 {
		return Outcome{}, false
	}
	return ri.Outcomes[i], true
}

// Write writes ri in the form [ParseRunInfo] reads: one "key: value" a
// line.
func (ri RunInfo) Write(w io.Writer) error {
	var b strings.Builder
	for _, kv := range [][2]string{
		{"commit", ri.Commit}, {"dirty", strconv.FormatBool(ri.Dirty)}, {"baseline", ri.Baseline}, {"mem-baseline", ri.MemBaseline},
		{"mode", ri.Mode}, {"started", ri.Started}, {"finished", ri.Finished},
		{"cpu", ri.CPU}, {"cores", strconv.Itoa(ri.Cores)}, {"memory", ri.Memory}, {"go", ri.Go}, {"os", ri.OS},
		{"load-before", ri.LoadBefore}, {"load-after", ri.LoadAfter},
	} {
		fmt.Fprintf(&b, "%s: %s\n", kv[0], one(kv[1]))
	}
	for _, o := range ri.Outcomes {
		fmt.Fprintf(&b, "entry: %s exit=%d seconds=%.1f timeout=%t\n", one(o.Name), o.Exit, o.Seconds, o.TimedOut)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ParseRunInfo reads what [RunInfo.Write] wrote; unknown keys and
// malformed entry lines are ignored, white space in a value is folded.
func ParseRunInfo(r io.Reader) (RunInfo, error) {
	var ri RunInfo
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxLine)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			continue
		}
		v = one(v)
		switch k {
		case "commit":
			ri.Commit = v
		case "dirty":
			ri.Dirty = v == "true"
		case "baseline":
			ri.Baseline = v
		case "mem-baseline":
			ri.MemBaseline = v
		case "mode":
			ri.Mode = v
		case "started":
			ri.Started = v
		case "finished":
			ri.Finished = v
		case "cpu":
			ri.CPU = v
		case "cores":
			ri.Cores = atoi(v)
		case "memory":
			ri.Memory = v
		case "go":
			ri.Go = v
		case "os":
			ri.OS = v
		case "load-before":
			ri.LoadBefore = v
		case "load-after":
			ri.LoadAfter = v
		case "entry":
			if o, ok := parseOutcome(v); ok {
				ri.Outcomes = append(ri.Outcomes, o)
			}
		}
	}
	return ri, sc.Err()
}

// one folds the white space of a value, so that it stays on one line and
// reads back as written.
func one(v string) string { return strings.Join(strings.Fields(v), " ") }

func parseOutcome(v string) (Outcome, bool) {
	f := strings.Fields(v)
	if len(f) != 4 {
		return Outcome{}, false
	}
	o := Outcome{Name: f[0]}
	for _, kv := range f[1:] {
		k, val, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "exit":
			o.Exit, err = strconv.Atoi(val)
		case "seconds":
			o.Seconds, err = strconv.ParseFloat(val, 64)
		case "timeout":
			o.TimedOut, err = strconv.ParseBool(val)
		default:
			return Outcome{}, false
		}
		if err != nil {
			return Outcome{}, false
		}
	}
	return o, true
}
