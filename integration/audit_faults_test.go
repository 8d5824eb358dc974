package integration

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/integration/harness"
)

// The bounds of the fault run: clients, reads per client at most, and the
// time the clients read for at most.
const (
	faultClients  = 6
	faultMaxReads = 150
	faultRunFor   = 6 * time.Second
)

// faultRig is a migrated and seeded database and a versitygw of the test's
// own, which the test kills and starts again.
type faultRig struct {
	dbURL string
	vgw   *vgwServer
	env   harness.S3Env
	flags []string
	// bodyVersion maps each text body a row served to its version: the
	// seed's, then each of the writer's.
	mu          sync.Mutex
	bodyVersion map[string]string
}

func newFaultRig(t *testing.T) *faultRig {
	t.Helper()
	r := &faultRig{dbURL: harness.Postgres(t), vgw: startVersitygw(t), bodyVersion: map[string]string{}}
	r.env = r.vgw.env
	r.env.Bucket = "audit-faults"
	if _, err := s3Client(t, r.env, nil).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(r.env.Bucket)}); err != nil {
		t.Fatal(err)
	}
	r.flags = storageFlags(r.dbURL, r.env)
	mustRun(t, "", "migrate", "--postgres="+r.dbURL)
	mustRun(t, "", append([]string{"seed"}, r.flags...)...)
	rows, err := connect(t, r.dbURL).Query(t.Context(), `SELECT convert_from(body, 'UTF8'), version::text FROM mcpres.assets WHERE body_is_text`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var b, v string
		if err := rows.Scan(&b, &v); err != nil {
			t.Fatal(err)
		}
		r.bodyVersion[b] = v
	}
	if rows.Err() != nil || len(r.bodyVersion) == 0 {
		t.Fatalf("the seed's text bodies: %v (%d)", rows.Err(), len(r.bodyVersion))
	}
	return r
}

// faultItem is one item a client received, or an audit event claims: the
// requested URI, the item's URI and the version it was served at (a row's
// version, found by its body; an object's ETag, found by its bytes' MD5).
type faultItem struct{ req, uri, version string }

func (i faultItem) String() string { return i.req + " " + i.uri + " @" + i.version }

// version is what the client can tell of the version of an item it
// received: an object item's MD5 (its ETag, for objects put in one part),
// a row item's version by its body.
func (r *faultRig) version(c *mcp.ResourceContents) string {
	if strings.HasSuffix(c.URI, "/object") {
		b := c.Blob
		if b == nil {
			b = []byte(c.Text)
		}
		sum := md5.Sum(b)
		return "etag:" + hex.EncodeToString(sum[:])
	}
	var meta struct{ Version json.Number } // a bundle's item: the row's JSON, with its version
	if json.Unmarshal([]byte(c.Text), &meta) == nil && meta.Version != "" {
		return meta.Version.String()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := r.bodyVersion[c.Text]; ok {
		return v
	}
	return unchanged
}

// unchanged is the version a client records for a row item whose body
// does not tell its version: which then must be one the writer never
// changes, audited at one version all run long.
const unchanged = "unchanged"

// auditedVersion is the same for an item an event records.
func auditedVersion(uri, version, etag string) string {
	if strings.HasSuffix(uri, "/object") {
		return "etag:" + strings.Trim(etag, `"`)
	}
	return version
}

// faultReads is what the clients of a fault run received and were refused.
type faultReads struct {
	mu       sync.Mutex
	items    []faultItem
	contents []*mcp.ResourceContents // of items, by index
	bodies   map[string]bool         // every body received, to look for in the trail
	reads    int                     // answered with content
	failures map[string]int          // by error text
}

// run reads the fault URIs with clients sessions of alice until
// faultRunFor or faultMaxReads each, while faults runs on the test's
// goroutine; it returns once every client stopped.
func (r *faultRig) run(t *testing.T, srv *runningServer, faults func(stop <-chan struct{})) *faultReads {
	out := &faultReads{bodies: map[string]bool{}, failures: map[string]int{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	sessions := make([]*mcp.ClientSession, faultClients)
	for i := range sessions {
		sessions[i] = srv.connect(t, "alice-token")
	}
	for i, cs := range sessions {
		wg.Go(func() {
			for n := range faultMaxReads {
				select {
				case <-stop:
					return
				default:
				}
				uri := auditURIs[(i+n)%len(auditURIs)]
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				cancel()
				out.mu.Lock()
				if err != nil {
					out.failures[err.Error()]++
				} else {
					out.reads++
					for _, c := range res.Contents {
						if strings.HasPrefix(c.URI, "asset://") { // not the partial read's warning
							out.items = append(out.items, faultItem{uri, c.URI, ""})
							out.contents = append(out.contents, c)
							out.bodies[c.Text+string(c.Blob)] = true
						}
					}
				}
				out.mu.Unlock()
			}
		})
	}
	// A writer changes the welcome body all along, so that reads are
	// served at many versions.
	wg.Go(func() {
		conn, err := pgx.Connect(context.Background(), r.dbURL)
		if err != nil {
			t.Error(err)
			return
		}
		defer func() { conn.Close(context.Background()) }()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			body := fmt.Sprintf("# Welcome, generation %d of the fault run", n)
			var v string
			if err := conn.QueryRow(context.Background(), `UPDATE mcpres.assets SET body = convert_to($1, 'UTF8')
				WHERE project_id = 'handbook' AND id = 'welcome' RETURNING version::text`, body).Scan(&v); err != nil {
				// A backend kill ends this connection too: connect again.
				conn.Close(context.Background())
				if conn, err = pgx.Connect(context.Background(), r.dbURL); err != nil {
					t.Error(err)
					return
				}
				continue
			}
			r.mu.Lock()
			r.bodyVersion[body] = v
			r.mu.Unlock()
		}
	})
	time.AfterFunc(faultRunFor, func() { close(stop) })
	faults(stop)
	wg.Wait()
	// Once the writer has recorded every version it wrote.
	for k, c := range out.contents {
		out.items[k].version = r.version(c)
	}
	return out
}

// faults kills the server's PostgreSQL backends and restarts versitygw in
// turns until stop, and returns how many of each it did.
func (r *faultRig) faults(t *testing.T, stop <-chan struct{}) (kills, restarts int) {
	admin := connect(t, r.dbURL)
	for k := 0; ; k++ {
		select {
		case <-stop:
			return kills, restarts
		case <-time.After(700 * time.Millisecond):
		}
		if k%2 == 0 {
			var n int
			if err := admin.QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()
				AND application_name NOT LIKE 'pgx-test%'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				kills++
			}
		} else {
			r.vgw.stop()
			time.Sleep(300 * time.Millisecond)
			r.vgw.start()
			restarts++
		}
	}
}

// stopServer ends srv with SIGTERM, which flushes the trail, and waits.
func stopServer(t *testing.T, srv *runningServer) {
	t.Helper()
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-srv.done:
		srv.done <- err // for startServer's cleanup
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop within 30s")
	}
}

// auditedItems are the items every resources/read event claims, from the
// table.
func auditedTableItems(t *testing.T, dbURL string) ([]faultItem, []string) {
	t.Helper()
	rows, err := connect(t, dbURL).Query(t.Context(), `SELECT coalesce(uri, ''), items, row_to_json(e)::text
		FROM mcpres.audit_events e WHERE method = 'resources/read' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var items []faultItem
	var raw []string
	for rows.Next() {
		var uri, row string
		var b []byte
		if err := rows.Scan(&uri, &b, &row); err != nil {
			t.Fatal(err)
		}
		var its []struct{ URI, Version, ETag string }
		if err := json.Unmarshal(b, &its); err != nil {
			t.Fatal(err)
		}
		for _, it := range its {
			items = append(items, faultItem{uri, it.URI, auditedVersion(it.URI, it.Version, it.ETag)})
		}
		raw = append(raw, row)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	return items, raw
}

// auditedFileItems are the same from a JSON-lines trail.
func auditedFileItems(t *testing.T, path string) ([]faultItem, []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var items []faultItem
	var raw []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e struct {
			Method, URI string
			Items       []struct{ URI, Version, ETag string }
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if e.Method != "resources/read" {
			continue
		}
		for _, it := range e.Items {
			items = append(items, faultItem{e.URI, it.URI, auditedVersion(it.URI, it.Version, it.ETag)})
		}
		raw = append(raw, l)
	}
	return items, raw
}

// sameItems reports the items one side has more often than the other.
func sameItems(t *testing.T, received, audited []faultItem) {
	t.Helper()
	count := map[faultItem]int{}
	for _, i := range received {
		count[i]++
	}
	for _, i := range audited {
		count[i]--
	}
	var diffs []string
	for i, n := range count {
		switch {
		case n > 0:
			diffs = append(diffs, fmt.Sprintf("received %d more time(s) than audited: %s", n, i))
		case n < 0:
			diffs = append(diffs, fmt.Sprintf("audited %d more time(s) than received: %s", -n, i))
		}
	}
	slices.Sort(diffs)
	if len(diffs) > 0 {
		t.Errorf("%d received items, %d audited; %d differences:\n%s", len(received), len(audited), len(diffs), strings.Join(diffs[:min(len(diffs), 20)], "\n"))
	}
}

// noSecrets fails for any event that holds a body served, a bearer token,
// the S3 secret or the database password.
func noSecrets(t *testing.T, events []string, bodies map[string]bool, secrets ...string) {
	t.Helper()
	var private []string
	for b := range bodies {
		if len(b) >= 8 { // shorter bodies may be a URI's or a version's substring
			private = append(private, b)
		}
	}
	for _, s := range secrets {
		if s != "" {
			private = append(private, s)
		}
	}
	if len(private) == 0 {
		t.Fatal("nothing to look for")
	}
	for _, e := range events {
		for _, p := range private {
			if strings.Contains(e, p) {
				t.Fatalf("an audit event holds %.40q: %.300s", p, e)
			}
		}
	}
}

// Under load, with the server's PostgreSQL backends killed (its audit
// pool's among them) and versitygw restarted in turns, every item a client
// received is audited exactly once, at the version it was served at, and
// no event claims an item no client received, with either sink; and no
// event of the run holds a body, a token or a secret.
func TestAuditExactlyOnceUnderFaults(t *testing.T) {
	for _, sink := range []string{"postgres", "file"} {
		t.Run(sink, func(t *testing.T) {
			r := newFaultRig(t)
			trail := filepath.Join(t.TempDir(), "audit.jsonl")
			flag := "--audit-file=" + trail
			if sink == "postgres" {
				flag = "--audit-postgres=" + r.dbURL
			}
			srv := startServer(t, append(r.flags, "--tokens="+tokensFile(t, "alice"), flag,
				"--audit-on-failure=refuse", "--audit-timeout=5s", "--audit-batch=16")...)
			var kills, restarts int
			reads := r.run(t, srv, func(stop <-chan struct{}) { kills, restarts = r.faults(t, stop) })
			stopServer(t, srv)
			var audited []faultItem
			var events []string
			if sink == "postgres" {
				audited, events = auditedTableItems(t, r.dbURL)
			} else {
				audited, events = auditedFileItems(t, trail)
			}
			failed := 0
			for _, n := range reads.failures {
				failed += n
			}
			t.Logf("%s: %d reads answered (%d items), %d failed, %d events; %d backend kills, %d S3 restarts; failures %v",
				sink, reads.reads, len(reads.items), failed, len(events), kills, restarts, reads.failures)
			if reads.reads < 30 || kills == 0 || restarts == 0 {
				t.Fatalf("the run was too small to prove anything: %d reads, %d kills, %d restarts", reads.reads, kills, restarts)
			}
			versions := map[string]bool{}
			still := map[string]bool{} // the URIs received unchanged
			for _, i := range reads.items {
				versions[i.uri+i.version] = true
				if i.version == unchanged {
					still[i.uri] = true
				}
			}
			// An item of a row the writer leaves alone is audited at one
			// version all run long.
			at := map[string]string{}
			for k, i := range audited {
				if !still[i.uri] {
					continue
				}
				if v, ok := at[i.uri]; ok && v != i.version {
					t.Errorf("%s, which no one wrote, audited at %s and %s", i.uri, v, i.version)
				}
				at[i.uri] = i.version
				audited[k].version = unchanged
			}
			sameItems(t, reads.items, audited)
			password := ""
			if u, err := url.Parse(r.dbURL); err == nil {
				password, _ = u.User.Password()
			}
			noSecrets(t, events, reads.bodies, "alice-token", r.env.SecretKey, password)
			t.Logf("%d distinct item versions served", len(versions))
		})
	}
}

// With the audit table's grant revoked for a while under load: in refuse
// mode every read is either refused as a retryable outage or audited
// exactly once with what it served; in continue mode every read is served
// and the dropped count equals the reads missing from the table.
func TestAuditCutUnderLoad(t *testing.T) {
	for _, mode := range []string{"refuse", "continue"} {
		t.Run(mode, func(t *testing.T) {
			r := newFaultRig(t)
			srv := startServer(t, append(r.flags, "--tokens="+tokensFile(t, "alice"), "--audit-postgres="+r.dbURL,
				"--audit-on-failure="+mode, "--audit-timeout=1s", "--audit-batch=16")...)
			cuts := 0
			reads := r.run(t, srv, func(stop <-chan struct{}) {
				for {
					select {
					case <-stop:
						return
					case <-time.After(400 * time.Millisecond):
					}
					cutAudit(t, r.dbURL, true)
					cuts++
					time.Sleep(300 * time.Millisecond)
					cutAudit(t, r.dbURL, false)
				}
			})
			dropped := auditMetric(t, srv, "mcpres_audit_events_dropped_total")
			stopServer(t, srv)
			audited, events := auditedTableItems(t, r.dbURL)
			refused := 0
			for msg, n := range reads.failures {
				if strings.HasSuffix(msg, outageMessage) {
					refused += n
				}
			}
			failed := 0
			for _, n := range reads.failures {
				failed += n
			}
			t.Logf("%s: %d reads answered (%d items), %d refused as an outage, %d failed, %d events, %d dropped, %d cuts",
				mode, reads.reads, len(reads.items), refused, failed, len(events), dropped, cuts)
			if cuts == 0 || reads.reads < 30 {
				t.Fatalf("the run was too small: %d reads, %d cuts", reads.reads, cuts)
			}
			switch mode {
			case "refuse":
				if refused == 0 || dropped != 0 {
					t.Fatalf("refuse: %d reads refused, %d dropped; want some refused and none dropped", refused, dropped)
				}
				sameItems(t, reads.items, audited) // nothing served unaudited, nothing audited unserved
			case "continue":
				if failed != 0 {
					t.Fatalf("continue: %d reads failed (%v), want every read served", failed, reads.failures)
				}
				if dropped == 0 || reads.reads-len(events) != dropped {
					t.Fatalf("continue: %d reads, %d events, %d dropped: want the dropped count to be what the table misses", reads.reads, len(events), dropped)
				}
			}
		})
	}
}
