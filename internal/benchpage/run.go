package benchpage

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// maxRaw bounds the raw output kept of one entry; the rest is dropped
// with a note (the page's tables come from the first lines anyway).
const maxRaw = 512 << 10

// timeout is the bound of e's command in mode: its Timeout, half of it in
// quick mode, ten minutes when it has none.
func (e Entry) timeout(mode string) time.Duration {
	d := e.Timeout
	if d == 0 {
		d = 10 * time.Minute
	}
	if mode == "quick" {
		d /= 2
	}
	return d
}

// RunEntry runs the command of e for mode from root under bash, in a
// process group of its own stopped at e's timeout, and writes its output
// (stdout and stderr, the command first) to dir/NAME.txt.
func RunEntry(ctx context.Context, root, dir, mode string, e Entry, log io.Writer) Outcome {
	o := Outcome{Name: e.Name, Exit: -1}
	cmdline := e.Command(mode)
	f, err := os.Create(filepath.Join(dir, e.Name+".txt"))
	if err != nil {
		fmt.Fprintf(log, "bench: %s: %v\n", e.Name, err)
		return o
	}
	defer f.Close()
	fmt.Fprintf(f, "# %s\n", cmdline)
	w := &capped{w: f, left: maxRaw}
	ctx, cancel := context.WithTimeout(ctx, e.timeout(mode))
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", cmdline)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Stop the whole group (go test's binaries, servers it started):
	// SIGTERM first, SIGKILL 15 s later.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	start := time.Now()
	fmt.Fprintf(log, "bench: %s: %s\n", e.Name, cmdline)
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what is left of the group
	}
	o.Seconds = time.Since(start).Seconds()
	o.TimedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
	var ee *exec.ExitError
	switch {
	case err == nil:
		o.Exit = 0
	case errors.As(err, &ee):
		o.Exit = ee.ExitCode()
	}
	if w.dropped > 0 {
		fmt.Fprintf(f, "\n# bench: %d bytes of output dropped after the first %d\n", w.dropped, maxRaw)
	}
	fmt.Fprintf(log, "bench: %s: exit %d after %.0f s%s\n", e.Name, o.Exit, o.Seconds, map[bool]string{true: " (timeout)"}[o.TimedOut])
	return o
}

// capped writes up to left bytes to w and counts the rest.
type capped struct {
	w       io.Writer
	left    int
	dropped int
}

func (c *capped) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > c.left {
		c.dropped += len(p) - c.left
		p = p[:c.left]
	}
	c.left -= len(p)
	if len(p) > 0 {
		if _, err := c.w.Write(p); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// Machine fills in ri's machine from /proc, /etc/os-release and `go
// version`.
func Machine(ctx context.Context, ri *RunInfo) {
	ri.CPU = procField("/proc/cpuinfo", "model name", "unknown CPU")
	ri.Cores = runtime.NumCPU()
	if kb := atoi(strings.TrimSuffix(procField("/proc/meminfo", "MemTotal", "0 kB"), " kB")); kb > 0 {
		ri.Memory = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
	} else {
		ri.Memory = "unknown"
	}
	if out, err := exec.CommandContext(ctx, "go", "version").Output(); err == nil {
		ri.Go = strings.TrimSpace(string(out))
	}
	osName := strings.Trim(procField("/etc/os-release", "PRETTY_NAME", runtime.GOOS), `"`)
	if k, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		osName += ", Linux " + strings.TrimSpace(string(k))
	}
	ri.OS = osName
}

// LoadAverage is the first three fields of /proc/loadavg.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// procField is the value of the first "key: value" or "key=value" line of
// file whose key is key.
func procField(file, key, def string) string {
	f, err := os.Open(file)
	if err != nil {
		return def
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			k, v, ok = strings.Cut(sc.Text(), "=")
		}
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return def
}
