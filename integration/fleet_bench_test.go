package integration

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkFleetScaling is the fleet's scaling figure: b.N reads of
// fleetReads by eight go-sdk clients through HAProxy in front of 1, 2 and
// 4 stateless replicas of the binary, their pools through PgBouncer in
// transaction mode (pgx in cache_describe and in exec mode), and, for
// comparison, with no pooler (pgx's default mode, pools direct). Each
// figure is measured in one run on one machine: requests per second, the
// replicas' CPU per request (user and system time from /proc/PID/stat, of
// every replica behind the balancer), and the most PostgreSQL backends of
// the database seen during the reads (the pooled ones, and the replicas'
// direct LISTEN connections). BENCHMARKS.md has the command and a table.
func BenchmarkFleetScaling(b *testing.B) {
	const clients = 8
	dbURL, _, flags := migratedAndSeeded(b)
	var first map[string]string
	for _, mode := range []string{"cache_describe", "exec", fleetDirect} {
		// One mode's fleet at a time on the one database: its cleanups
		// run when its sub-benchmark ends.
		b.Run("mode="+mode, func(b *testing.B) {
			f := startFleetOn(b, dbURL, flags, 4, mode)
			want := f.wantBodies(b)
			if first == nil {
				first = want
			}
			for uri, w := range want {
				if first[uri] != w {
					b.Fatalf("mode %s reads %s as\n%s\ncache_describe as\n%s", mode, uri, w, first[uri])
				}
			}
			for _, n := range []int{1, 2, 4} {
				var addrs []string
				for _, r := range f.reps[:n] {
					addrs = append(addrs, r.addr)
				}
				lb := startHAProxy(b, addrs...)
				b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
					benchFleet(b, f, f.reps[:n], lb.url, clients, want)
				})
			}
		})
	}
}

// benchFleet runs b.N reads by clients sessions through endpoint and
// reports the figures of reps.
func benchFleet(b *testing.B, f *fleet, reps []*runningServer, endpoint string, clients int, want map[string]string) {
	ctx := b.Context()
	sessions := make([]*mcp.ClientSession, clients)
	for i := range sessions {
		cs, err := dial(ctx, endpoint, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		sessions[i] = cs
	}
	sampler := f.sampleBackends(b)
	cpu0 := replicasCPU(b, reps)
	b.ResetTimer()
	start := time.Now()
	var next, wrong atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for _, cs := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				uri := fleetReads[i%int64(len(fleetReads))]
				res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				if err != nil {
					failed.Store(err)
					return
				}
				if body(res) != want[uri] {
					wrong.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	cpu := replicasCPU(b, reps) - cpu0
	listen, pooled := sampler.finish()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	if n := wrong.Load(); n != 0 {
		b.Fatalf("%d wrong bodies", n)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/req")
	if peak, rows := sampler.peak(); f.pooled && peak > fleetPoolSize {
		b.Logf("%d pooled backends in one sample (%d held): %s", peak, pooled, rows)
	}
	b.ReportMetric(float64(pooled), "pg-backends")
	b.ReportMetric(float64(listen), "pg-listen")
}

// clockTick is the unit of /proc/PID/stat's times: USER_HZ, 100 on Linux.
const clockTick = 10 * time.Millisecond

// replicasCPU sums the user and system time the replicas' processes have
// used.
func replicasCPU(b *testing.B, reps []*runningServer) time.Duration {
	b.Helper()
	var total time.Duration
	for _, r := range reps {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r.cmd.Process.Pid))
		if err != nil {
			b.Fatal(err)
		}
		// The fields after the command name (in parentheses, which may
		// hold spaces): state is field 3, utime 14 and stime 15.
		fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
		for _, i := range []int{14 - 3, 15 - 3} {
			v, err := strconv.ParseInt(fields[i], 10, 64)
			if err != nil {
				b.Fatalf("/proc/%d/stat: %v", r.cmd.Process.Pid, err)
			}
			total += time.Duration(v) * clockTick
		}
	}
	return total
}
