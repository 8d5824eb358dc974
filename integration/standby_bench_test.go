package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// standbyTurn is how many reads one side makes in a turn of
// [BenchmarkStandbyPrimaryCost] before the other side makes as many.
const standbyTurn = 32

// BenchmarkStandbyPrimaryCost reads bodies of 16 and of 256 KiB through
// the gateway from two sources over the same database: one on the primary
// alone, one whose bodies come from a streaming hot standby. Both read in
// turns within one loop (standbyTurn reads of one, then as many of the
// other, the order swapped each turn), so that what the machine's other
// work costs falls on both alike. For each side it reports the CPU time
// (user and system) of the primary cluster's processes per read (the
// postmaster and its children, from /proc: the postmaster is the parent
// of a backend of the pool, found with pg_backend_pid), measured around
// that side's reads only; for the side with the standby also the standby
// cluster's CPU per read and the fraction of body bytes the standby
// served; and, when pg_stat_statements is loaded on the primary
// (scripts/services.sh up --standby loads it), the statements the primary
// ran per read. ns/op is one read of each side. The figure that carries
// to a bigger machine is the primary's CPU per read, with the standby
// against without: it bounds how many reads one primary serves.
//
//	eval "$(scripts/services.sh up --standby)"
//	go test -run '^$' -bench BenchmarkStandbyPrimaryCost -benchtime 2000x ./integration/
func BenchmarkStandbyPrimaryCost(b *testing.B) {
	r := newStandbyRig(b)
	primary, standby := clusterOf(b, r.admin), clusterOf(b, r.standbyAdmin)
	if primary.postmaster == standby.postmaster {
		b.Fatalf("the primary and the standby are the same cluster (postmaster %d)", primary.postmaster)
	}
	statsOK := true
	if _, err := r.admin.Exec(b.Context(), `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		b.Logf("no statements per read: pg_stat_statements is not loaded on the primary: %v", err)
		statsOK = false
	}
	// statements is the number of this database's statements the primary
	// has run, the statistics' own left out.
	statements := func(b *testing.B) int64 {
		var n int64
		if !statsOK {
			return 0
		}
		if err := r.admin.QueryRow(b.Context(), `SELECT coalesce(sum(calls), 0)::int8
			FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND query NOT ILIKE '%pg_stat_statements%'`).Scan(&n); err != nil {
			b.Fatal(err)
		}
		return n
	}
	const docs = 64
	sizes := []struct {
		name string
		size int
	}{{"16KiB", 16 << 10}, {"256KiB", 256 << 10}}
	for _, sz := range sizes {
		for i := range docs {
			id := fmt.Sprintf("%s-d%d", sz.name, i)
			r.exec(b, `INSERT INTO docs (id, body) VALUES ($1, $2)`, id, standbyBenchBody(id, sz.size))
			r.exec(b, `INSERT INTO grants (principal, doc_id) VALUES ('alice', $1)`, id)
		}
	}
	r.waitReplayed(b)

	opts := postgres.SourceOptions{StandbyMaxLag: time.Minute}
	// The side on the primary alone has a pool of its own, so that neither
	// side's connections or prepared statements serve the other.
	_, aloneRes := (&standbyRig{pool: newPool(b, r.primaryURL, nil)}).sourceOn(b, opts, nil)
	withSrc, withRes := r.source(b, opts, nil)
	ctx := core.WithCaller(context.Background(), core.Caller{Principal: "alice"})

	for _, sz := range sizes {
		b.Run(sz.name, func(b *testing.B) {
			type side struct {
				name    string
				res     *core.Resources
				primary time.Duration // the primary cluster's CPU in this side's turns
				standby time.Duration // the standby cluster's
				pfaults int64         // the primary cluster's minor page faults in them
				sfaults int64         // the standby cluster's
				stmts   int64         // the primary's statements in this side's turns
				reads   int
			}
			alone := &side{name: "alone", res: aloneRes}
			withStandby := &side{name: "with-standby", res: withRes}
			read := func(res *core.Resources, n int) {
				id := fmt.Sprintf("%s-d%d", sz.name, n%docs)
				got, err := res.Read(ctx, "sb://docs/"+id)
				if err != nil || len(got.Items()) != 1 || got.Items()[0].Text() != standbyBenchBody(id, sz.size) {
					b.Fatalf("read %s: %v", id, err)
				}
			}
			for _, s := range []*side{alone, withStandby} { // warm both pools
				for i := range docs {
					read(s.res, i)
				}
			}
			if st := withSrc.StandbyStats().Standbys[0]; st.State != "ready" {
				b.Fatalf("the standby is %s (lag %v), not ready", st.State, st.Lag)
			}
			before := withSrc.StandbyStats()

			b.ReportAllocs()
			b.ResetTimer()
			for done, turn := 0, 0; done < b.N; turn++ {
				n := min(standbyTurn, b.N-done)
				order := []*side{alone, withStandby}
				if turn%2 == 1 {
					order[0], order[1] = order[1], order[0]
				}
				for _, s := range order {
					st0 := statements(b) // outside the CPU window: it costs the primary too
					p0, pf0 := primary.cpu(b)
					sb0, sf0 := standby.cpu(b)
					for j := range n {
						read(s.res, done+j)
					}
					p1, pf1 := primary.cpu(b)
					sb1, sf1 := standby.cpu(b)
					s.primary += p1 - p0
					s.standby += sb1 - sb0
					s.pfaults += pf1 - pf0
					s.sfaults += sf1 - sf0
					s.stmts += statements(b) - st0
					s.reads += n
				}
				done += n
			}
			b.StopTimer()

			after := withSrc.StandbyStats()
			var standbyBytes int64
			for k, s := range after.Standbys {
				standbyBytes += s.Bytes - before.Standbys[k].Bytes
			}
			primaryBytes := after.PrimaryBytes - before.PrimaryBytes
			for _, s := range []*side{alone, withStandby} {
				b.ReportMetric(float64(s.primary.Nanoseconds())/1e3/float64(s.reads), "primary-cpu-µs/read-"+s.name)
				b.ReportMetric(float64(s.pfaults)/float64(s.reads), "primary-minflt/read-"+s.name)
				if statsOK {
					b.ReportMetric(float64(s.stmts)/float64(s.reads), "primary-stmts/read-"+s.name)
				}
			}
			b.ReportMetric(float64(withStandby.standby.Nanoseconds())/1e3/float64(withStandby.reads), "standby-cpu-µs/read-with-standby")
			b.ReportMetric(float64(withStandby.sfaults)/float64(withStandby.reads), "standby-minflt/read-with-standby")
			b.ReportMetric(float64(standbyBytes)/float64(max(standbyBytes+primaryBytes, 1)), "standby-byte-fraction")
		})
	}
}

// standbyBenchBody is document id's body: size bytes, unique to it.
func standbyBenchBody(id string, size int) string {
	head := id + ":"
	b := make([]byte, size)
	copy(b, head)
	for i := len(head); i < len(b); i++ {
		b[i] = 'a' + byte(i%26)
	}
	return string(b)
}

// pgCluster is a PostgreSQL cluster running on this machine, known by its
// postmaster, the parent of all its processes.
type pgCluster struct{ postmaster int }

// clusterOf returns the cluster behind pool: the parent of one of its
// backends (pg_backend_pid). It skips when that process is not visible
// here (a server on another machine, or in a container of its own).
func clusterOf(b *testing.B, pool *pgxpool.Pool) pgCluster {
	b.Helper()
	var backend int
	if err := pool.QueryRow(b.Context(), `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		b.Fatal(err)
	}
	f, err := procStat(backend)
	if err != nil {
		harness.Unavailable(b, fmt.Sprintf("the PostgreSQL backend %d is not a process of this machine (%v): its cluster's CPU cannot be read", backend, err))
	}
	pm, _ := strconv.Atoi(f[1])
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pm))
	if err != nil || !strings.HasPrefix(string(comm), "postgres") {
		harness.Unavailable(b, fmt.Sprintf("the parent %d of the PostgreSQL backend %d is not a postmaster (%q, %v)", pm, backend, comm, err))
	}
	return pgCluster{postmaster: pm}
}

// cpu is the CPU time (user and system) that the cluster's processes have
// used so far: the postmaster's and each live child's own, and what the
// postmaster's children that have exited used (its cutime and cstime).
// A process's own time is the first field of /proc/PID/schedstat, its
// utime+stime in nanoseconds (/proc/PID/stat has them in clock ticks of
// 10 ms, too coarse for a turn of reads; it is the fallback). faults is
// their minor page faults alike (minflt and cminflt): a backend whose
// allocator hands a large body's memory back to the kernel after each
// read faults it in again on the next, which costs it more CPU than the
// body itself.
func (c pgCluster) cpu(b *testing.B) (total time.Duration, faults int64) {
	f, err := procStat(c.postmaster)
	if err != nil {
		b.Fatalf("the postmaster %d: %v", c.postmaster, err)
	}
	total = ownCPU(c.postmaster, f) + (ticks(f[13])+ticks(f[14]))*10*time.Millisecond
	faults = count(f[7]) + count(f[8])
	kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", c.postmaster, c.postmaster))
	if err != nil {
		b.Fatalf("the postmaster %d's children: %v", c.postmaster, err)
	}
	for _, k := range strings.Fields(string(kids)) {
		pid, _ := strconv.Atoi(k)
		if kf, err := procStat(pid); err == nil { // a child may exit meanwhile
			total += ownCPU(pid, kf)
			faults += count(kf[7])
		}
	}
	return total, faults
}

// procStat returns the fields of /proc/PID/stat after the command's name:
// f[0] is the state, f[1] the parent, f[7] and f[8] minflt and cminflt,
// f[11] and f[12] utime and stime,
// f[13] and f[14] cutime and cstime.
func procStat(pid int) ([]string, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 || i+2 > len(raw) {
		return nil, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, raw)
	}
	f := strings.Fields(string(raw[i+2:]))
	if len(f) < 15 {
		return nil, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return f, nil
}

// ownCPU is a process's own CPU time: from /proc/PID/schedstat, or from
// stat (its fields f) in clock ticks when schedstat cannot be read.
func ownCPU(pid int, f []string) time.Duration {
	if raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid)); err == nil {
		if s := strings.Fields(string(raw)); len(s) > 0 {
			if ns, err := strconv.ParseInt(s[0], 10, 64); err == nil {
				return time.Duration(ns)
			}
		}
	}
	return (ticks(f[11]) + ticks(f[12])) * 10 * time.Millisecond
}

func ticks(s string) time.Duration { return time.Duration(count(s)) }

func count(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
