package doctest

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.phpboyscout.uk/mcp/resources/config"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// prose is a page's text with its Markdown line breaks, indentation and
// backticks taken out, so that a sentence reads the same wherever the
// page wraps it and whether it quotes its keys or not.
func prose(t *testing.T, root, page string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(src), "`", "")
	return strings.Join(strings.Fields(s), " ")
}

// factPages are the pages that must state the facts below: the reference
// generated from config's model (its rules section), which the
// getting-started guide links to rather than repeats. Any other page that
// states max_depth's range is held to the code too.
var factPages = []string{"docs/resources-file.md"}

// maxDepthRange matches a statement of max_depth's range: "max_depth",
// then the first "1 to N" within 120 characters.
var maxDepthRange = regexp.MustCompile(`max_depth.{0,120}?\b1 to (\d+)`)

// TestDocsStateEachFactAsTheCodeDoes holds the facts that the reference
// states, and any page that repeats them, to the code that decides them:
//
//   - max_depth is 1 to s3store.MaxKeyDepth, on every page that states its
//     range (the example's own max_depth: 6 is no range);
//   - an object's MIME type is object_mime, else the key extension's,
//     else application/octet-stream, never the stored Content-Type (the
//     rule of a bucket opened with TypeByKey, as config opens them);
//   - inline content does not remove the need for body, which config
//     refuses to leave out.
func TestDocsStateEachFactAsTheCodeDoes(t *testing.T) {
	root := repoRoot(t)
	stated := map[string]int{}
	for _, page := range append(pages(t, root), "examples/documents/README.md") {
		for _, m := range maxDepthRange.FindAllStringSubmatch(prose(t, root, page), -1) {
			stated[page]++
			if n, _ := strconv.Atoi(m[1]); n != s3store.MaxKeyDepth {
				t.Errorf("%s: %q: max_depth is 1 to %d (s3store.MaxKeyDepth)", page, m[0], s3store.MaxKeyDepth)
			}
		}
	}
	for _, page := range factPages {
		if stated[page] == 0 {
			t.Errorf("%s does not state max_depth's range", page)
		}
	}

	const mime = "object_mime when the row gives one, else the type its key's extension names"
	const never = "stored with is never consulted"
	for _, page := range factPages {
		p := prose(t, root, page)
		i := strings.Index(p, mime)
		if i < 0 {
			t.Errorf("%s does not state an object's MIME type as %q", page, mime)
			continue
		}
		rest := p[i:min(len(p), i+400)]
		if !strings.Contains(rest, "else application/octet-stream") || !strings.Contains(rest, never) {
			t.Errorf("%s: the MIME rule %q... does not go on to application/octet-stream and %q", page, rest[:min(len(rest), 200)], never)
		}
		if !strings.Contains(p, "body is still required") && !strings.Contains(p, "needs a body statement") {
			t.Errorf("%s does not say that body is required even with content", page)
		}
	}
	for _, page := range factPages {
		if p := prose(t, root, page); strings.Contains(p, "no body statement runs for it)") || strings.Contains(p, "(no body statement,") {
			t.Errorf("%s says content needs no body statement without saying body is still required", page)
		}
	}

	// The code: a plan with content and no body is refused at its resource.
	file := filepath.Join(t.TempDir(), "content.yaml")
	if err := os.WriteFile(file, []byte(`version: 1
sources:
  db:
    postgres:
      url: postgres://reader@127.0.0.1:1/db
      role: reader
policy: database
resources:
  note:
    template: note://n/{id}
    source: db
    plan: SELECT n.id AS key, 1 AS version, 'text/plain' AS mime, true AS visible, true AS read, n.body AS content FROM notes n WHERE n.id::text = $id
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(file, nil); err == nil || !strings.Contains(err.Error(), "body") {
		t.Errorf("a plan with content and no body: %v, want it refused for its body", err)
	}
	// And max_depth past s3store.MaxKeyDepth is refused.
	if err := os.WriteFile(file, []byte(`version: 1
sources:
  files:
    s3:
      bucket: docs
      endpoint: http://127.0.0.1:1
      path_style: true
resources:
  report:
    template: report://r/...
    source: files
    prefix: reports/
    max_depth: `+strconv.Itoa(s3store.MaxKeyDepth+1)+`
    public: true
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(file, nil); err == nil || !strings.Contains(err.Error(), "max_depth") {
		t.Errorf("max_depth %d: %v, want it refused", s3store.MaxKeyDepth+1, err)
	}
}
