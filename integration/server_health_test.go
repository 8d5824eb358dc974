package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/integration/harness"
)

// healthDB is a database of its own holding notes under row-level
// security: health_reader sees the rows whose owner is the principal.
// alice owns note a1 ("<name> a1"), bob b1.
func healthDB(t *testing.T, name string) string {
	t.Helper()
	u := harness.Postgres(t)
	applySQL(t, newPool(t, u, nil), `DO $$ BEGIN CREATE ROLE health_reader NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
		CREATE TABLE notes (id text PRIMARY KEY, owner text NOT NULL, body text NOT NULL);
		ALTER TABLE notes ENABLE ROW LEVEL SECURITY;
		CREATE POLICY own ON notes FOR SELECT TO health_reader USING (owner = current_setting('mcp.principal', true));
		GRANT SELECT ON notes TO health_reader;
		INSERT INTO notes VALUES ('a1', 'alice', '`+name+` a1'), ('b1', 'bob', '`+name+` b1')`)
	return u
}

// healthFile writes a resources file serving the notes of each named
// source (its URL in the environment variable NAME_URL) as
// NAME://notes/{id}, and returns its path.
func healthFile(t *testing.T, names ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("version: 1\nsources:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %s:\n    postgres: {url: \"${%s_URL}\", role: health_reader}\n", n, strings.ToUpper(n))
	}
	b.WriteString("policy: database\nresources:\n")
	for _, n := range names {
		fmt.Fprintf(&b, `  %[1]s-note:
    template: %[1]s://notes/{id}
    source: %[1]s
    plan: SELECT id AS key, 1 AS version, 'text/plain' AS mime FROM notes WHERE id = $id
    body: SELECT body, 1 AS version FROM notes WHERE id = $key
`, n)
	}
	path := filepath.Join(t.TempDir(), "health.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// readyz is the server's /readyz answer, decoded.
func (s *runningServer) readyz(t *testing.T) (int, struct {
	Ready   bool              `json:"ready"`
	Reason  string            `json:"reason"`
	Sources map[string]string `json:"sources"`
}) {
	t.Helper()
	code, body := s.get(t, "/readyz")
	var rd struct {
		Ready   bool              `json:"ready"`
		Reason  string            `json:"reason"`
		Sources map[string]string `json:"sources"`
	}
	if err := json.Unmarshal([]byte(body), &rd); err != nil {
		t.Fatalf("/readyz %d %q: %v", code, body, err)
	}
	return code, rd
}

// sample returns the value of the sample named exactly series (name and
// labels as /metrics writes them), or -1 when there is none.
func (s *runningServer) sample(t *testing.T, series string) float64 {
	t.Helper()
	_, body := s.get(t, "/metrics")
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return f
		}
	}
	return -1
}

// refuseConnections makes the database of dbURL refuse every new
// connection (ALLOW_CONNECTIONS false, the server's FATAL 55000) and ends
// the ones it has, or, with refuse false, accept them again.
func refuseConnections(t *testing.T, dbURL string, refuse bool) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/postgres" // the maintenance database, to connect to while this one refuses
	admin, err := pgx.Connect(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	name := pgx.Identifier{dbName(t, dbURL)}.Sanitize()
	if _, err := admin.Exec(context.Background(), "ALTER DATABASE "+name+" ALLOW_CONNECTIONS "+strconv.FormatBool(!refuse)); err != nil {
		t.Fatal(err)
	}
	if !refuse {
		return
	}
	if _, err := admin.Exec(context.Background(), `SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = $1`, dbName(t, dbURL)); err != nil {
		t.Fatal(err)
	}
}

// isOutage reports whether err is the retryable storage outage on the
// wire: -32603 "resource storage is temporarily unavailable" with
// {"retryable":true}.
func isOutage(t *testing.T, err error) bool {
	t.Helper()
	je, _ := wireErr(t, err)
	return je.Code == jsonrpc.CodeInternalError && je.Message == outageMessage && string(je.Data) == `{"retryable":true}`
}

// inFlightRefused reports whether err is the whole-read failure of a read
// planned just before the proof broke, whose body read the broken source
// then refused: no item survived, each a retryable read_failed. It serves
// nothing, like the outage every later read gets.
func inFlightRefused(t *testing.T, err error) bool {
	t.Helper()
	je, _ := wireErr(t, err)
	var data struct {
		Retryable bool `json:"retryable"`
		Issues    []struct {
			Code string `json:"code"`
		} `json:"issues"`
	}
	if je.Code != jsonrpc.CodeInternalError || je.Message != "no resource item could be read" || json.Unmarshal(je.Data, &data) != nil || !data.Retryable || len(data.Issues) == 0 {
		return false
	}
	for _, is := range data.Issues {
		if is.Code != "read_failed" {
			return false
		}
	}
	return true
}

// TestServerASecondDatabaseRefusingConnectionsIsARetryableOutageAndTheReplicaStaysReady
// serves two databases and makes the second refuse connections (ALLOW_CONNECTIONS
// false, its backends ended): its reads fail as the retryable storage
// outage (not "resource could not be planned"), counted as "storage
// outage", never as "invalid plan"; /readyz shows it unavailable and stays
// 200 while the first serves, whose reads go on. With the first refusing
// too, no source can serve and /readyz is 503 (HAProxy pulls the replica).
// Once both accept connections again, both serve.
func TestServerASecondDatabaseRefusingConnectionsIsARetryableOutageAndTheReplicaStaysReady(t *testing.T) {
	ctx := t.Context()
	first, second := healthDB(t, "first"), healthDB(t, "second")
	t.Setenv("FIRST_URL", first)
	t.Setenv("SECOND_URL", second)
	t.Cleanup(func() { refuseConnections(t, first, false); refuseConnections(t, second, false) }) // so that the harness can drop them
	s := startServer(t, "--config", healthFile(t, "first", "second"), "--tokens", tokensFile(t, "alice"))
	cs := s.connect(t, "alice-token")
	read := func(uri string) (string, error) {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return "", err
		}
		return res.Contents[0].Text, nil
	}
	for uri, want := range map[string]string{"first://notes/a1": "first a1", "second://notes/a1": "second a1"} {
		if got, err := read(uri); err != nil || got != want {
			t.Fatalf("%s: %q, %v; want %q", uri, got, err, want)
		}
	}
	if code, rd := s.readyz(t); code != 200 || !rd.Ready || rd.Sources["first"] != "serving" || rd.Sources["second"] != "serving" {
		t.Fatalf("/readyz with both up: %d %+v", code, rd)
	}

	refuseConnections(t, second, true)
	outages := 0
	for i := range 20 { // the first reads may meet a pooled connection that was ended; every one is an outage
		_, err := read("second://notes/a1")
		if err == nil {
			t.Fatalf("read %d of the second database succeeded while it refused connections", i)
		}
		if !isOutage(t, err) {
			_, wire := wireErr(t, err)
			t.Fatalf("read %d of the second database: %s, want the retryable storage outage", i, wire)
		}
		outages++
		if got, err := read("first://notes/a1"); err != nil || got != "first a1" {
			t.Fatalf("with the second database refusing, the first's read: %q, %v", got, err)
		}
	}
	code, rd := s.readyz(t)
	if code != 200 || !rd.Ready || rd.Sources["first"] != "serving" || rd.Sources["second"] != "unavailable" {
		t.Fatalf("/readyz with the second refusing: %d %+v, want 200, first serving, second unavailable", code, rd)
	}
	if n := s.sample(t, `mcpres_requests_total{kind="storage outage",method="resources/read",outcome="failed"}`); n != float64(outages) {
		t.Errorf("%v reads counted as storage outages, want %d", n, outages)
	}
	if n := s.sample(t, `mcpres_requests_total{kind="invalid plan",method="resources/read",outcome="failed"}`); n != -1 {
		t.Errorf("%v reads counted as invalid plans", n)
	}

	refuseConnections(t, first, true)
	for range 50 { // the pool may hand out one connection that was ended first
		if code, rd = s.readyz(t); code == 503 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code != 503 || rd.Ready || rd.Reason != "no source can serve" || rd.Sources["first"] != "unavailable" || rd.Sources["second"] != "unavailable" {
		t.Fatalf("/readyz with both refusing: %d %+v, want 503 no source can serve", code, rd)
	}

	refuseConnections(t, first, false)
	refuseConnections(t, second, false)
	for _, uri := range []string{"first://notes/a1", "second://notes/a1"} {
		if _, err := read(uri); err != nil {
			t.Errorf("%s once its database accepts connections again: %v", uri, err)
		}
	}
	if code, rd := s.readyz(t); code != 200 || rd.Sources["first"] != "serving" || rd.Sources["second"] != "serving" {
		t.Errorf("/readyz once both accept connections again: %d %+v", code, rd)
	}
	if strings.Contains(s.stderr.String(), "alice") {
		t.Errorf("the log names the principal:\n%s", s.stderr.String())
	}
}

// TestServerProvesASourceAgainAfterItsPoolReconnects: with a schedule too
// long to matter, ending every backend of the source's database makes its
// pool lose every connection; the next read connects again, and that
// reconnect runs the source's proof once more. The start-up check's own
// connections run none.
func TestServerProvesASourceAgainAfterItsPoolReconnects(t *testing.T) {
	desk := healthDB(t, "desk")
	t.Setenv("DESK_URL", desk)
	s := startServer(t, "--config", healthFile(t, "desk"), "--tokens", tokensFile(t, "alice"), "--proof-interval", "1h")
	cs := s.connect(t, "alice-token")
	const runs = `mcpres_source_proof_runs_total{source="desk",trigger="reconnect"}`
	if _, err := readAll(t, cs, "desk://notes/a1"); err != nil {
		t.Fatal(err)
	}
	if n := s.sample(t, runs); n != 0 {
		t.Fatalf("%s %v before any reconnect, want 0", runs, n)
	}
	refuseConnections(t, desk, true)
	refuseConnections(t, desk, false)
	// Past pgxpool's one second, after which it pings an idle connection
	// before handing it out: every dead one is then replaced.
	time.Sleep(1100 * time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := readAll(t, cs, "desk://notes/a1")
		if err == nil && s.sample(t, runs) >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no proof ran after the pool reconnected: %s %v, last read %v", runs, s.sample(t, runs), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := s.sample(t, `mcpres_source_proof_ok{source="desk"}`); n != 1 {
		t.Errorf("proof_ok %v after the reconnect's proof, want 1", n)
	}
}

// TestServerProvesEachSourceOnItsSchedule: at --proof-interval 200ms, a
// source is proved about five times a second, and never more often than
// the interval allows.
func TestServerProvesEachSourceOnItsSchedule(t *testing.T) {
	t.Setenv("DESK_URL", healthDB(t, "desk"))
	s := startServer(t, "--config", healthFile(t, "desk"), "--tokens", tokensFile(t, "alice"), "--proof-interval", "200ms")
	const runs = `mcpres_source_proof_runs_total{source="desk",trigger="schedule"}`
	before, start := s.sample(t, runs), time.Now()
	time.Sleep(2 * time.Second)
	after, elapsed := s.sample(t, runs), time.Since(start)
	n := after - before
	if most := float64(elapsed/(200*time.Millisecond)) + 1; n < 3 || n > most {
		t.Errorf("%v scheduled proofs in %v at 200ms: want at least 3 and at most %v", n, elapsed, most)
	}
	if f := s.sample(t, `mcpres_source_proof_failures_total{source="desk"}`); f != 0 {
		t.Errorf("%v failed proofs of a source that is right", f)
	}
}

// TestServerStopsServingASourceWhoseRowLevelSecurityIsDisabled disables
// row-level security on a served table while the server runs, at a 200ms
// proof interval: within the interval (and one proof's run) every read of
// the source fails as the retryable storage outage, and none succeeds
// after the first refusal, so bob's note is served to alice at most within
// that bound; one ERROR line names the source and the table (not the
// principal or a URI), mcpres_source_proof_ok is 0 and the failures are
// counted, /readyz shows the source's proof failed. With row-level
// security enabled again the source serves again, alice's note only.
//
// It needs the proof (postgres Source.Prove): with the stub, reads go on.
func TestServerStopsServingASourceWhoseRowLevelSecurityIsDisabled(t *testing.T) {
	ctx := t.Context()
	desk := healthDB(t, "desk")
	t.Setenv("DESK_URL", desk)
	const interval = 200 * time.Millisecond
	s := startServer(t, "--config", healthFile(t, "desk"), "--tokens", tokensFile(t, "alice"), "--proof-interval", interval.String())
	cs := s.connect(t, "alice-token")
	read := func(uri string) (string, error) {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return "", err
		}
		return res.Contents[0].Text, nil
	}
	if got, err := read("desk://notes/a1"); err != nil || got != "desk a1" {
		t.Fatalf("alice's note: %q, %v", got, err)
	}
	if _, err := read("desk://notes/b1"); err == nil {
		t.Fatal("bob's note was served to alice with row-level security on")
	}
	admin := newPool(t, desk, nil)

	if _, err := admin.Exec(ctx, "ALTER TABLE notes DISABLE ROW LEVEL SECURITY"); err != nil {
		t.Fatal(err)
	}
	disabled := time.Now()
	// The bound: the interval, one proof's run, and room for a loaded
	// machine.
	bound := interval + 2*time.Second
	var refused time.Time
	leaks := 0
	for time.Since(disabled) < bound+time.Second {
		for _, uri := range []string{"desk://notes/a1", "desk://notes/b1"} {
			sent := time.Now()
			_, err := read(uri)
			switch {
			case err == nil && !refused.IsZero():
				t.Fatalf("%s served %v after the source was first refused", uri, sent.Sub(refused))
			case err == nil && sent.Sub(disabled) > bound:
				t.Fatalf("%s still served %v after row-level security was disabled (bound %v)", uri, sent.Sub(disabled), bound)
			case err == nil && uri == "desk://notes/b1":
				leaks++
			case err != nil && !isOutage(t, err) && !inFlightRefused(t, err):
				if !refused.IsZero() || uri != "desk://notes/b1" {
					_, wire := wireErr(t, err)
					t.Fatalf("%s: %s, want the retryable storage outage", uri, wire)
				}
			case err != nil && refused.IsZero():
				refused = sent
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if refused.IsZero() {
		t.Fatal("the source was never refused")
	}
	t.Logf("refused %v after row-level security was disabled; bob's note served %d times before", refused.Sub(disabled), leaks)
	errLines := regexp.MustCompile(`(?m)^.*level=ERROR.*$`).FindAllString(s.stderr.String(), -1)
	if len(errLines) != 1 || !strings.Contains(errLines[0], "source=desk") || !strings.Contains(errLines[0], "notes") {
		t.Errorf("want one ERROR line naming the source and the table, got %q", errLines)
	}
	for _, private := range []string{"alice", "bob", "desk://"} {
		if strings.Contains(strings.Join(errLines, "\n"), private) {
			t.Errorf("the ERROR line names %q", private)
		}
	}
	if n := s.sample(t, `mcpres_source_proof_ok{source="desk"}`); n != 0 {
		t.Errorf("proof_ok %v while row-level security is off, want 0", n)
	}
	if n := s.sample(t, `mcpres_source_proof_failures_total{source="desk"}`); n < 1 {
		t.Errorf("proof_failures_total %v, want at least 1", n)
	}
	if code, rd := s.readyz(t); code != 503 || rd.Sources["desk"] != "proof failed" {
		t.Errorf("/readyz while the proof fails: %d %+v, want 503 with desk's proof failed", code, rd)
	}

	if _, err := admin.Exec(ctx, "ALTER TABLE notes ENABLE ROW LEVEL SECURITY"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(bound + 5*time.Second)
	for {
		got, err := read("desk://notes/a1")
		if err == nil && got == "desk a1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice's note once row-level security is on again: %q, %v", got, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := read("desk://notes/b1"); err == nil {
		t.Error("bob's note was served to alice once row-level security was on again")
	}
	if n := s.sample(t, `mcpres_source_proof_ok{source="desk"}`); n != 1 {
		t.Errorf("proof_ok %v once the proof passes again, want 1", n)
	}
	if code, rd := s.readyz(t); code != 200 || rd.Sources["desk"] != "serving" {
		t.Errorf("/readyz once the proof passes again: %d %+v", code, rd)
	}
}

// TestHAProxyPullsOnlyAReplicaThatCannotServeAnything runs the documented
// health check (GET /readyz, expect 200) over two replicas, each serving a
// shared database (first) and one of its own (second). With replica r0's
// own database refusing connections, r0 still serves the first's
// resources and stays UP; once the shared one refuses too, r0 can serve
// nothing and HAProxy marks it DOWN, while r1, whose own database still
// serves, stays UP.
func TestHAProxyPullsOnlyAReplicaThatCannotServeAnything(t *testing.T) {
	first := healthDB(t, "first")
	t.Setenv("FIRST_URL", first)
	file := healthFile(t, "first", "second")
	own := make([]string, 2)
	var addrs []string
	for i := range own {
		own[i] = healthDB(t, "second")
		t.Setenv("SECOND_URL", own[i])
		addrs = append(addrs, startServer(t, "--config", file, "--tokens", tokensFile(t, "alice")).addr)
	}
	t.Cleanup(func() {
		refuseConnections(t, first, false)
		refuseConnections(t, own[0], false)
	})
	lb := startHAProxy(t, addrs...)

	refuseConnections(t, own[0], true)
	// Ten checks' worth: r0 must stay UP throughout.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if st := lb.status(t); st["r0"] != "UP" || st["r1"] != "UP" {
			t.Fatalf("with only r0's own database refusing: %v, want both UP", st)
		}
	}
	refuseConnections(t, first, true)
	lb.waitStatus(t, "r0 DOWN, r1 UP", func(st map[string]string) bool {
		return strings.HasPrefix(st["r0"], "DOWN") && st["r1"] == "UP"
	})
}
