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
policy:
  source: db
  decide: SELECT k AS key, true AS visible, true AS read FROM unnest($keys::text[]) AS k
resources:
  doc:
    template: doc://t/{tenant}/d/{id}
    source: db
    plan: |
      SELECT id AS key, xmin AS version, 'text/plain' AS mime
      FROM docs WHERE tenant = $tenant AND id = $id
    body: SELECT body FROM docs WHERE id = $key AND xmin::text = $version
  reports:
    template: report://t/{tenant}/...
    source: files
    prefix: tenants/{tenant}/
    max_depth: 3
    grant:
      source: db
      keys: SELECT r.key FROM report_keys r WHERE r.tenant = $tenant AND r.key = $key
`

func TestGoodBaseLoads(t *testing.T) {
	f, err := Parse("good.yaml", []byte(good), testOptions)
	if err != nil {
		t.Fatalf("the base of the broken cases must load: %v", err)
	}
	if len(f.Sources) != 2 || len(f.Resources) != 2 || f.Resources[1].MaxDepth != 3 {
		t.Fatalf("decoded %+v", f)
	}
	if got := f.Sources[0].Postgres.URL.expanded(); !strings.Contains(got, canary) {
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
		{"a tab in the indentation", func(t *testing.T) string {
			return edit(t, "    prefix: tenants/{tenant}/\n", "\tprefix: tenants/{tenant}/\n")
		}, 27, "27:1: a tab in the indentation"},
		{"a tab after spaces", func(t *testing.T) string {
			return edit(t, "    source: db\n    plan: |\n", "    source: db\n  \tplan: |\n")
		}, 20, "20:3: a tab in the indentation"},
		{"a second document", func(t *testing.T) string { return good + "---\nversion: 1\n" }, 32, "second YAML document"},
		{"the root is not a mapping", func(t *testing.T) string { return "- version\n" }, 1, "expects a mapping"},
		{"an unknown top-level key", func(t *testing.T) string { return edit(t, "version: 1\n", "version: 1\nextra: true\n") }, 2, `unknown key "extra"`},
		{"an unknown key in a source", func(t *testing.T) string {
			return edit(t, "      role: reader", "      role: reader\n      pasword: x")
		}, 7, `unknown key "pasword"`},
		{"an unknown key in a resource", func(t *testing.T) string { return edit(t, "    max_depth: 3", "    max_depth: 3\n    depth: 3") }, 29, `unknown key "depth"`},
		{"a key written twice", func(t *testing.T) string {
			return edit(t, "    source: files\n", "    source: files\n    source: db\n")
		}, 27, "written twice"},
		{"a resource defined twice", func(t *testing.T) string { return good + "  doc:\n    uri: doc://x\n" }, 32, "defined twice"},
		{"a version missing", func(t *testing.T) string { return edit(t, "version: 1\n", "") }, 1, "version: is required"},
		{"a version from the future", func(t *testing.T) string { return edit(t, "version: 1", "version: 2") }, 1, "not a version"},
		{"a number where a string belongs", func(t *testing.T) string { return edit(t, "role: reader", "role: 17") }, 6, "expects a string"},
		{"a string where a number belongs", func(t *testing.T) string { return edit(t, "max_depth: 3", "max_depth: three") }, 28, "expects a whole number"},
		{"an anchor", func(t *testing.T) string { return edit(t, "    role: reader", "    role: &r reader") }, 6, "anchors"},
		{"an unset environment variable", func(t *testing.T) string { return edit(t, "${DB_URL}", "${UNSET}") }, 5, "UNSET is not set"},
		{"a bad reference", func(t *testing.T) string { return edit(t, "${DB_URL}", "${DB_URL") }, 5, "closing }"},
		{"an empty required reference", func(t *testing.T) string { return edit(t, "${DB_URL}", "${EMPTY}") }, 5, "expands to nothing"},
		{"${} outside the expanded fields", func(t *testing.T) string { return edit(t, "role: reader", "role: ${ROLE}") }, 6, "expanded only in"},
		{"a password written in the URL", func(t *testing.T) string { return edit(t, "${DB_URL}", "postgres://app:hunter2@db/docs") }, 5, "password is written in the file"},
		{"a password written as a parameter", func(t *testing.T) string { return edit(t, "${DB_URL}", "host=db password=hunter2") }, 5, "password is written in the file"},
		{"not a PostgreSQL URL", func(t *testing.T) string { return edit(t, "${DB_URL}", "${BAD_DB_URL}") }, 5, "not a PostgreSQL URL"},
		{"a postgres source without role", func(t *testing.T) string { return edit(t, "      role: reader\n", "") }, 4, "sources.db.postgres.role: is required: the role every statement runs as"},
		{"a negative max_plan_items", func(t *testing.T) string {
			return edit(t, "      role: reader\n", "      role: reader\n      max_plan_items: -1\n")
		}, 7, "sources.db.postgres.max_plan_items: must not be negative"},
		{"a role with a control character", func(t *testing.T) string { return edit(t, "role: reader", `role: "a\tb"`) }, 6, "sources.db.postgres.role: a role name is"},
		{"role and login_role", func(t *testing.T) string {
			return edit(t, "      role: reader\n", "      role: reader\n      login_role: true\n")
		}, 6, "not both"},
		{"a source of two kinds", func(t *testing.T) string {
			return edit(t, "  files:\n    s3:\n", "  files:\n    postgres: {url: '${DB_URL}', role: r}\n    s3:\n")
		}, 7, "exactly one of postgres and s3"},
		{"a bad bucket name", func(t *testing.T) string { return edit(t, "bucket: acme-docs", "bucket: Acme_Docs") }, 9, "not a bucket name"},
		{"a bucket name from the environment is not echoed", func(t *testing.T) string { return edit(t, "bucket: acme-docs", "bucket: ${BUCKET}") }, 9, "not a bucket name"},
		{"an endpoint that is not http", func(t *testing.T) string { return edit(t, "${ENDPOINT}", "${BAD_ENDPOINT}") }, 10, "endpoint"},
		{"a secret key written in the file", func(t *testing.T) string { return edit(t, "${SECRET}", "abc${SECRET}") }, 12, "one ${NAME} reference"},
		{"an access key without its secret", func(t *testing.T) string { return edit(t, "      secret_key: ${SECRET}\n", "") }, 8, "both access_key and secret_key"},
		{"no policy", func(t *testing.T) string {
			return edit(t, "policy:\n  source: db\n  decide: SELECT k AS key, true AS visible, true AS read FROM unnest($keys::text[]) AS k\n", "")
		}, 1, "policy: is required"},
		{"a policy word other than database", func(t *testing.T) string {
			return edit(t, "policy:\n  source: db\n  decide: SELECT k AS key, true AS visible, true AS read FROM unnest($keys::text[]) AS k\n", "policy: everyone\n")
		}, 13, "expects database"},
		{"a second database whose resources no policy decides", func(t *testing.T) string {
			return edit(t, "      role: reader\n", "      role: reader\n  db2:\n    postgres:\n      url: ${DB_URL}\n      role: reader\n") +
				"  other:\n    template: other://x/{id}\n    source: db2\n    plan: SELECT $id AS key, 1 AS version, 'text/plain' AS mime\n    body: SELECT 'x' AS body, 1 AS version WHERE $key IS NOT NULL\n"
		}, 8, `sources.db2.postgres: policy is required: policy.decide runs on "db"`},
		{"a source's own policy that names a source", func(t *testing.T) string {
			return edit(t, "      role: reader\n", "      role: reader\n      policy:\n        source: db\n        decide: SELECT k AS key, true AS visible, true AS read FROM unnest($keys) AS k\n")
		}, 8, "leave source out"},
		{"a file policy on a source with its own", func(t *testing.T) string {
			return edit(t, "      role: reader\n", "      role: reader\n      policy: database\n")
		}, 15, "has a policy of its own"},
		{"a policy on an unknown source", func(t *testing.T) string { return edit(t, "  source: db\n  decide", "  source: dbx\n  decide") }, 14, `no source is named "dbx"`},
		{"a policy on an S3 source", func(t *testing.T) string { return edit(t, "  source: db\n  decide", "  source: files\n  decide") }, 14, "not a postgres source"},
		{"a decide statement without $keys", func(t *testing.T) string { return edit(t, "unnest($keys::text[])", "unnest(ARRAY['a'])") }, 15, "must use $keys"},
		{"a decide statement with a capture", func(t *testing.T) string {
			return edit(t, "unnest($keys::text[])", "unnest($keys::text[]) WHERE $tenant")
		}, 15, "parameter $tenant: a policy statement takes $keys, $binding, $captures and $principal"},
		{"a positional parameter", func(t *testing.T) string { return edit(t, "id = $id\n", "id = $2\n") }, 22, "positional"},
		{"a parameter that is no capture", func(t *testing.T) string { return edit(t, "tenant = $tenant", "tenant = $tenat") }, 22, "parameter $tenat: the template has no such variable"},
		{"a capture the plan does not use", func(t *testing.T) string { return edit(t, "tenant = $tenant AND ", "") }, 20, "must use $tenant"},
		{"a body that does not use $key", func(t *testing.T) string {
			return edit(t, "WHERE id = $key AND xmin::text = $version", "WHERE xmin::text = $version")
		}, 23, "must use $key"},
		{"two statements", func(t *testing.T) string { return edit(t, "id = $key AND", "id = $key; DELETE FROM docs WHERE") }, 23, "one statement"},
		{"a string left open", func(t *testing.T) string { return edit(t, "'text/plain' AS", "'text/plain AS") }, 21, "unterminated"},
		{"a plan without body", func(t *testing.T) string {
			return edit(t, "    body: SELECT body FROM docs WHERE id = $key AND xmin::text = $version\n", "")
		}, 20, "body: is required"},
		{"plan and bundle", func(t *testing.T) string {
			return edit(t, "    body: SELECT body", "    bundle: SELECT $tenant, $id\n    body: SELECT body")
		}, 17, "resources.doc: give plan (one item) or bundle (several items), not both"},
		{"neither plan nor bundle", func(t *testing.T) string {
			return edit(t, "    plan: |\n      SELECT id AS key, xmin AS version, 'text/plain' AS mime\n      FROM docs WHERE tenant = $tenant AND id = $id\n", "")
		}, 17, "resources.doc: give plan (one item) or bundle (several items)"},
		{"a resource on an unknown source", func(t *testing.T) string { return edit(t, "    source: files\n", "    source: filez\n") }, 26, `no source is named "filez"`},
		{"SQL on an S3 resource", func(t *testing.T) string { return edit(t, "    max_depth: 3", "    max_depth: 3\n    plan: SELECT 1") }, 29, "is for postgres resources"},
		{"a prefix on a postgres resource", func(t *testing.T) string {
			return edit(t, "    body: SELECT body", "    prefix: docs/\n    body: SELECT body")
		}, 23, "is for S3 resources"},
		{"an S3 resource that no statement grants", func(t *testing.T) string {
			return edit(t, "    grant:\n      source: db\n      keys: SELECT r.key FROM report_keys r WHERE r.tenant = $tenant AND r.key = $key\n", "")
		}, 24, "no statement grants its objects"},
		{"public: false is no grant", func(t *testing.T) string {
			return edit(t, "    grant:\n      source: db\n      keys: SELECT r.key FROM report_keys r WHERE r.tenant = $tenant AND r.key = $key\n", "    public: false\n")
		}, 24, "no statement grants its objects"},
		{"grant and public", func(t *testing.T) string {
			return edit(t, "    max_depth: 3\n", "    max_depth: 3\n    public: true\n")
		}, 29, "not both"},
		{"a grant on an S3 source", func(t *testing.T) string {
			return edit(t, "      source: db\n      keys:", "      source: files\n      keys:")
		}, 30, `"files" is not a postgres source`},
		{"a grant without keys", func(t *testing.T) string {
			return edit(t, "      keys: SELECT r.key FROM report_keys r WHERE r.tenant = $tenant AND r.key = $key\n", "")
		}, 29, "keys is required"},
		{"an exemption without a reason", func(t *testing.T) string {
			return edit(t, "      role: reader\n", "      role: reader\n      exempt:\n        public.tenants: \"  \"\n")
		}, 8, "sources.db.postgres.exempt.public.tenants: needs a reason"},
		{"an exemption of an unqualified name", func(t *testing.T) string {
			return edit(t, "      role: reader\n", "      role: reader\n      exempt:\n        tenants: a lookup table\n")
		}, 8, "is not a qualified name"},
		{"a key family without max_depth", func(t *testing.T) string { return edit(t, "    max_depth: 3\n", "") }, 25, `resources.reports.max_depth: is required: how many key segments the URI's "..." stands for at most, 1 to 32`},
		{"a max_depth on a template without ...", func(t *testing.T) string {
			return edit(t, "template: report://t/{tenant}/...", "template: report://t/{tenant}/{name}")
		}, 25, `resources.reports.template: must end in "/..."`},
		{"a max_depth too deep", func(t *testing.T) string { return edit(t, "max_depth: 3", "max_depth: 99") }, 28, "from 1 to 32"},
		{"a prefix with .. in it", func(t *testing.T) string { return edit(t, "prefix: tenants/{tenant}/", "prefix: tenants/../{tenant}/") }, 27, `".." segment`},
		{"a prefix without the template's captures", func(t *testing.T) string { return edit(t, "prefix: tenants/{tenant}/", "prefix: tenants/all/") }, 27, "exactly the template's captures"},
		{"a prefix that does not end in /", func(t *testing.T) string { return edit(t, "prefix: tenants/{tenant}/", "prefix: tenants/{tenant}") }, 27, "end in /"},
		{"a capture named like a key segment", func(t *testing.T) string {
			return edit(t, "template: report://t/{tenant}/...\n    source: files\n    prefix: tenants/{tenant}/", "template: report://t/{k2}/...\n    source: files\n    prefix: tenants/{k2}/")
		}, 25, "{k2} is the name of key segment 2"},
		{"a template the gateway refuses", func(t *testing.T) string { return edit(t, "doc://t/{tenant}/d/{id}", "doc://t/{tenant}/d/x{id}") }, 18, "resources.doc.template"},
		{"a URI with userinfo", func(t *testing.T) string {
			return good + "  index:\n    uri: doc://user@host/x\n    source: db\n    plan: SELECT 1 AS key\n    body: SELECT $key\n"
		}, 33, "resources.index.uri"},
		{"two templates one request matches", func(t *testing.T) string {
			return good + "  other:\n    template: doc://t/{x}/d/{y}\n    source: db\n    plan: SELECT $x, $y\n    body: SELECT $key\n"
		}, 33, "both match"},
		{"a key family that meets another template", func(t *testing.T) string {
			return good + "  one:\n    template: report://t/{a}/{b}\n    source: db\n    plan: SELECT $a, $b\n    body: SELECT $key\n"
		}, 33, "both match"},
		{"a listed media type core refuses", func(t *testing.T) string { return edit(t, "    max_depth: 3", "    max_depth: 3\n    mime_type: text") }, 29, "resources.reports.mime_type: is not a valid media type"},
		{"a priority above 1", func(t *testing.T) string {
			return edit(t, "    max_depth: 3", "    max_depth: 3\n    annotations:\n      priority: 2")
		}, 30, "resources.reports.annotations.priority: must be between 0 and 1"},
		{"an audience core refuses", func(t *testing.T) string {
			return edit(t, "    max_depth: 3", "    max_depth: 3\n    annotations:\n      audience: [robots]")
		}, 30, "resources.reports.annotations.audience: must hold only"},
		{"a bad duration", func(t *testing.T) string { return good + "limits:\n  read_timeout: soon\n" }, 33, "not a positive duration"},
		{"a bad byte size", func(t *testing.T) string { return good + "limits:\n  max_item_bytes: 4MB\n" }, 33, "not a positive byte size"},
		{"a limit below its floor", func(t *testing.T) string { return good + "limits:\n  max_uri_bytes: 10\n" }, 33, "limits.max_uri_bytes"},
		{"a completion for no capture", func(t *testing.T) string {
			return edit(t, "    body: SELECT body", "    completion:\n      tenantt: SELECT id FROM t WHERE id LIKE $prefix\n    body: SELECT body")
		}, 24, "completion.tenantt: the template has no such variable"},
		{"a completion without $prefix", func(t *testing.T) string {
			return edit(t, "    body: SELECT body", "    completion:\n      tenant: SELECT id FROM t\n    body: SELECT body")
		}, 24, "must use $prefix"},
		{"a bad LISTEN channel", func(t *testing.T) string {
			return edit(t, "    body: SELECT body", "    listen: Changes!\n    body: SELECT body")
		}, 23, "not a channel name"},
		{"anchored on a plan", func(t *testing.T) string {
			return edit(t, "    body: SELECT body", "    anchored: true\n    body: SELECT body")
		}, 23, "anchored: is for bundles"},
		{"a bad resource name", func(t *testing.T) string { return strings.Replace(good, "  doc:\n", "  9doc:\n", 1) }, 17, "a name is a letter"},
		{"a bundle without item_uri", func(t *testing.T) string {
			return good + "  all:\n    template: doc://t/{tenant}\n    source: db\n    bundle: SELECT $tenant\n    body: SELECT $key\n"
		}, 35, "item_uri: is required"},
		{"an item_uri that names no column", func(t *testing.T) string {
			return good + "  all:\n    template: doc://t/{tenant}\n    source: db\n    bundle: SELECT $tenant\n    item_uri: doc://t/{}/x\n    body: SELECT $key\n"
		}, 36, "does not name a column"},
		{"an object served alone with a uri", func(t *testing.T) string {
			return edit(t, "    body: SELECT body FROM docs WHERE id = $key AND xmin::text = $version\n", "    object:\n      source: files\n      uri: doc://t/{tenant}/f\n")
		}, 25, "resources.doc.object.uri: a plan without body serves its row's object alone, as the request URI: leave it out"},
		{"an object on a postgres source", func(t *testing.T) string {
			return edit(t, "    body: SELECT body", "    object:\n      source: db\n    body: SELECT body")
		}, 24, "not an s3 source"},
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
			t.Log(err)
			checkErrorLine(t, err, "broken.yaml:"+strconv.Itoa(tc.line)+":", tc.want, canary)
		})
	}
}

// checkErrorLine asserts that err is one *Error line that starts with
// prefix (FILE:LINE:), says want and does not print secret.
func checkErrorLine(t *testing.T, err error, prefix, want, secret string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v (%T), want a *config.Error", err, err)
	}
	msg := err.Error()
	switch {
	case strings.ContainsAny(msg, "\n\r"):
		t.Errorf("more than one line: %q", msg)
	case !strings.HasPrefix(msg, prefix):
		t.Errorf("got %q, want it to start with %q", msg, prefix)
	case !strings.Contains(msg, want):
		t.Errorf("got %q, want it to say %q", msg, want)
	case strings.Contains(msg, secret):
		t.Errorf("the error prints a secret: %q", msg)
	}
}
