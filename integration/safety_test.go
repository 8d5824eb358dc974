package integration

import (
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/integration/harness"
)

// lineOfIn is the 1-based line of the first s in text.
func lineOfIn(t *testing.T, text, s string) int {
	t.Helper()
	i := strings.Index(text, s)
	if i < 0 {
		t.Fatalf("no %q in the file", s)
	}
	return strings.Count(text[:i], "\n") + 1
}

// TestSafetyAnUngatedKeyFamilyIsRefusedByCheckAndServe: the help desk's
// file with the attachments' grant and the brand's public left out would
// serve every attachment of every org to every token holder; check and
// serve refuse it with one FILE:LINE:COL: line at the first such
// resource's name, saying what is missing.
func TestSafetyAnUngatedKeyFamilyIsRefusedByCheckAndServe(t *testing.T) {
	grant := "    grant:\n      source: desk\n      keys: SELECT a.s3_key AS key FROM attachments a WHERE a.org = $org AND a.s3_key = $key\n"
	ungated := strings.Replace(strings.Replace(deskFile, grant, "", 1), "    public: true\n", "", 1)
	if strings.Contains(ungated, "grant:") || strings.Contains(ungated, "public:") {
		t.Fatal("the file still has a grant or public")
	}
	r := newDeskRig(t, ungated)
	want := r.file + ":" + strconv.Itoa(lineOfIn(t, ungated, "  attachment:")) + ":3: resources.attachment: no statement grants its objects"
	for _, cmd := range []string{"check", "serve"} {
		code, stdout, stderr := runServerCmd(t, "", cmd, "--config", r.file)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 1 || !strings.HasPrefix(lines[len(lines)-1], want) || (cmd == "check" && len(lines) != 1) {
			t.Errorf("%s: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 1 and one line starting %q", cmd, code, stdout, stderr, want)
		}
	}
	if n := r.s3.total(); n != 0 {
		t.Errorf("%d S3 requests for a file that is refused before it opens its sources, want 0", n)
	}
}

// TestSafetyKeyFamilyServesOnlyGrantedKeysAndAsksS3AfterTheGrant runs the
// help desk through the binary. An attachment is served only where an
// attachments row the agent may see (row-level security: its org, internal
// tickets from tier 2) names its exact key: nine segments deep with spaces,
// '+', "%2F" and "%20" as text, unicode and emoji; one segment deep; with
// the org written %61cme (whose item answers with the canonical URI, acme,
// as a listing of it would). Everything else is refused alike and costs no S3
// request at all: another org's attachment, an internal ticket's for tier
// 1, objects with no row under a visible ticket's prefix (decoys) or one
// segment deep, a key deeper than max_depth, the encoded org for an agent
// of another org, and a key that does not exist. The public brand family
// serves every agent.
func TestSafetyKeyFamilyServesOnlyGrantedKeysAndAsksS3AfterTheGrant(t *testing.T) {
	r := newDeskRig(t, deskFile)
	deep := "orgs/acme/tickets/1/files/2026/12/01/v/a b+c%2Fd%20e ünï 📎/report v1.txt"
	shallow := "orgs/acme/t1-notes.txt"
	internal := "orgs/acme/tickets/2/payroll.txt"
	theirs := "orgs/globex/tickets/7/theirs.txt"
	tooDeep := "orgs/acme/a/b/c/d/e/f/g/h/i/j.txt"
	r.attach(t, "acme", 1, deep, "the deep one")
	r.attach(t, "acme", 1, shallow, "notes")
	r.attach(t, "acme", 2, internal, "salaries")
	r.attach(t, "globex", 7, theirs, "globex's")
	r.attach(t, "acme", 1, tooDeep, "too deep")
	r.attach(t, "", 0, "orgs/acme/tickets/1/files/decoy.txt", "decoy under a visible ticket")
	r.attach(t, "", 0, "orgs/acme/readme.txt", "decoy one segment deep")
	r.attach(t, "", 0, "public/brand/2026/logo.txt", "the logo")

	out := mustRun(t, "", "check", "--config", r.file)
	for _, want := range []string{"ticket://att/{org}/{k1}\tattachment\tfiles\ts3\tgrant statement on desk",
		"brand://assets/{k1}/{k2}\tbrand\tfiles\ts3\tpublic: every token holder reads every key",
		"ticket://t/{org}/{id}\tticket\tdesk\titem\tplan and body statements' row-level security"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("check does not say %q:\n%s", want, out)
		}
	}

	s := startServer(t, "--config", r.file, "--tokens", tokensFile(t, "amy", "alex", "gus"))
	agents := map[string]*mcp.ClientSession{}
	for _, a := range []string{"amy", "alex", "gus"} {
		agents[a] = s.connect(t, a+"-token")
	}
	att := func(key string) string { return keyURI("ticket://att/", strings.TrimPrefix(key, "orgs/")) }
	encoded := "ticket://att/%61cme/" + strings.TrimPrefix(att(deep), "ticket://att/acme/")
	served := []struct{ agent, uri, body string }{
		{"amy", att(deep), "the deep one"},
		{"amy", att(shallow), "notes"},
		{"amy", encoded, "the deep one"},
		{"alex", att(internal), "salaries"},
		{"gus", att(theirs), "globex's"},
		{"amy", "brand://assets/2026/logo.txt", "the logo"},
		{"gus", "brand://assets/2026/logo.txt", "the logo"},
	}
	for _, c := range served {
		res, err := readAll(t, agents[c.agent], c.uri)
		if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != c.body {
			t.Errorf("%s reads %s: %v %+v, want %q", c.agent, c.uri, err, res, c.body)
			continue
		}
		// Each item answers with the object's one canonical URI, the one a
		// listing gives it, whatever encoding the request used: %61cme is
		// acme (issue 45, defect 10).
		want := c.uri
		if c.uri == encoded {
			want = att(deep)
		}
		if got := res.Contents[0].URI; got != want {
			t.Errorf("%s reads %s: item URI %q, want the canonical %q", c.agent, c.uri, got, want)
		}
	}
	refused := []struct{ agent, uri string }{
		{"amy", att(theirs)},
		{"amy", att(internal)},
		{"amy", att("orgs/acme/tickets/1/files/decoy.txt")},
		{"amy", att("orgs/acme/readme.txt")},
		{"amy", att(tooDeep)},
		{"gus", encoded},
		{"gus", att(deep)},
		{"amy", att("orgs/acme/no/such/key.txt")},
	}
	var first string
	for _, c := range refused {
		before := r.s3.total()
		_, err := readAll(t, agents[c.agent], c.uri)
		if n := r.s3.total() - before; n != 0 {
			t.Errorf("%s reading %s cost %d S3 requests, want 0", c.agent, c.uri, n)
		}
		switch {
		case err == nil:
			t.Errorf("%s read %s", c.agent, c.uri)
		case first == "":
			first = err.Error()
		case err.Error() != first:
			t.Errorf("%s reading %s: %q, want the same answer as every refusal: %q", c.agent, c.uri, err, first)
		}
	}
	// A granted key that S3 does not hold is asked of S3, and answers as a
	// refusal does.
	if _, err := r.admin.Exec(t.Context(), `INSERT INTO attachments VALUES ('acme', 1, 'orgs/acme/tickets/1/gone.txt')`); err != nil {
		t.Fatal(err)
	}
	before := r.s3.heads.Load()
	if _, err := readAll(t, agents["amy"], att("orgs/acme/tickets/1/gone.txt")); err == nil || err.Error() != first {
		t.Errorf("a granted key S3 does not hold: %v, want %q", err, first)
	}
	if r.s3.heads.Load() == before {
		t.Error("a granted key was not asked of S3: the proxy counts nothing")
	}
}

// TestSafetyCheckRevisionChangesWithSQLAndPolicy: check prints a revision
// of the file that changes when a grant's SQL or the policy changes, and
// not when only a comment does; the listing's revision (definitions only)
// stays the same throughout.
func TestSafetyCheckRevisionChangesWithSQLAndPolicy(t *testing.T) {
	r := newDeskRig(t, deskFile)
	revisions := func(text string) (file, listing string) {
		t.Helper()
		if err := os.WriteFile(r.file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		out := strings.TrimSpace(mustRun(t, "", "check", "--config", r.file))
		last := out[strings.LastIndexByte(out, '\n')+1:]
		_, rest, ok := strings.Cut(last, ", revision ")
		file, listing, ok2 := strings.Cut(strings.TrimSuffix(rest, ")"), " (listing ")
		if !ok || !ok2 || len(file) != 64 {
			t.Fatalf("check's last line %q names no revisions", last)
		}
		return file, listing
	}
	base, listing := revisions(deskFile)
	variants := map[string]string{
		"a grant's SQL": strings.Replace(deskFile, "AND a.s3_key = $key", "AND a.s3_key = $key AND a.ticket > 0", 1),
		"the policy": strings.Replace(deskFile, "policy: database\n",
			"policy:\n  source: desk\n  decide: SELECT k AS key, true AS visible, true AS read FROM unnest($keys) AS k\n", 1),
	}
	for what, text := range variants {
		if text == deskFile {
			t.Fatalf("%s: the variant is the file", what)
		}
		file, l := revisions(text)
		if file == base {
			t.Errorf("changing %s leaves the revision %s", what, base)
		}
		if l != listing {
			t.Errorf("changing %s changes the listing's revision", what)
		}
	}
	if file, _ := revisions("# only a comment more\n" + deskFile); file != base {
		t.Errorf("a comment changes the revision: %s, want %s", file, base)
	}
}

// twoDatabases is a file of two databases, each deciding its own
// resources with a decide statement of its own (the first's only for the
// resource named one, by $binding).
const twoDatabases = `version: 1
sources:
  first:
    postgres:
      url: ${FIRST_URL}
      role: safety_reader
      policy:
        decide: SELECT k AS key, true AS visible, true AS read FROM unnest($keys) AS k JOIN items i ON i.id = k WHERE $binding = 'one'
  second:
    postgres:
      url: ${SECOND_URL}
      role: safety_reader
      policy:
        decide: SELECT k AS key, true AS visible, true AS read FROM unnest($keys) AS k JOIN items i ON i.id = k
resources:
  one:
    template: one://first/{id}
    source: first
    plan: SELECT id AS key, 1 AS version, 'text/plain' AS mime FROM items WHERE id = $id
    body: SELECT body, 1 AS version FROM items WHERE id = $key
  two:
    template: two://second/{id}
    source: second
    plan: SELECT id AS key, 1 AS version, 'text/plain' AS mime FROM items WHERE id = $id
    body: SELECT body, 1 AS version FROM items WHERE id = $key
`

// TestSafetyASecondDatabaseThatIsDownDoesNotStopTheFirst: each database's
// policy decides its own resources and nothing else. Reads of the first
// send nothing to the second (counted at a proxy in front of it); with the
// second cut off, the first still serves and the second's reads fail. A
// file whose one decide statement runs on the second and would decide the
// first's reads too is refused, one line at the first source.
func TestSafetyASecondDatabaseThatIsDownDoesNotStopTheFirst(t *testing.T) {
	ctx := t.Context()
	urls := map[string]string{}
	for _, name := range []string{"first", "second"} {
		u := harness.Postgres(t)
		pool := newPool(t, u, nil)
		applySQL(t, pool, `DO $$ BEGIN CREATE ROLE safety_reader NOLOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
			CREATE TABLE items (id text PRIMARY KEY, body text NOT NULL);
			GRANT SELECT ON items TO safety_reader;
			ALTER TABLE items ENABLE ROW LEVEL SECURITY; CREATE POLICY callers ON items FOR SELECT USING (current_setting('mcp.principal', true) <> '');
			INSERT INTO items VALUES ('1', 'from `+name+`')`)
		urls[name] = u
	}
	pu, err := url.Parse(urls["second"])
	if err != nil {
		t.Fatal(err)
	}
	second := newCutProxy(t, pu.Host)
	t.Setenv("FIRST_URL", urls["first"])
	t.Setenv("SECOND_URL", second.url(t, urls["second"]))
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	// One statement on the second for both: refused.
	oneForBoth := twoDatabases
	for _, l := range strings.SplitAfter(twoDatabases, "\n") {
		if strings.HasPrefix(l, "      policy:") || strings.HasPrefix(l, "        decide:") {
			oneForBoth = strings.Replace(oneForBoth, l, "", 1)
		}
	}
	oneForBoth +=
		"policy:\n  source: second\n  decide: SELECT k AS key, true AS visible, true AS read FROM unnest($keys) AS k\n"
	path := write("one-for-both.yaml", oneForBoth)
	code, _, stderr := runServerCmd(t, "", "check", "--config", path)
	want := path + ":" + strconv.Itoa(lineOfIn(t, oneForBoth, "    postgres:")) + ":5: sources.first.postgres: policy is required"
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
		t.Errorf("check of one policy for two databases: exit %d\n%s\nwant exit 1 and one line starting %q", code, stderr, want)
	}

	s := startServer(t, "--config", write("two.yaml", twoDatabases), "--tokens", tokensFile(t, "alice"))
	cs := s.connect(t, "alice-token")
	read := func(uri string) (string, error) {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return "", err
		}
		return res.Contents[0].Text, nil
	}
	for uri, want := range map[string]string{"one://first/1": "from first", "two://second/1": "from second"} {
		if got, err := read(uri); err != nil || got != want {
			t.Fatalf("%s: %q, %v; want %q", uri, got, err, want)
		}
	}
	before := second.sent.Load()
	for range 5 {
		if got, err := read("one://first/1"); err != nil || got != "from first" {
			t.Fatalf("one://first/1: %q, %v", got, err)
		}
	}
	if n := second.sent.Load() - before; n != 0 {
		t.Errorf("5 reads of the first database sent %d messages to the second, want 0", n)
	}
	second.cut()
	if got, err := read("one://first/1"); err != nil || got != "from first" {
		t.Errorf("with the second database down, the first's read: %q, %v", got, err)
	}
	if _, err := read("two://second/1"); err == nil {
		t.Error("the second database's read succeeded while it was down")
	}
}

// TestSafetyMessagesNameTheFilesOwnKey: three mistakes that used to send
// the operator into the source are each one line at the key and column of
// the file that is wrong, in the file's terms: a wrong S3 secret (not "the
// bucket does not exist"), an item_uri placeholder that names no column
// (not a complaint about the bundle's columns), and a tab in the
// indentation (at its own line and column).
func TestSafetyMessagesNameTheFilesOwnKey(t *testing.T) {
	r := newDeskRig(t, deskFile)
	bundle := `  tickets:
    template: ticket://t/{org}
    source: desk
    bundle: SELECT t.org || '/' || t.id AS key, 1 AS version, 'text/plain' AS mime, t.org, t.id FROM tickets t WHERE t.org = $org
    item_uri: ticket://t/{org}/{no}
    body: SELECT t.subject AS body, 1 AS version FROM tickets t WHERE t.org || '/' || t.id = $key
`
	at := func(text, line, value string) string {
		n := lineOfIn(t, text, line)
		l := strings.Split(text, "\n")[n-1]
		return strconv.Itoa(n) + ":" + strconv.Itoa(strings.Index(l, value)+1) + ": "
	}
	cases := []struct {
		name, text, secret, want string
	}{
		{"a wrong S3 secret", deskFile, "not-the-secret",
			at(deskFile, "      secret_key:", "${S3_SECRET_KEY}") + "sources.files.s3.secret_key: S3 refuses the requests' signature"},
		{"an item_uri placeholder that names no column", deskFile + bundle, "",
			at(deskFile+bundle, "    item_uri:", "ticket://") + "resources.tickets.item_uri: {no} names no column of the bundle statement, which returns key, version, mime, org, id"},
		{"a tab in the indentation", strings.Replace(deskFile, "    source: files\n    prefix: orgs/", "\tsource: files\n    prefix: orgs/", 1), "",
			at(deskFile, "    source: files\n    prefix: orgs/", "    source") + "a tab in the indentation"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(r.file, []byte(c.text), 0o600); err != nil {
				t.Fatal(err)
			}
			if c.secret != "" {
				t.Setenv("S3_SECRET_KEY", c.secret)
			}
			code, _, stderr := runServerCmd(t, "", "check", "--config", r.file)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if want := r.file + ":" + c.want; code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
				t.Errorf("exit %d:\n%s\nwant exit 1 and one line starting %q", code, stderr, want)
			}
			if (c.secret != "" && strings.Contains(stderr, c.secret)) || strings.Contains(stderr, r.env.SecretKey) {
				t.Errorf("stderr holds a secret:\n%s", stderr)
			}
		})
	}
}

// TestSafetyAPrefixGrantCoversWholeSegmentsOnly: a grant that returns key
// prefixes grants the keys under each prefix that ends in '/', and a prefix
// without one grants nothing (orgs/acme would otherwise grant orgs/acme2/...).
func TestSafetyAPrefixGrantCoversWholeSegmentsOnly(t *testing.T) {
	keyGrant := "keys: SELECT a.s3_key AS key FROM attachments a WHERE a.org = $org AND a.s3_key = $key"
	for _, c := range []struct {
		name, grant  string
		amyReadsAcme bool
	}{
		{"a prefix per agent's org", "keys: SELECT 'orgs/' || a.org || '/' AS prefix FROM agents a WHERE a.id = $principal", true},
		{"a prefix without its slash", "keys: SELECT 'orgs/' || a.org AS prefix FROM agents a WHERE a.id = $principal", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := strings.Replace(strings.Replace(deskFile, keyGrant, c.grant, 1),
				"      role: desk_reader\n", "      role: desk_reader\n      exempt:\n        public.agents: read by $principal only\n", 1)
			if file == deskFile {
				t.Fatal("the file has no grant to replace")
			}
			r := newDeskRig(t, file)
			r.attach(t, "", 0, "orgs/acme/any/decoy.txt", "under acme's prefix")
			r.attach(t, "", 0, "orgs/globex/any/theirs.txt", "under globex's prefix")
			s := startServer(t, "--config", r.file, "--tokens", tokensFile(t, "amy"))
			amy := s.connect(t, "amy-token")
			res, err := readAll(t, amy, "ticket://att/acme/any/decoy.txt")
			if got := err == nil && res.Contents[0].Text == "under acme's prefix"; got != c.amyReadsAcme {
				t.Errorf("amy reads a key under acme's prefix: %v (%v), want %v", got, err, c.amyReadsAcme)
			}
			before := r.s3.total()
			if _, err := readAll(t, amy, "ticket://att/globex/any/theirs.txt"); err == nil {
				t.Error("amy read a key under globex's prefix")
			}
			if n := r.s3.total() - before; n != 0 {
				t.Errorf("the refused key cost %d S3 requests, want 0", n)
			}
		})
	}
}

// TestSafetyAGrantMistakeIsOneLineAtItsKeys: a grant statement that takes a
// parameter the template does not capture, or returns a column the store
// does not read, is one FILE:LINE:COL: line at the grant's keys.
func TestSafetyAGrantMistakeIsOneLineAtItsKeys(t *testing.T) {
	r := newDeskRig(t, deskFile)
	keyGrant := "SELECT a.s3_key AS key FROM attachments a WHERE a.org = $org AND a.s3_key = $key"
	for _, c := range []struct{ name, grant, want string }{
		{"a parameter the template does not capture", "SELECT a.s3_key AS key FROM attachments a WHERE a.org = $tenant", "parameter $tenant: a grant statement takes $key, $binding, $principal and the template's captures"},
		{"a column the store does not read", "SELECT a.s3_key AS k FROM attachments a WHERE a.org = $org", `column "k" is not one the store reads (key, prefix)`},
		{"two columns", "SELECT a.s3_key AS key, a.org || '/' AS prefix FROM attachments a WHERE a.org = $org", "return one column"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := strings.Replace(deskFile, keyGrant, c.grant, 1)
			if err := os.WriteFile(r.file, []byte(file), 0o600); err != nil {
				t.Fatal(err)
			}
			n, col := lineOfIn(t, file, "      keys: "), 13 // the statement, or the parameter it refuses
			if i := strings.Index(c.grant, "$tenant"); i >= 0 {
				col += i
			}
			want := r.file + ":" + strconv.Itoa(n) + ":" + strconv.Itoa(col) + ": resources.attachment.grant.keys: "
			code, _, stderr := runServerCmd(t, "", "check", "--config", r.file)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], want) || !strings.Contains(lines[0], c.want) {
				t.Errorf("exit %d:\n%s\nwant exit 1 and one line starting %q saying %q", code, stderr, want, c.want)
			}
		})
	}
}

// TestSafetyAnAttachmentSubscriberIsToldWhenItsObjectChanges: an S3
// source of a file polls the objects that subscriptions depend on every
// poll_interval, so a subscriber to an attachment hears of it being
// overwritten; an agent the grant refuses cannot subscribe, with no S3
// request.
func TestSafetyAnAttachmentSubscriberIsToldWhenItsObjectChanges(t *testing.T) {
	file := strings.Replace(deskFile, "      secret_key: ${S3_SECRET_KEY}\n", "      secret_key: ${S3_SECRET_KEY}\n      poll_interval: 200ms\n", 1)
	r := newDeskRig(t, file)
	key := "orgs/acme/tickets/1/files/notes v1.txt"
	r.attach(t, "acme", 1, key, "first")
	s := startServer(t, "--config", r.file, "--tokens", tokensFile(t, "amy", "gus"))
	uri := keyURI("ticket://att/", strings.TrimPrefix(key, "orgs/"))
	amy, updates := s.connectLive(t, "amy-token")
	if err := amy.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("amy subscribes to her attachment: %v", err)
	}
	gus := s.connect(t, "gus-token")
	before := r.s3.total()
	if err := gus.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err == nil {
		t.Error("gus subscribed to another org's attachment")
	}
	if n := r.s3.total() - before; n != 0 {
		t.Errorf("gus's refused subscription cost %d S3 requests, want 0", n)
	}
	// The poller's first HEAD of the object is its baseline: overwrite it
	// once a second HEAD, counted at the proxy, shows the first answered.
	for heads, deadline := r.s3.heads.Load(), time.Now().Add(10*time.Second); r.s3.heads.Load() < heads+2; {
		if time.Now().After(deadline) {
			t.Fatalf("the poller sent no HEAD within 10 s of the subscription\n%s", s.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	putObject(t, r.root, r.env.Bucket, key, "text/plain", []byte("second"))
	select {
	case got := <-updates:
		if got != uri {
			t.Fatalf("notified of %s, want %s", got, uri)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no notification within 10 s of the overwrite (poll_interval 200ms)\n%s", s.stderr.String())
	}
	if res, err := readAll(t, amy, uri); err != nil || res.Contents[0].Text != "second" {
		t.Errorf("amy reads the new object: %v", err)
	}
}
