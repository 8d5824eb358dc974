package config

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// canary is the value of every environment variable in these tests: no
// error may ever print it.
const canary = "CANARY-s3cr3t"

func testEnv(name string) (string, bool) {
	switch name {
	case "UNSET":
		return "", false
	case "EMPTY":
		return "", true
	case "DB_URL":
		return "postgres://app:" + canary + "@127.0.0.1:5432/docs", true
	case "BAD_DB_URL":
		return "mysql://app:" + canary + "@127.0.0.1/docs", true
	case "ENDPOINT":
		return "http://127.0.0.1:9000", true
	case "BAD_ENDPOINT":
		return "ftp://" + canary + "@host", true
	}
	return canary, true
}

var testOptions = &Options{LookupEnv: testEnv}

// good is a small valid file; each broken case changes one thing in it.
const good = `version: 1
sources:
  db:
    postgres:
      url: ${DB_URL}
      role: reader
  files:
    s3:
      bucket: acme-docs
      endpoint: ${ENDPOINT}
      access_key: ${KEY}
      secret_key: ${SECRET}
policies:
  members:
    source: db
    decide: SELECT k AS key, true AS visible, true AS read FROM unnest($keys::text[]) AS k
resources:
  doc:
    template: doc://t/{tenant}/d/{id}
    source: db
    policy: database
    plan: |
      SELECT id AS key, xmin::text AS version, 'text/plain' AS mime_type
      FROM docs WHERE tenant = $tenant AND id = $id
    body: SELECT body FROM docs WHERE id = $key AND xmin::text = $version
  reports:
    template: report://t/{tenant}/...
    source: files
    policy: members
    key: tenants/{tenant}/...
    max_depth: 3
`

func TestGoodBaseLoads(t *testing.T) {
	f, err := Parse("good.yaml", []byte(good), testOptions)
	if err != nil {
		t.Fatalf("the base of the broken cases must load: %v", err)
	}
	if len(f.Sources) != 2 || len(f.Resources) != 2 || f.Resources[1].MaxDepth != 3 {
		t.Fatalf("decoded %+v", f)
	}
	if got := f.Sources[0].Postgres.URL.Value(); !strings.Contains(got, canary) {
		t.Fatalf("url was not expanded: %q", got)
	}
}

// edit replaces old by new in the good file, once; old must occur.
func edit(t *testing.T, old, new string) string {
	t.Helper()
	if !strings.Contains(good, old) {
		t.Fatalf("the base file has no %q", old)
	}
	return strings.Replace(good, old, new, 1)
}

// TestBrokenFiles proves that each kind of mistake is one line naming the
// file and the line of the mistake, and never prints a secret.
func TestBrokenFiles(t *testing.T) {
	cases := []struct {
		name string
		file func(t *testing.T) string
		line int
		want string
	}{
		{"a YAML syntax error names its line", func(t *testing.T) string { return edit(t, "    role: reader", "    role: [reader") }, 6, "YAML"},
		{"an empty file", func(t *testing.T) string { return "" }, 1, "empty"},
		{"a second document", func(t *testing.T) string { return good + "---\nversion: 1\n" }, 32, "second YAML document"},
		{"the root is not a mapping", func(t *testing.T) string { return "- version\n" }, 1, "expects a mapping"},
		{"an unknown top-level key", func(t *testing.T) string { return edit(t, "version: 1\n", "version: 1\nextra: true\n") }, 2, `unknown key "extra"`},
		{"an unknown key in a source", func(t *testing.T) string {
			return edit(t, "      role: reader", "      role: reader\n      pasword: x")
		}, 7, `unknown key "pasword"`},
		{"an unknown key in a resource", func(t *testing.T) string { return edit(t, "    max_depth: 3", "    max_depth: 3\n    depth: 3") }, 32, `unknown key "depth"`},
		{"a key written twice", func(t *testing.T) string {
			return edit(t, "    source: files\n", "    source: files\n    source: db\n")
		}, 29, "written twice"},
		{"a resource defined twice", func(t *testing.T) string { return good + "  doc:\n    uri: doc://x\n" }, 32, "defined twice"},
		{"a version missing", func(t *testing.T) string { return edit(t, "version: 1\n", "") }, 1, "version: is required"},
		{"a version from the future", func(t *testing.T) string { return edit(t, "version: 1", "version: 2") }, 1, "not a version"},
		{"a number where a string belongs", func(t *testing.T) string { return edit(t, "role: reader", "role: 17") }, 6, "expects a string"},
		{"a string where a number belongs", func(t *testing.T) string { return edit(t, "max_depth: 3", "max_depth: three") }, 31, "expects a whole number"},
		{"an alias", func(t *testing.T) string { return edit(t, "    role: reader", "    role: &r reader") }, 6, "anchors"},
		{"an unset environment variable", func(t *testing.T) string { return edit(t, "${DB_URL}", "${UNSET}") }, 5, "UNSET is not set"},
		{"a bad reference", func(t *testing.T) string { return edit(t, "${DB_URL}", "${DB_URL") }, 5, "closing }"},
		{"${} outside secret fields", func(t *testing.T) string { return edit(t, "role: reader", "role: ${ROLE}") }, 6, "expanded only in"},
		{"a password written in the URL", func(t *testing.T) string { return edit(t, "${DB_URL}", "postgres://app:hunter2@db/docs") }, 5, "password is written in the file"},
		{"not a PostgreSQL URL", func(t *testing.T) string { return edit(t, "${DB_URL}", "${BAD_DB_URL}") }, 5, "not a PostgreSQL URL"},
		{"a postgres source without role", func(t *testing.T) string { return edit(t, "      role: reader\n", "") }, 4, "role is required"},
		{"a source of two kinds", func(t *testing.T) string {
			return edit(t, "  files:\n    s3:\n", "  files:\n    postgres: {url: '${DB_URL}', role: r}\n    s3:\n")
		}, 7, "exactly one of postgres and s3"},
		{"a bad bucket name", func(t *testing.T) string { return edit(t, "bucket: acme-docs", "bucket: Acme_Docs") }, 9, "not a bucket name"},
		{"an endpoint that is not http", func(t *testing.T) string { return edit(t, "${ENDPOINT}", "${BAD_ENDPOINT}") }, 10, "endpoint"},
		{"a secret key written in the file", func(t *testing.T) string { return edit(t, "${SECRET}", "abc${SECRET}") }, 12, "one ${NAME} reference"},
		{"an access key without its secret", func(t *testing.T) string { return edit(t, "      secret_key: ${SECRET}\n", "") }, 8, "both access_key and secret_key"},
		{"a policy on an unknown source", func(t *testing.T) string { return edit(t, "    source: db\n    decide", "    source: dbx\n    decide") }, 15, `no source is named "dbx"`},
		{"a policy on an S3 source", func(t *testing.T) string {
			return edit(t, "    source: db\n    decide", "    source: files\n    decide")
		}, 15, "not a postgres source"},
		{"a decide statement without $keys", func(t *testing.T) string { return edit(t, "unnest($keys::text[])", "unnest(ARRAY['a'])") }, 16, "must use $keys"},
		{"a positional parameter", func(t *testing.T) string { return edit(t, "id = $id\n", "id = $2\n") }, 24, "positional"},
		{"a parameter that is no capture", func(t *testing.T) string { return edit(t, "tenant = $tenant", "tenant = $tenat") }, 24, "$tenat is not a capture of the template (tenant, id)"},
		{"a capture the plan does not use", func(t *testing.T) string { return edit(t, "tenant = $tenant AND ", "") }, 22, "must use $tenant"},
		{"a body not pinned by version", func(t *testing.T) string { return edit(t, " AND xmin::text = $version", "") }, 25, "must use $version"},
		{"two statements", func(t *testing.T) string { return edit(t, "id = $key AND", "id = $key; DELETE FROM docs WHERE") }, 25, "one statement"},
		{"a string left open", func(t *testing.T) string { return edit(t, "'text/plain' AS", "'text/plain AS") }, 23, "not closed"},
		{"a plan without body", func(t *testing.T) string {
			return edit(t, "    body: SELECT body FROM docs WHERE id = $key AND xmin::text = $version\n", "")
		}, 22, "body is required"},
		{"a resource on an unknown source", func(t *testing.T) string { return edit(t, "    source: files\n", "    source: filez\n") }, 28, `no source is named "filez"`},
		{"an unknown policy", func(t *testing.T) string { return edit(t, "policy: members", "policy: membres") }, 29, `no policy is named "membres"`},
		{"a resource without policy", func(t *testing.T) string { return edit(t, "    policy: database\n", "") }, 18, "policy is required"},
		{"database decides for a bucket", func(t *testing.T) string { return edit(t, "policy: members", "policy: database") }, 29, "needs a postgres source"},
		{"SQL on an S3 resource", func(t *testing.T) string { return edit(t, "    max_depth: 3", "    max_depth: 3\n    plan: SELECT 1") }, 32, "is for postgres resources"},
		{"a key family without max_depth", func(t *testing.T) string { return edit(t, "    max_depth: 3\n", "") }, 27, "max_depth is required"},
		{"a max_depth too deep", func(t *testing.T) string { return edit(t, "max_depth: 3", "max_depth: 99") }, 31, "from 1 to 32"},
		{"a key with .. in it", func(t *testing.T) string { return edit(t, "key: tenants/{tenant}/...", "key: tenants/../{tenant}/...") }, 30, `".." segment`},
		{"a key without the template's captures", func(t *testing.T) string { return edit(t, "key: tenants/{tenant}/...", "key: tenants/all/...") }, 30, "exactly the captures"},
		{"a key family on one side only", func(t *testing.T) string { return edit(t, "key: tenants/{tenant}/...", "key: tenants/{tenant}") }, 30, "both end in /..."},
		{"a template the gateway refuses", func(t *testing.T) string { return edit(t, "doc://t/{tenant}/d/{id}", "doc://t/{tenant}/d/x{id}") }, 19, "resources.doc.template"},
		{"a URI with userinfo", func(t *testing.T) string {
			return good + "  index:\n    uri: doc://user@host/x\n    source: db\n    policy: database\n    plan: SELECT 1 AS key\n    body: SELECT $key, $version\n"
		}, 33, "resources.index.uri"},
		{"two templates one request matches", func(t *testing.T) string {
			return good + "  other:\n    template: doc://t/{x}/d/{y}\n    source: db\n    policy: database\n    plan: SELECT $x, $y\n    body: SELECT $key, $version\n"
		}, 33, "both match"},
		{"a key family that meets another template", func(t *testing.T) string {
			return good + "  one:\n    template: report://t/{a}/{b}\n    source: db\n    policy: database\n    plan: SELECT $a, $b\n    body: SELECT $key, $version\n"
		}, 33, "both match"},
		{"a bad media type", func(t *testing.T) string {
			return edit(t, "    max_depth: 3", "    max_depth: 3\n    mime:\n      type: text")
		}, 33, "not a media type"},
		{"a bad extension", func(t *testing.T) string {
			return edit(t, "    max_depth: 3", "    max_depth: 3\n    mime:\n      extensions:\n        md: text/markdown")
		}, 34, "not an extension"},
		{"a priority above 1", func(t *testing.T) string {
			return edit(t, "    max_depth: 3", "    max_depth: 3\n    annotations:\n      priority: 2")
		}, 33, "between 0 and 1"},
		{"an audience core refuses", func(t *testing.T) string {
			return edit(t, "    max_depth: 3", "    max_depth: 3\n    annotations:\n      audience: [robots]")
		}, 32, "Audience"},
		{"a bad duration", func(t *testing.T) string { return good + "limits:\n  read_timeout: soon\n" }, 33, "not a positive duration"},
		{"a bad byte size", func(t *testing.T) string { return good + "limits:\n  max_item_bytes: 4MB\n" }, 33, "not a positive byte size"},
		{"a limit below its floor", func(t *testing.T) string { return good + "limits:\n  max_uri_bytes: 10\n" }, 33, "limits.max_uri_bytes"},
		{"a completion for no capture", func(t *testing.T) string {
			return edit(t, "    body: SELECT body", "    completion:\n      tenantt: SELECT id FROM t WHERE id LIKE $prefix\n    body: SELECT body")
		}, 26, "not a capture"},
		{"a completion without $prefix", func(t *testing.T) string {
			return edit(t, "    body: SELECT body", "    completion:\n      tenant: SELECT id FROM t\n    body: SELECT body")
		}, 26, "must use $prefix"},
		{"a bad LISTEN channel", func(t *testing.T) string {
			return edit(t, "    body: SELECT body", "    listen: Changes!\n    body: SELECT body")
		}, 25, "not a channel name"},
		{"a bad resource name", func(t *testing.T) string { return strings.Replace(good, "  doc:\n", "  9doc:\n", 1) }, 18, "a name is a letter"},
		{"a bundle without items", func(t *testing.T) string {
			return good + "  all:\n    template: doc://t/{tenant}\n    source: db\n    policy: database\n    bundle: SELECT $tenant\n"
		}, 36, "items is required"},
		{"an object template with other captures", func(t *testing.T) string {
			return edit(t, "    body: SELECT body", "    object:\n      source: files\n      template: doc://t/{tenant}/file\n    body: SELECT body")
		}, 27, "exactly the captures"},
		{"an object on a postgres source", func(t *testing.T) string {
			return edit(t, "    body: SELECT body", "    object:\n      source: db\n      template: doc://t/{tenant}/d/{id}/file\n    body: SELECT body")
		}, 26, "not an s3 source"},
	}
	if len(cases) < 30 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("broken.yaml", []byte(tc.file(t)), testOptions)
			if err == nil {
				t.Fatal("loaded without an error")
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("not a *config.Error: %T %v", err, err)
			}
			msg := err.Error()
			t.Log(msg)
			prefix := "broken.yaml:" + strconv.Itoa(tc.line) + ":"
			switch {
			case strings.ContainsAny(msg, "\n\r"):
				t.Errorf("more than one line: %q", msg)
			case !strings.HasPrefix(msg, prefix):
				t.Errorf("got %q, want it to start with %q", msg, prefix)
			case !strings.Contains(msg, tc.want):
				t.Errorf("got %q, want it to say %q", msg, tc.want)
			case strings.Contains(msg, canary):
				t.Errorf("the error prints a secret: %q", msg)
			}
		})
	}
}
