//go:build unix

package linetransport

import (
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// pollFiles keeps the pollable file made for each descriptor: it must
// never be collected (its cleanup would close the descriptor, a process's
// stdin) and a second Connect on the same input reuses it.
var (
	pollMu    sync.Mutex
	pollFiles = map[uintptr]*os.File{}
)

// pollable returns in as a file whose reads a deadline can interrupt, or
// ok false. A file that has read deadlines already (os.Pipe's) is itself.
// A pipe or socket without them, such as the stdin a client gives a stdio
// server, is switched to non-blocking mode and opened again as such, so
// that its reads wait in the runtime's poller rather than holding a
// thread in a blocking system call: the mode stays after the connection
// ends, for whatever else holds the same pipe. Anything else (a terminal,
// a regular file, a reader that is not a file) is not pollable.
func pollable(in io.Reader) (*os.File, bool) {
	f, ok := in.(*os.File)
	if !ok || f == nil {
		return nil, false
	}
	if f.SetReadDeadline(time.Time{}) == nil {
		return f, true
	}
	fd := f.Fd()
	pollMu.Lock()
	defer pollMu.Unlock()
	if pf, ok := pollFiles[fd]; ok {
		return pf, true
	}
	var st syscall.Stat_t
	if syscall.Fstat(int(fd), &st) != nil {
		return nil, false
	}
	if mode := st.Mode & syscall.S_IFMT; mode != syscall.S_IFIFO && mode != syscall.S_IFSOCK {
		return nil, false
	}
	if syscall.SetNonblock(int(fd), true) != nil {
		return nil, false
	}
	pf := os.NewFile(fd, f.Name())
	if pf == nil || pf.SetReadDeadline(time.Time{}) != nil {
		_ = syscall.SetNonblock(int(fd), false)
		return nil, false
	}
	pollFiles[fd] = pf
	return pf, true
}
