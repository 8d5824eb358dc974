//go:build unix

package linetransport

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// blockingPipe is a pipe whose read end is in blocking mode and has no
// read deadlines, as the stdin a client gives a stdio server is.
func blockingPipe(t *testing.T) (io.Reader, io.WriteCloser) {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	r := os.NewFile(uintptr(fds[0]), "blocking-pipe-r")
	w := os.NewFile(uintptr(fds[1]), "blocking-pipe-w")
	if r.SetReadDeadline(time.Time{}) == nil {
		t.Fatal("the test pipe has read deadlines already")
	}
	t.Cleanup(func() {
		pollMu.Lock()
		pf := pollFiles[r.Fd()]
		delete(pollFiles, r.Fd())
		pollMu.Unlock()
		if pf != nil {
			pf.Close()
		} else {
			r.Close()
		}
	})
	return r, w
}

// TestDirectReadIsInterrupted proves that a connection reading a pipe
// itself (no goroutine between the pipe and Read) still returns from a
// Read that waits for input when the connection closes or Read's context
// ends, and that a blocking pipe is read that way.
func TestDirectReadIsInterrupted(t *testing.T) {
	for name, input := range map[string]func(*testing.T) (io.Reader, io.WriteCloser){"os.Pipe": inputs["os.Pipe"], "blocking pipe": blockingPipe} {
		t.Run(name, func(t *testing.T) {
			for _, end := range []string{"close", "context"} {
				in, w := input(t)
				defer w.Close()
				mc, err := (&Transport{In: in, Out: io.Discard}).Connect(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				c := mc.(*conn)
				if c.direct == nil {
					t.Fatal("the pipe is read through a goroutine, want by Read itself")
				}
				if _, err := io.WriteString(w, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"+`{"jsonrpc":"2.0","id":2,`); err != nil {
					t.Fatal(err)
				}
				if msg, err := c.Read(t.Context()); err != nil || !msg.(*jsonrpc.Request).IsCall() {
					t.Fatalf("Read: %v, %v", msg, err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				ended := make(chan error, 1)
				go func() { _, err := c.Read(ctx); ended <- err }()
				want := io.EOF
				if end == "close" {
					c.Close()
				} else {
					cancel()
					want = context.Canceled
				}
				select {
				case err := <-ended:
					if !errors.Is(err, want) {
						t.Fatalf("%s: Read ended with %v, want %v", end, err, want)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("%s: Read still waiting for input 10 s after the end", end)
				}
				cancel()
			}
		})
	}
}
