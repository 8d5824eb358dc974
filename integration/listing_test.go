package integration

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// reportsFile serves the help desk's reports from a resources file: a key
// family under each org's reports/ granted by prefix to the org's agents,
// the listing of an org's reports gated by that grant, and a public
// family of team files with its own (public) listing.
const reportsFile = `version: 1
sources:
  desk:
    postgres:
      url: ${DESK_URL}
      role: desk_reader
      exempt:
        public.agents: read by $principal only
  files:
    s3:
      bucket: ${DESK_BUCKET}
      endpoint: ${DESK_S3}
      path_style: true
      access_key: ${S3_ACCESS_KEY}
      secret_key: ${S3_SECRET_KEY}
policy: database
resources:
  report:
    template: report://r/{org}/...
    source: files
    prefix: orgs/{org}/reports/
    max_depth: 4
    grant:
      source: desk
      keys: |
        SELECT 'orgs/' || a.org || '/reports/' AS prefix
        FROM agents a WHERE a.id = $principal AND a.org = $org
  reports:
    template: report://r/{org}
    source: files
    list: report
  team:
    template: team://t/{team}/...
    source: files
    prefix: public/{team}/
    max_depth: 2
    public: true
  teams:
    template: team://t/{team}
    source: files
    list: team
`

// TestListingReturnsExactlyTheGrantedObjectsAsTheirReadsServeThem runs a
// file with listings through the binary. acme's agent lists acme's
// reports: one item per object the family serves (a key deeper than
// max_depth, one beside the prefix, another org's and one whose URI would
// be over the gateway's 2048 bytes are left out), each
// with the URI, MIME type (by the key's extension, whatever the object was
// stored with) and body a direct read of that URI gives, from one LIST and
// no HEAD. globex's agent is refused acme's listing as a missing org's is,
// with no S3 request at all; the public team listing serves every agent.
func TestListingReturnsExactlyTheGrantedObjectsAsTheirReadsServeThem(t *testing.T) {
	r := newDeskRig(t, reportsFile)
	listed := []struct{ key, stored, body string }{
		{"orgs/acme/reports/2026/q3.md", "text/plain", "# Q3"},
		{"orgs/acme/reports/a b+c/ü 📎.txt", "", "unicode"},
		{"orgs/acme/reports/blob", "text/plain", "no extension"},
		{"orgs/acme/reports/data.json", "application/octet-stream", `{"n":1}`},
	}
	for _, o := range listed {
		putObject(t, r.root, r.env.Bucket, o.key, o.stored, []byte(o.body))
	}
	clip := strings.Repeat("📎", 50) // 200 bytes, 600 once escaped in a URI
	longKey := "orgs/acme/reports/" + strings.Join([]string{clip, clip, clip, clip}, "/")
	for _, k := range []string{"orgs/acme/reports/a/b/c/d/too-deep.txt", "orgs/acme/reportsX/beside.txt", "orgs/globex/reports/theirs.txt", "public/red/logo.txt", longKey} {
		putObject(t, r.root, r.env.Bucket, k, "text/plain", []byte(k))
	}

	out := mustRun(t, "", "check", "--config", r.file)
	for _, want := range []string{"report://r/{org}\treports\tfiles\tlisting\tgrant statement on desk, once for the listed prefix (exempt from the proof: public.agents)",
		"exempt public.agents on desk: read by $principal only",
		"team://t/{team}\tteams\tfiles\tlisting\tpublic: every token holder lists every key"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("check does not say %q:\n%s", want, out)
		}
	}

	s := startServer(t, "--config", r.file, "--tokens", tokensFile(t, "amy", "gus"))
	amy, gus := s.connect(t, "amy-token"), s.connect(t, "gus-token")
	before, headsBefore := r.s3.total(), r.s3.heads.Load()
	list, err := readAll(t, amy, "report://r/acme")
	if err != nil {
		t.Fatal(err)
	}
	if n, heads := r.s3.total()-before, r.s3.heads.Load()-headsBefore; n != int64(1+len(listed)) || heads != 0 {
		t.Errorf("the listing cost %d S3 requests (%d HEADs), want one LIST and a GET per item", n, heads)
	}
	var want []string
	for _, o := range listed {
		want = append(want, keyURI("report://r/", strings.Replace(strings.TrimPrefix(o.key, "orgs/"), "/reports/", "/", 1)))
	}
	if got := contentURIs(list); !slices.Equal(got, want) {
		t.Fatalf("amy lists %v, want %v", got, want)
	}
	mimes := map[string]string{"q3.md": "text/markdown; charset=utf-8", "ü 📎.txt": "text/plain; charset=utf-8", "blob": "application/octet-stream", "data.json": "application/json"}
	for i, item := range list.Contents {
		read, err := readAll(t, amy, item.URI)
		if err != nil || len(read.Contents) != 1 {
			t.Fatalf("amy reads the listed %s: %v", item.URI, err)
		}
		one := read.Contents[0]
		body := item.Text + string(item.Blob)
		name := listed[i].key[strings.LastIndexByte(listed[i].key, '/')+1:]
		if one.URI != item.URI || one.MIMEType != item.MIMEType || one.Text != item.Text || string(one.Blob) != string(item.Blob) || body != listed[i].body || item.MIMEType != mimes[name] {
			t.Errorf("listed %s as %q %q, read as %q %q, stored as %q; want %q as %s", item.URI, item.MIMEType, body, one.MIMEType, one.Text+string(one.Blob), listed[i].stored, listed[i].body, mimes[name])
		}
	}

	before = r.s3.total()
	_, refused := readAll(t, gus, "report://r/acme")
	_, missing := readAll(t, gus, "report://r/initech")
	if n := r.s3.total() - before; n != 0 {
		t.Errorf("refused listings cost %d S3 requests, want 0", n)
	}
	if refused == nil || missing == nil || refused.Error() != missing.Error() {
		t.Errorf("gus lists acme's reports: %v; an org without agents: %v; want the same refusal", refused, missing)
	}
	for _, cs := range []*mcp.ClientSession{amy, gus} {
		res, err := readAll(t, cs, "team://t/red")
		if err != nil || len(res.Contents) != 1 || res.Contents[0].URI != "team://t/red/logo.txt" || res.Contents[0].Text != "public/red/logo.txt" {
			t.Errorf("the public team listing: %v %+v", err, res)
		}
	}
}

// TestListingOfALargePrefixIsAPartialBundleWithABudgetIssue: 300 reports
// under one prefix, with the gateway's default 256 items a read: the
// listing is a bundle of the first 256 in key order and a budget issue
// for the rest, not an error, from one LIST page.
func TestListingOfALargePrefixIsAPartialBundleWithABudgetIssue(t *testing.T) {
	r := newDeskRig(t, reportsFile)
	for i := range 300 {
		putObject(t, r.root, r.env.Bucket, fmt.Sprintf("orgs/acme/reports/big/%03d.txt", i), "", []byte(strconv.Itoa(i)))
	}
	s := startServer(t, "--config", r.file, "--tokens", tokensFile(t, "amy"))
	amy := s.connect(t, "amy-token")
	before := r.s3.total()
	res, err := readAll(t, amy, "report://r/acme")
	if err != nil {
		t.Fatalf("the listing of 300: %v, want a partial bundle", err)
	}
	uris := contentURIs(res)
	if len(uris) != 256 || uris[0] != "report://r/acme/big/000.txt" || uris[255] != "report://r/acme/big/255.txt" {
		t.Fatalf("%d items (%v ... ), want the first 256 in key order", len(uris), uris[:min(len(uris), 2)])
	}
	var warning string
	for _, c := range res.Contents {
		if strings.HasPrefix(c.URI, "mcp-warning:") {
			warning = c.Text
		}
	}
	if !strings.Contains(warning, "budget_exceeded") {
		t.Errorf("no budget issue for the 44 left out: %q", warning)
	}
	if n := r.s3.total() - before; n != 1+256 {
		t.Errorf("%d S3 requests, want one LIST and 256 GETs", n)
	}
}

// TestListingMistakesAreOneLineAtTheirKey: a listing is gated by the
// family it lists, so a listing of an ungated family is refused at the
// family, and a grant that could not answer for a whole prefix (by $key
// or a key segment, or returning keys) is refused at its place, by check
// or, for what only the database knows, by serve, one FILE:LINE:COL:
// line and no S3 request.
func TestListingMistakesAreOneLineAtTheirKey(t *testing.T) {
	grantSQL := "        SELECT 'orgs/' || a.org || '/reports/' AS prefix\n        FROM agents a WHERE a.id = $principal AND a.org = $org\n"
	for _, c := range []struct {
		name, file, cmd, at, want string
	}{
		{"ungated family", strings.Replace(reportsFile, "    public: true\n", "", 1), "check", "  team:", "resources.team: no statement grants its objects"},
		{"grant by key segment", strings.Replace(reportsFile, "a.org = $org\n", "a.org = $org AND $k1 <> ''\n", 1), "check", "$k1 <> ''",
			"resources.report.grant.keys: parameter $k1: a listing's grant is asked once for the whole listed prefix"},
		{"grant of keys", strings.Replace(reportsFile, grantSQL, "        SELECT $key AS key FROM agents a WHERE a.id = $principal AND a.org = $org\n", 1), "check", "$key AS key",
			"resources.report.grant.keys: parameter $key: a listing's grant is asked once for the whole listed prefix"},
		{"listing with its own gate", strings.Replace(reportsFile, "    list: report\n", "    list: report\n    public: true\n", 1), "check", "    public: true",
			"resources.reports.public: a listing takes its prefix, depth and gate from the key family it lists"},
		{"no such family", strings.Replace(reportsFile, "    list: report\n", "    list: reprot\n", 1), "check", "list: reprot", "resources.reports.list: no resource is named \"reprot\""},
		{"not a family", strings.Replace(reportsFile, "    list: team\n", "    list: reports\n", 1), "check", "list: reports", "resources.teams.list: \"reports\" is not a key family"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newDeskRig(t, c.file)
			line := strconv.Itoa(lineOfIn(t, c.file, c.at))
			code, stdout, stderr := runServerCmd(t, "", c.cmd, "--config", r.file)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], r.file+":"+line+":") || !strings.Contains(lines[0], c.want) {
				t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant one line at %s:%s: saying %q", code, stdout, stderr, r.file, line, c.want)
			}
			if n := r.s3.total(); n != 0 {
				t.Errorf("%d S3 requests, want 0", n)
			}
		})
	}
}
