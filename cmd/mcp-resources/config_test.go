package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/core"
)

// TestConfigMistakesAreOneFileLine proves that check --config and serve
// --config end a broken resources file with exactly one line on stderr,
// FILE:LINE:COL: what is wrong, exit 1, no stack trace and no secret, for
// mistakes found in the file and for a source that cannot be reached.
func TestConfigMistakesAreOneFileLine(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := closed.Addr().String()
	closed.Close()
	const pw = "pw-canary-in-env"
	t.Setenv("DOCS_DATABASE_URL", "postgres://app:"+pw+"@"+refused+"/docs?connect_timeout=3")
	t.Setenv("DOCS_BUCKET", "acme-docs")
	t.Setenv("S3_ENDPOINT", "http://"+refused)
	t.Setenv("S3_ACCESS_KEY", "key")
	t.Setenv("S3_SECRET_KEY", "secret-canary-in-env")
	example, err := os.ReadFile("../../examples/documents/resources.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lineOf := func(s string) int {
		i := strings.Index(string(example), s)
		if i < 0 {
			t.Fatalf("the example has no %q", s)
		}
		return strings.Count(string(example[:i]), "\n") + 1
	}
	dir := t.TempDir()
	cases := []struct {
		name, old, new string
		line           int
		want           string
	}{
		{"an unknown key", "    prefix: tenants/{tenant}/reports/", "    prefx: tenants/{tenant}/reports/", lineOf("    prefix: tenants/{tenant}/reports/"), `unknown key "prefx"`},
		{"a statement with a positional parameter", "d.id::text = $id", "d.id::text = $2", lineOf("d.id::text = $id"), "positional"},
		{"an unknown source", "    source: files\n", "    source: filez\n", lineOf("    source: files\n"), `no source is named "filez"`},
		{"a literal password", "url: ${DOCS_DATABASE_URL}", "url: postgres://app:hunter2@db/docs", lineOf("url: ${DOCS_DATABASE_URL}"), "password is written in the file"},
		{"an unset variable", "${DOCS_BUCKET}", "${NO_SUCH_VARIABLE_SET}", lineOf("${DOCS_BUCKET}"), "NO_SUCH_VARIABLE_SET is not set"},
		{"a database that does not answer", "", "", lineOf("url: ${DOCS_DATABASE_URL}"), "cannot reach PostgreSQL"},
	}
	for _, tc := range cases {
		for _, cmd := range []string{"check", "serve"} {
			t.Run(cmd+" "+tc.name, func(t *testing.T) {
				path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
				if err := os.WriteFile(path, []byte(strings.Replace(string(example), tc.old, tc.new, 1)), 0o600); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				defer cancel()
				code, _, stderr := runArgs(t, ctx, cmd, "--config", path)
				lines := strings.Split(strings.TrimSpace(stderr), "\n")
				last := lines[len(lines)-1]
				prefix := path + ":" + strconv.Itoa(tc.line) + ":"
				switch {
				case code != 1:
					t.Errorf("exit %d, want 1; stderr:\n%s", code, stderr)
				case cmd == "check" && len(lines) != 1:
					t.Errorf("check printed %d lines, want one:\n%s", len(lines), stderr)
				case !strings.HasPrefix(last, prefix) || !strings.Contains(last, tc.want):
					t.Errorf("last line %q, want %q ... %q", last, prefix, tc.want)
				}
				for _, bad := range []string{"goroutine ", "panic", pw, "secret-canary-in-env"} {
					if strings.Contains(stderr, bad) {
						t.Errorf("stderr holds %q:\n%s", bad, stderr)
					}
				}
			})
		}
	}
}

// TestConfigExcludesStorageFlags: the file names its sources, so --config
// with --postgres is refused rather than one silently winning.
func TestConfigExcludesStorageFlags(t *testing.T) {
	code, _, stderr := runArgs(t, t.Context(), "serve", "--config", "../../examples/documents/resources.yaml", "--postgres", "postgres://127.0.0.1:1/db")
	if code != 1 || !strings.Contains(stderr, "not both") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// TestFlagsOverrideTheFilesLimits: a limit flag that is set wins over the
// file's value; one left at zero keeps it; without a file the flags alone
// count.
func TestFlagsOverrideTheFilesLimits(t *testing.T) {
	file := &core.ResourceLimits{MaxItems: 7, MaxItemBytes: 1 << 20, ReadTimeout: time.Second, ListPageSize: 5}
	got := fileLimits(file, core.ResourceLimits{MaxItems: 9, ItemTimeout: 2 * time.Second})
	want := core.ResourceLimits{MaxItems: 9, MaxItemBytes: 1 << 20, ReadTimeout: time.Second, ItemTimeout: 2 * time.Second, ListPageSize: 5}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	flags := core.ResourceLimits{MaxIssues: 3}
	if got := fileLimits(nil, flags); got != flags {
		t.Fatalf("without a file: got %+v", got)
	}
}

// TestEveryLimitFlagSetsItsField: each limit flag sets the
// core.ResourceLimits field of its name, and every field has a flag.
func TestEveryLimitFlagSetsItsField(t *testing.T) {
	var f limitFlags
	fv := reflect.ValueOf(&f).Elem()
	for i := range fv.NumField() {
		fv.Field(i).SetInt(int64(i + 1))
	}
	got := reflect.ValueOf(f.limits())
	if got.NumField() != fv.NumField() {
		t.Fatalf("core.ResourceLimits has %d fields, limitFlags %d", got.NumField(), fv.NumField())
	}
	for i := range fv.NumField() {
		name := fv.Type().Field(i).Name
		if v := got.FieldByName(name); !v.IsValid() || v.Int() != int64(i+1) {
			t.Errorf("--%s does not set ResourceLimits.%s", fv.Type().Field(i).Tag.Get("name"), name)
		}
	}
}
