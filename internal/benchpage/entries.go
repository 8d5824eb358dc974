package benchpage

import (
	"fmt"
	"time"
)

// Kind says which tool an [Entry] runs, and so which parser reads its
// output and how its table is built.
type Kind int

// The kinds of [Entry].
const (
	// GoBench is `go test -bench` ([ParseGoBench]).
	GoBench Kind = iota
	// LoadAB is scripts/load-ab.sh ([ParseLoadAB]).
	LoadAB
	// Load is cmd/mcp-load ([ParseLoad]).
	Load
	// Peers is scripts/peers.sh, which runs cmd/mcp-peers ([ParsePeers]).
	Peers
	// MemoryAB is scripts/memory-ab.sh: the outputs of peers.sh,
	// load-ab.sh, sessions-ab.sh ([ParseSessionsAB]) and the big-file
	// start-up benchmark, one after the other, in one table.
	MemoryAB
)

// Section names the page's sections, in their order on the page.
var Sections = []string{"Peers", "Baselines", "Raw storage", "Round trips", "Load", "Start-up", "Fleet", "Standbys"}

// Entry is one benchmark of the page: where its table goes, the shell
// commands that run it (Full for the page, Quick for trying the script
// out), and how to read its output. Commands run from the checkout's root
// under bash, with the services' environment and BENCH_HEAD_BIN (this
// checkout's mcp-resources), BENCH_BASE_BIN (the baseline commit's),
// BENCH_BASE (that commit), BENCH_MEM_BASE_BIN and BENCH_MEM_BASE (the
// memory baseline's) set by scripts/bench.sh.
type Entry struct {
	// Name is the entry's file under docs/bench (Name + ".txt").
	Name    string
	Section string
	Title   string
	// About says in a sentence what the table compares.
	About string
	Kind  Kind
	Full  string
	Quick string
	// Sibling, for [GoBench]: the last element of the sub-benchmark name
	// that the others of the same parent are divided by (for example
	// "raw"), in the columns "time x NAME" and "CPU x NAME": the i-th run
	// of each divided by the i-th of NAME, median and range. Run such an
	// entry in [rounds] of -count 1, so that the i-th runs ran together.
	Sibling string
	// Units, for [GoBench]: the columns, in order; empty means every unit
	// reported, in the order printed.
	Units []string
	// Ratio, for [GoBench]: two units of one result divided into a
	// column "Ratio[0] / Ratio[1]" (for example two binaries' medians).
	Ratio [2]string
	// Sides, for [LoadAB]: what the script's two sides (its "old" and
	// "new" runs) are, as the table's columns name them; empty means the
	// baseline and this commit.
	Sides [2]string
	// Kinds, for [LoadAB]: the kinds of request (cmd/mcp-load's index,
	// body, object, joined, project, list) whose load-phase p50 gets a
	// row, in this order.
	Kinds []string
	// RSS, for [LoadAB]: a row of the server's peak resident memory.
	RSS bool
	// Keep shows the entry's table whole on the page, when others are
	// cut to fit it in [MaxLines]: a table that targets are read from.
	Keep bool
	// Timeout bounds the full run (half of it the quick one).
	Timeout time.Duration
	// Pending, when set, says that no benchmark exists yet for the entry:
	// the page reports it as not run, with this text.
	Pending string
}

// gobench is the command of a benchmark run: no tests, -benchmem, a
// timeout that go test enforces too.
func gobench(pattern, flags, pkg string) string {
	return "go test -run '^$' -bench '" + pattern + "' -benchmem " + flags + " -timeout 15m " + pkg
}

// rounds runs cmd n times in a row, stopping at the first that fails:
// with -count N, go test runs each sub-benchmark N times before the next,
// so that siblings compared by a ratio would run minutes apart; rounds of
// -count 1 run them next to each other, and the page pairs them by round.
func rounds(n int, cmd string) string {
	return fmt.Sprintf("for round in $(seq %d); do %s || exit; done", n, cmd)
}

// Entries is the page: every benchmark it runs, in order. To add one,
// add an entry here (and its section to [Sections] when new); an entry
// whose benchmark is missing or skips itself is shown as not run.
var Entries = []Entry{
	{
		Name: "peers", Section: "Peers", Kind: Peers, Timeout: 8 * time.Minute,
		Title: "Same-row read: ours, the baseline, server-postgres, dbhub",
		About: "cmd/mcp-peers: one go-sdk client over stdio reads the same row through each server, calls interleaved, every answer checked; CPU is the server process's own.",
		Full:  `scripts/peers.sh --calls 2000 --starts 20 --baseline "$BENCH_BASE_BIN"`,
		Quick: `scripts/peers.sh --calls 300 --starts 5 --baseline "$BENCH_BASE_BIN"`,
	},
	{
		Name: "load-ab", Section: "Baselines", Kind: LoadAB, Timeout: 8 * time.Minute, Keep: true,
		Title: "Load driver: the baseline against this commit, interleaved pairs",
		About: "scripts/load-ab.sh: cmd/mcp-load against each binary in turn (old, new; new, old; ...), CPU per request from /proc; the load phase's p50 of index, listing and body reads.",
		Kinds: []string{"index", "list", "body"},
		Full:  `scripts/load-ab.sh "$BENCH_BASE_BIN" "$BENCH_HEAD_BIN" 3 64 15s`,
		Quick: `scripts/load-ab.sh "$BENCH_BASE_BIN" "$BENCH_HEAD_BIN" 1 16 4s`,
	},
	{
		Name: "memory", Section: "Baselines", Kind: MemoryAB, Timeout: 12 * time.Minute, Keep: true,
		Title: "Memory and S3 object reads: the memory baseline against this commit",
		About: "scripts/memory-ab.sh: the server process's RSS (/proc: VmHWM the peak, VmRSS) after sequential reads over stdio (peers.sh, with the RSS split into the pages of files, the executable's, and anonymous ones), under load (load-ab.sh, with its S3 object p50), holding subscribed sessions (mcp-load --sessions) and once big resources files are checked (internal/bigfile), each beside the memory baseline's binary in the same run; medians (range).",
		Full:  `scripts/memory-ab.sh "$BENCH_MEM_BASE_BIN"`,
		Quick: `scripts/memory-ab.sh --quick "$BENCH_MEM_BASE_BIN"`,
	},
	{
		Name: "sdk-json", Section: "Baselines", Kind: LoadAB, Timeout: 10 * time.Minute,
		Sides: [2]string{"go-sdk as released", "go-sdk, JSON decoded in place"},
		Kinds: []string{"index", "list", "body"}, RSS: true,
		Title: "The go-sdk's JSON decoding: this commit against itself built on a one-line fix of the SDK",
		About: "scripts/sdk-json-ab.sh: the SDK's internal/json.Unmarshal allocates and clears a 32 KiB buffer per call, several per request; scripts/go-sdk-json.patch decodes in place (segmentio's Parse, same flag). Both builds are this commit; load-ab.sh pairs at 64 clients, then peers.sh over stdio in the raw output.",
		Full:  `scripts/sdk-json-ab.sh 3 64 15s 2000`,
		Quick: `scripts/sdk-json-ab.sh 1 16 4s 300`,
	},
	{
		Name: "core-read", Section: "Raw storage", Kind: GoBench, Timeout: 4 * time.Minute,
		Title: "Gateway's own cost over a synthetic bundle",
		About: "core.Resources.Read of 1, 16 and 256 in-memory items.",
		Units: []string{"ns/op", "ns/item", "B/op", "allocs/op"},
		Full:  gobench("BenchmarkRead$", "-benchtime 300ms -count 5", "./core/"),
		Quick: gobench("BenchmarkRead$", "-benchtime 50ms -count 1", "./core/"),
	},
	{
		Name: "memory-store", Section: "Raw storage", Kind: GoBench, Timeout: 4 * time.Minute, Sibling: "store",
		Title: "Gateway over the in-memory store against the store's own calls",
		About: "one 1 KiB item; store is the store's calls without the gateway.",
		Units: []string{"ns/op", "cpu-ns/op", "B/op", "allocs/op"},
		Full:  rounds(5, gobench("BenchmarkMemoryStoreRead", "-benchtime 300ms -count 1", "./stores/memory/")),
		Quick: gobench("BenchmarkMemoryStoreRead", "-benchtime 50ms -count 1", "./stores/memory/"),
	},
	{
		Name: "pg-store", Section: "Raw storage", Kind: GoBench, Timeout: 6 * time.Minute, Sibling: "raw",
		Title: "PostgreSQL: a gateway read against pgx's QueryRow of the same rows",
		About: "one pool of one connection; raw is pgx alone; grants-vs-raw times both in turns in one loop; floor-vs-raw sends the batch a grants read sends with pgx alone (the SQL's own share).",
		Units: []string{"ns/op", "cpu-ns/op", "allocs/op", "grants/base", "floor/base"},
		Full:  rounds(5, gobench("BenchmarkPGStore(OneRow|Bundle64)$", "-benchtime 200ms -count 1", "./integration/")),
		Quick: gobench("BenchmarkPGStore(OneRow|Bundle64)$", "-benchtime 20x -count 1", "./integration/"),
	},
	{
		Name: "pg-bodies", Section: "Raw storage", Kind: GoBench, Timeout: 5 * time.Minute, Sibling: "raw",
		Title: "PostgreSQL: bodies in one statement against sequential reads",
		About: "64 bodies in one statement, one by one, and raw pgx; one body with its recheck folded in.",
		Units: []string{"ns/op", "srv-ns/op", "allocs/op"},
		Full:  rounds(5, gobench("BenchmarkBodies$", "-benchtime 200ms -count 1", "./stores/postgres/")),
		Quick: gobench("BenchmarkBodies$", "-benchtime 20x -count 1", "./stores/postgres/"),
	},
	{
		Name: "s3-store", Section: "Raw storage", Kind: GoBench, Timeout: 5 * time.Minute, Sibling: "raw",
		Title: "S3: a gateway read against GetObject of the same object",
		About: "versitygw on loopback; raw is the SDK's GetObject and a read of the body.",
		Units: []string{"ns/op", "cpu-ns/op", "B/op", "allocs/op"},
		Full:  rounds(5, gobench("BenchmarkS3StoreRead$", "-benchtime 200ms -count 1", "./integration/")),
		Quick: gobench("BenchmarkS3StoreRead$", "-benchtime 10x -count 1", "./integration/"),
	},
	{
		Name: "mcp-roundtrip", Section: "Round trips", Kind: GoBench, Timeout: 5 * time.Minute, Sibling: "sdk",
		Title: "MCP round trip: our adapter against the SDK's AddResource",
		About: "in-memory transport, go-sdk client; core is a direct call without MCP.",
		Units: []string{"ns/op", "cpu-ns/op", "B/op", "allocs/op"},
		Full:  rounds(5, gobench("BenchmarkReadExact|BenchmarkReadBlob|BenchmarkReadLastOf10kTemplates", "-benchtime 300ms -count 1", "./mcpsdk/")),
		Quick: gobench("BenchmarkReadExact|BenchmarkReadBlob|BenchmarkReadLastOf10kTemplates", "-benchtime 30ms -count 1", "./mcpsdk/"),
	},
	{
		Name: "oauth", Section: "Round trips", Kind: GoBench, Timeout: 5 * time.Minute,
		Units: []string{"tokens-file-ns/read", "jwt-ns/read", "introspection-ns/read", "%added", "%added-introspection"},
		Title: "OAuth: a body read with a JWT or an introspected token against a tokens-file token",
		About: "over HTTP; the three in turns; needs the Hydra of scripts/services.sh.",
		Full:  gobench("BenchmarkOAuthBodyRead$", "-benchtime 300x -count 5", "./integration/"),
		Quick: gobench("BenchmarkOAuthBodyRead$", "-benchtime 30x -count 1", "./integration/"),
	},
	{
		Name: "load", Section: "Load", Kind: Load, Timeout: 4 * time.Minute,
		Title: "Load: concurrent MCP clients over streamable HTTP, every body checked",
		About: "cmd/mcp-load against this commit's binary, its own database, bucket and versitygw.",
		Full:  `go run ./cmd/mcp-load --server "$BENCH_HEAD_BIN" --clients 64 --duration 30s --warmup 5s`,
		Quick: `go run ./cmd/mcp-load --server "$BENCH_HEAD_BIN" --clients 16 --duration 5s --warmup 2s`,
	},
	{
		Name: "load-faults", Section: "Load", Kind: Load, Timeout: 4 * time.Minute,
		Title: "Fault run: backends terminated, S3 restarted, grants revoked, then recovery",
		About: "cmd/mcp-load --faults: partial or failed answers are allowed during faults, wrong ones never.",
		Full:  `go run ./cmd/mcp-load --server "$BENCH_HEAD_BIN" --clients 64 --duration 30s --warmup 5s --recovery 10s --faults`,
		Quick: `go run ./cmd/mcp-load --server "$BENCH_HEAD_BIN" --clients 16 --duration 5s --warmup 2s --recovery 3s --faults`,
	},
	{
		Name: "startup", Section: "Start-up", Kind: GoBench, Timeout: 6 * time.Minute,
		Units: []string{"ms-median-base", "ms-median-this"},
		Ratio: [2]string{"ms-median-this", "ms-median-base"},
		Title: "Exec to initialize and to the first read: this commit against the baseline",
		About: "serve --postgres --bucket over stdio; each iteration starts both binaries in turn.",
		Full:  `MCPRES_BENCH_BINARIES=base="$BENCH_BASE_BIN" ` + gobench("BenchmarkExecTo(Initialize|FirstRead)$", "-benchtime 15x -count 3", "./cmd/mcp-resources/"),
		Quick: `MCPRES_BENCH_BINARIES=base="$BENCH_BASE_BIN" ` + gobench("BenchmarkExecTo(Initialize|FirstRead)$", "-benchtime 5x -count 1", "./cmd/mcp-resources/"),
	},
	{
		Name: "startup-proof", Section: "Start-up", Kind: GoBench, Timeout: 8 * time.Minute,
		Units: []string{"ms-base", "ms-proof"},
		Ratio: [2]string{"ms-proof", "ms-base"},
		Title: "check and start-up to the first read, with the storage-enforcement proof and without it",
		About: "in one process: check --config, and serve over stdio from its start to the answer of a first read, on the documents example and the reference file; each iteration runs both, without and with the proof (internal/proofhook), in turns; medians in ms. The target is at most 1.5x.",
		Full:  gobench("BenchmarkStartupProof$", "-benchtime 20x -count 3", "./cmd/mcp-resources/"),
		Quick: gobench("BenchmarkStartupProof$", "-benchtime 5x -count 1", "./cmd/mcp-resources/"),
	},
	{
		Name: "source-check", Section: "Start-up", Kind: GoBench, Timeout: 6 * time.Minute,
		Units: []string{"ns/op", "base-us", "proof-us", "proof/base"},
		Title: "The start-up check with and without the storage-enforcement proof",
		About: "config.File.Open (pool, ping, Source.Check); proof-vs-without times both in turns in one loop.",
		Full:  gobench("BenchmarkSourceCheckProof$", "-benchtime 40x -count 3", "./stores/postgres/"),
		Quick: gobench("BenchmarkSourceCheckProof$", "-benchtime 5x -count 1", "./stores/postgres/"),
	},
	{
		Name: "fleet", Section: "Fleet", Kind: GoBench, Timeout: 8 * time.Minute,
		Units: []string{"req/s", "cpu-µs/req", "pg-backends", "pg-listen"},
		Title: "Stateless replicas behind HAProxy, pools through PgBouncer or direct",
		About: "eight clients through the balancer at 1, 2 and 4 replicas; CPU is the replicas' per read.",
		Full:  gobench("BenchmarkFleetScaling$", "-benchtime 1000x -count 3", "./integration/"),
		Quick: gobench("BenchmarkFleetScaling$", "-benchtime 100x -count 1", "./integration/"),
	},
	{
		Name: "standbys", Section: "Standbys", Kind: GoBench, Timeout: 8 * time.Minute,
		Units: []string{"primary-cpu-µs/read-alone", "primary-cpu-µs/read-with-standby", "standby-cpu-µs/read-with-standby",
			"standby-byte-fraction", "primary-stmts/read-alone", "primary-stmts/read-with-standby"},
		Ratio: [2]string{"primary-cpu-µs/read-with-standby", "primary-cpu-µs/read-alone"},
		Title: "The primary's CPU per read with and without a hot standby serving the bodies",
		About: "bodies of 16 and 256 KiB read through the gateway from a source on the primary alone and one with a streaming standby, in turns within one loop; CPU is each cluster's processes' (/proc), measured around each side's reads; the fraction of body bytes the standby served.",
		Full:  gobench("BenchmarkStandbyPrimaryCost$", "-benchtime 2000x -count 3", "./integration/"),
		Quick: gobench("BenchmarkStandbyPrimaryCost$", "-benchtime 200x -count 1", "./integration/"),
	},
	{
		Name: "audit-cost", Section: "Load", Kind: LoadAB, Timeout: 8 * time.Minute,
		Sides: [2]string{"no audit trail", "--audit-postgres"},
		Title: "The audit trail to PostgreSQL against none, interleaved pairs at 64 clients",
		About: "scripts/audit-cost.sh: A serves without an audit trail, B with --audit-postgres and --audit-on-failure refuse.",
		Full:  `scripts/audit-cost.sh 3 64 15s`,
		Quick: `scripts/audit-cost.sh 1 16 4s`,
	},
	{
		Name: "big-file-first-read", Section: "Start-up", Kind: GoBench, Timeout: 10 * time.Minute,
		Units: []string{"ms-median-this", "ms-checked-this", "rss-MiB-this", "peak-MiB-this"},
		Title: "Exec to the first read of a file of 10,000 distinct templates, and to the end of its check",
		About: "serve --config over stdio with internal/bigfile's file, every template its own statements (over 4 MiB, which the baselines refuse); the read is through the last template; ms-checked is exec to the line that says the check passed, rss the memory then.",
		Full:  "MCPRES_BENCH_TEMPLATES=10000 MCPRES_BENCH_SHAPES=0 " + gobench("BenchmarkExecToFirstReadBigFile$", "-benchtime 1x -count 3", "./cmd/mcp-resources/"),
		Quick: "MCPRES_BENCH_TEMPLATES=2000 MCPRES_BENCH_SHAPES=0 " + gobench("BenchmarkExecToFirstReadBigFile$", "-benchtime 1x -count 1", "./cmd/mcp-resources/"),
	},
	{
		Name: "big-files", Section: "Start-up", Kind: GoBench, Timeout: 8 * time.Minute,
		Title: "The start-up check of a big resources file, per template: one statement after another against batched",
		About: "internal/bigfile's generated file (10 statement shapes, and all distinct), Source.Check on real PostgreSQL.",
		Full:  "MCPRES_BENCH_TEMPLATES=1000,10000 " + gobench("BenchmarkBigFileCheck$", "-benchtime 1x -count 1", "./stores/postgres/"),
		Quick: "MCPRES_BENCH_TEMPLATES=1000 " + gobench("BenchmarkBigFileCheck$", "-benchtime 1x -count 1", "./stores/postgres/"),
	},
	{
		Name: "session-memory", Section: "Round trips", Kind: GoBench, Timeout: 4 * time.Minute,
		Title: "Memory a stateful streamable-HTTP session holds, with one subscription",
		About: "1,000 sessions open on the adapter over the memory store; heap and goroutine stacks after a GC, per session, and that heap profiled by who allocated it (every allocation sampled): the go-sdk, this module (adapter, live hub, gateway), net/http and the rest.",
		Full:  gobench("BenchmarkSessionMemory$", "-benchtime 1x -count 3", "./mcpsdk/"),
		Quick: gobench("BenchmarkSessionMemory$", "-benchtime 1x -count 1", "./mcpsdk/"),
	},
}
