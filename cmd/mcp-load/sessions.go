package main

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/internal/serverproc"
)

// maxSessions bounds --sessions: each session holds two connections on
// each side (its standalone GET stream and a keep-alive one).
const maxSessions = 4000

// sessionLimitFlags are the serve flags that cap sessions and
// subscriptions, raised to --sessions for a --sessions run when the
// binary has them (an older build may have none or only some).
var sessionLimitFlags = []string{"--max-sessions", "--max-sessions-per-principal",
	"--max-subscriptions-per-principal", "--max-listens-per-principal"}

// sessionArgs returns the serve flags that let bin hold n sessions of the
// dataset's principals, one subscription each: those of sessionLimitFlags
// that `bin serve --help` names, with some room above n (a client's
// retried initialize may hold a slot until its idle timeout;
// at exactly n, one older build refused the last sessions with 429 on a
// busy machine).
func sessionArgs(ctx context.Context, bin string, n int) ([]string, error) {
	limit := strconv.Itoa(n + max(10, n/10))
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	// Kong prints the help and exits 0.
	out, err := exec.CommandContext(ctx, bin, "serve", "--help").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s serve --help: %v: %s", bin, err, out)
	}
	var args []string
	for _, f := range sessionLimitFlags {
		if strings.Contains(string(out), f+"=") {
			args = append(args, f+"="+limit)
		}
	}
	return args, nil
}

// holdSessions is a --sessions run: it opens c.sessions stateful sessions
// (the go-sdk client over streamable HTTP, each its own transport, the
// principals alternating), each subscribed to one body its principal may
// read (the dataset's assets in turn), waits until the server counts them
// all and its goroutines stop rising, and prints the server process's
// resident memory before them and with them open, and the growth per
// session. Then it closes them, and the server must be back at its
// baseline.
func (d *driver) holdSessions(ctx context.Context) error {
	n := d.c.sessions
	base, err := d.settle(ctx, snapshot{goroutines: -1})
	if err != nil {
		return err
	}
	pid := d.srv.Cmd.Process.Pid
	before, err := serverproc.Memory(pid)
	if err != nil {
		return err
	}
	endpoint := "http://" + d.srv.Addr + "/mcp"
	keys := d.w.d.all()
	clients := make([]*client, n)
	errs := make([]error, n)
	start := time.Now()
	var wg sync.WaitGroup
	const workers = 8
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n && ctx.Err() == nil; i += workers {
				p := d.w.d.principals[i%len(d.w.d.principals)]
				cl, err := connect(ctx, endpoint, p, d.tokens[p])
				if err != nil {
					errs[i] = fmt.Errorf("session %d: %w", i, err)
					continue
				}
				clients[i] = cl
				sctx, cancel := context.WithTimeout(ctx, requestTimeout)
				uri := bodyURI(keys[(i/len(d.w.d.principals))%len(keys)])
				if err := cl.cs.Subscribe(sctx, &mcp.SubscribeParams{URI: uri}); err != nil {
					errs[i] = fmt.Errorf("session %d subscribes to %s: %w", i, uri, err)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	opened := time.Since(start)
	var open []*client
	for _, cl := range clients {
		if cl != nil {
			open = append(open, cl)
		}
	}
	defer func() { closeAll(open) }()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// The server counts the sessions; its goroutines (a stream's, a
	// subscription's) may still be starting: wait until they stop rising.
	held, err := d.srv.take(ctx, d.db)
	for deadline := time.Now().Add(d.c.settle); err == nil && time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		var now snapshot
		if now, err = d.srv.take(ctx, d.db); err == nil {
			if now.sessions >= n && now.goroutines <= held.goroutines {
				held = now
				break
			}
			held = now
		}
	}
	if err != nil {
		return err
	}
	with, err := serverproc.Memory(pid)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "sessions: %d opened and subscribed in %.1fs; the server holds %d sessions, %d goroutines (%d before)\n",
		n, opened.Seconds(), held.sessions, held.goroutines, base.goroutines)
	fmt.Fprintf(d.out, "sessions %d: server RSS before %.1f MiB, with the sessions %.1f MiB, peak %.1f MiB, per session %.1f KiB\n",
		n, before.NowMiB(), with.NowMiB(), with.PeakMiB(), float64(with.NowKB-before.NowKB)/float64(n))
	if held.sessions < n {
		d.fail("the server counts %d sessions, want %d", held.sessions, n)
	}
	closeAll(open)
	open = nil
	// The server may keep the PostgreSQL connections the subscriptions
	// opened (its LISTEN connection, a pool grown under the subscribes):
	// back at baseline is every other measure.
	back := base
	back.pgConns = math.MaxInt
	after, err := d.settle(ctx, back)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "after closing them: %s (before: %s)\n", after, base)
	if !after.atBaseline(back) {
		d.fail("not back at baseline within %s: %s, baseline %s", d.c.settle, after, base)
	}
	if !d.srv.Alive() {
		d.fail("the server process exited during the run")
	}
	return nil
}
