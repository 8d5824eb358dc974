package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/core"
)

// explain refuses a bad principal, claims or missing file in one line,
// before it reads anything.
func TestExplainRefusesBadFlagsInOneLine(t *testing.T) {
	file := "../../examples/documents/resources.yaml"
	cases := []struct {
		name string
		args []string
		want string
		code int
	}{
		{"no principal", []string{"explain", "--config", file, "doc://x"}, "--principal", 2},
		{"no URI", []string{"explain", "--config", file, "--principal", "alice"}, "expected \"<uri>\"", 2},
		{"a control character in the principal", []string{"explain", "--config", file, "--principal", "al\x01ice", "doc://x"}, "--principal: core: invalid principal", 1},
		{"claims that are not an object", []string{"explain", "--config", file, "--principal", "alice", "--claims", "[1]", "doc://x"}, "--claims must be a JSON object", 1},
		{"claims that are not JSON", []string{"explain", "--config", file, "--principal", "alice", "--claims", "{", "doc://x"}, "--claims must be a JSON object", 1},
		{"a missing file", []string{"explain", "--config", "/nonexistent/resources.yaml", "--principal", "alice", "doc://x"}, "resources.yaml", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			code, stdout, stderr := runArgs(t, ctx, c.args...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			last := lines[len(lines)-1]
			if code != c.code || stdout != "" || !strings.Contains(last, c.want) {
				t.Errorf("exit %d (want %d), stdout %q, last stderr line %q (want %q)", code, c.code, stdout, last, c.want)
			}
		})
	}
}

func TestOneLineSQLDropsCommentsOutsideQuotes(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT 1 -- a comment\nFROM t":           "SELECT 1 FROM t",
		"SELECT '--not a comment' AS x\n  FROM t": "SELECT '--not a comment' AS x FROM t",
		`SELECT "a--b" FROM t -- end`:             `SELECT "a--b" FROM t`,
		"SELECT 1 - -1":                           "SELECT 1 - -1",
	} {
		if got := oneLineSQL(in); got != want {
			t.Errorf("oneLineSQL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestS3GetIsTheConditionalRangedGet(t *testing.T) {
	for _, c := range []struct {
		etag, version string
		size, limit   int64
		want          string
	}{
		{`"e"`, "", 10, 100, `S3 GET s3://b/k If-Match: "e" Range: bytes=0-100`},
		{`"e"`, "v1", 200, 100, `S3 GET s3://b/k If-Match: "e" versionId=v1 Range: bytes=0-0`},
		{"", "", -1, 5, `S3 GET s3://b/k (no If-Match: the row pins no ETag) Range: bytes=0-5`},
	} {
		if got := s3Get("b", "k", c.etag, c.version, c.size, c.limit); got != c.want {
			t.Errorf("s3Get = %q, want %q", got, c.want)
		}
	}
}

// FuzzOneLineSQL: any statement becomes one line no longer than itself,
// with its text outside comments kept.
func FuzzOneLineSQL(f *testing.F) {
	for _, s := range []string{"SELECT 1 -- c\nFROM t", "SELECT '--' AS x", `SELECT "a--b"`, "'unterminated\n--", "--\n--\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := oneLineSQL(s)
		if strings.ContainsAny(out, "\n\r\t") || len(out) > len(s) {
			t.Fatalf("oneLineSQL(%q) = %q", s, out)
		}
		if !strings.Contains(s, "--") && out != strings.Join(strings.Fields(s), " ") {
			t.Fatalf("oneLineSQL(%q) = %q changed text without a comment", s, out)
		}
	})
}

// An explained reader keeps the reader's kind, passes its answers on
// unchanged and records each request as one read step.
func TestExplainReaderRecordsEachRequest(t *testing.T) {
	x := &explainer{read: map[string]bool{}}
	target, err := core.NewResourceTarget("doc://a", "v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	items := core.ItemReader(func(context.Context, core.ReadItem) (core.ResourcePayload, error) {
		return core.TextPayload("text/plain", "body"), nil
	})
	rd := x.reader(items, func(it core.ReadItem) string { return "GET " + it.Target.URI() })
	if _, ok := rd.(core.ItemReader); !ok {
		t.Fatalf("an item reader explained is a %T", rd)
	}
	res, err := rd.Read(context.Background(), core.ReadRequest{Items: []core.ReadItem{{Target: target, Limit: 10}}})
	if err != nil || len(res) != 1 || res[0].Payload.Len() != 4 {
		t.Fatalf("Read = %+v, %v", res, err)
	}
	if len(x.steps) != 1 || !x.read["doc://a"] {
		t.Fatalf("steps %+v, read %v", x.steps, x.read)
	}
	want := explainStep{Step: "read", Summary: "1 item in one request", Detail: []string{"doc://a: GET doc://a", "  -> text/plain text, 4 bytes"}}
	if got := x.steps[0]; got.Step != want.Step || got.Summary != want.Summary || strings.Join(got.Detail, "|") != strings.Join(want.Detail, "|") {
		t.Fatalf("step %+v, want %+v", got, want)
	}
}
