package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// BenchmarkStandbyPrimaryCost reads 16 KiB bodies through the gateway,
// with the source on the primary alone and with a streaming standby, in
// one run, and reports what each read costs the primary: the execution
// time of this database's statements on it (pg_stat_statements), its
// statements per read, and the fraction of body bytes the standby served.
// The figure that carries to a bigger machine is the primary's time per
// read: it bounds how many reads one primary serves.
//
//	eval "$(scripts/services.sh up --standby)"
//	go test -run '^$' -bench BenchmarkStandbyPrimaryCost -benchtime 2000x ./integration/
func BenchmarkStandbyPrimaryCost(b *testing.B) {
	r := newStandbyRig(b)
	if _, err := r.admin.Exec(b.Context(), `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		harness.Unavailable(b, "pg_stat_statements is not loaded on the primary (scripts/services.sh up --standby loads it): "+err.Error())
	}
	const docs = 64
	for i := range docs {
		id := fmt.Sprintf("d%d", i)
		r.exec(b, `INSERT INTO docs (id, body) VALUES ($1, $2)`, id, standbyBenchBody(id))
		r.exec(b, `INSERT INTO grants (principal, doc_id) VALUES ('alice', $1)`, id)
	}
	r.waitReplayed(b)
	// primary is this database's execution time (ms) and calls on the
	// primary, the statistics' own queries left out.
	primary := func() (ms float64, calls int64) {
		if err := r.admin.QueryRow(b.Context(), `SELECT coalesce(sum(total_exec_time), 0)::float8, coalesce(sum(calls), 0)::int8
			FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND query NOT ILIKE '%pg_stat_statements%'`).Scan(&ms, &calls); err != nil {
			b.Fatal(err)
		}
		return ms, calls
	}
	for _, mode := range []struct {
		name    string
		standby bool
	}{{"primary-only", false}, {"with-standby", true}} {
		b.Run(mode.name, func(b *testing.B) {
			opts := postgres.SourceOptions{StandbyMaxLag: time.Minute}
			var src *postgres.Source
			var res *core.Resources
			if mode.standby {
				src, res = r.source(b, opts, nil)
			} else {
				src, res = r.sourceOn(b, opts, nil)
			}
			ctx := core.WithCaller(context.Background(), core.Caller{Principal: "alice"})
			for i := range docs { // warm both pools' prepared statements
				if _, err := res.Read(ctx, fmt.Sprintf("sb://docs/d%d", i)); err != nil {
					b.Fatal(err)
				}
			}
			before := src.StandbyStats()
			ms0, calls0 := primary()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				id := fmt.Sprintf("d%d", i%docs)
				got, err := res.Read(ctx, "sb://docs/"+id)
				if err != nil || len(got.Items()) != 1 || got.Items()[0].Text() != standbyBenchBody(id) {
					b.Fatalf("read %s: %v", id, err)
				}
			}
			b.StopTimer()
			ms1, calls1 := primary()
			after := src.StandbyStats()
			var standbyBytes int64
			for k, s := range after.Standbys {
				standbyBytes += s.Bytes - before.Standbys[k].Bytes
			}
			primaryBytes := after.PrimaryBytes - before.PrimaryBytes
			if !mode.standby { // no standby: the store counts no primary bodies either
				primaryBytes = int64(b.N) * int64(len(standbyBenchBody("d0")))
			}
			b.ReportMetric((ms1-ms0)*1000/float64(b.N), "primary-exec-µs/read")
			b.ReportMetric(float64(calls1-calls0)/float64(b.N), "primary-stmts/read")
			b.ReportMetric(float64(standbyBytes)/float64(max(standbyBytes+primaryBytes, 1)), "standby-byte-fraction")
		})
	}
}

// standbyBenchBody is document id's body: 16 KiB, unique to it.
func standbyBenchBody(id string) string {
	head := id + ":"
	b := make([]byte, 16<<10)
	copy(b, head)
	for i := len(head); i < len(b); i++ {
		b[i] = 'a' + byte(i%26)
	}
	return string(b)
}
