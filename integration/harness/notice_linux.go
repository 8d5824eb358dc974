package harness

import (
	"fmt"
	"os"
	"strings"
)

// tellGoCommand writes line to the standard output of the go command that
// runs this test binary, so that `go test ./...` (which keeps a passing
// package's output to itself unless -v is given) still says why integration
// tests were skipped; it reports whether it did. It writes only when the
// parent process is `go` and its output is a terminal or a pipe: on a regular
// file our write would not move the go command's own file offset and could be
// overwritten. A cached result replays nothing; -count=1 or -v shows the
// reason again.
func tellGoCommand(line string) bool {
	ppid := os.Getppid()
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", ppid))
	if err != nil || strings.TrimSpace(string(comm)) != "go" {
		return false
	}
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/1", ppid), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.Mode()&(os.ModeNamedPipe|os.ModeCharDevice) == 0 {
		return false
	}
	_, err = f.WriteString(line + "\n")
	return err == nil
}
