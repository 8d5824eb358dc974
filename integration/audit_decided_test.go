package integration

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// auditLine is the part of a JSON-lines audit event these tests compare.
type auditLine struct {
	URI, Principal, Result, ErrorKind string
	Items                             []struct{ URI, Version, ETag, VersionID string }
	Removed                           []struct {
		Kind, Stage string
		DecidedBy   string `json:"decided_by"`
		Count       int
	}
}

// auditLines reads every event of a JSON-lines trail.
func auditLines(t *testing.T, path string) []auditLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e auditLine
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%v: %s", err, sc.Bytes())
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// An object its row records by key alone is audited at the version S3
// served: the ETag the pinning HEAD took, and for unpinned: true the ETag
// of the object as the GET found it, which the plan never knew.
func TestAuditRecordsTheVersionAnUnpinnedObjectWasServedAt(t *testing.T) {
	trail := filepath.Join(t.TempDir(), "audit.jsonl")
	r := newDeskRig(t, pinnedFile+"audit:\n  file: "+trail+"\n  on_failure: refuse\n")
	const key = "orgs/acme/tickets/1/screenshot.txt"
	first := putObject(t, r.root, r.env.Bucket, key, "text/plain", []byte("first"))
	r.attach(t, "acme", 1, key, "first")
	s := startServer(t, "--config", r.file, "--tokens", tokensFile(t, "amy"))
	amy := s.connect(t, "amy-token")
	if _, err := readAll(t, amy, "ticket://pinned/acme/1"); err != nil {
		t.Fatal(err)
	}
	second := putObject(t, r.root, r.env.Bucket, key, "text/plain", []byte("second"))
	if first.ETag == second.ETag {
		t.Fatal("the two objects have one ETag")
	}
	if res, err := readAll(t, amy, "ticket://loose/acme/1"); err != nil || res.Contents[0].Text != "second" {
		t.Fatalf("unpinned read: %v", err)
	}
	ev := auditLines(t, trail) // refuse: written before the answers left
	if len(ev) != 2 {
		t.Fatalf("%d events, want 2: %+v", len(ev), ev)
	}
	for i, want := range []string{first.ETag, second.ETag} {
		if it := ev[i].Items; len(it) != 1 || it[0].ETag != want {
			t.Errorf("%s audited as %+v, want the ETag %s it was served at", ev[i].URI, it, want)
		}
	}
}
