package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// A good definition of the documents schema, which each case below breaks
// in one way.
const (
	goodPlan = `SELECT d.id AS key, d.xmin AS version, d.content_type AS mime, d.title
		FROM documents d WHERE d.tenant_id = $tenant AND d.id::text = $id`
	goodBody   = `SELECT d.body, d.xmin AS version FROM documents d WHERE d.id::text = $key`
	goodPolicy = `SELECT k.key, true AS visible, true AS read FROM unnest($keys) AS k(key)`
	docTmpl    = "doc://tenants/{tenant}/documents/{id}"
)

func docBinding(mut func(*postgres.SQLBinding)) postgres.SQLBinding {
	b := postgres.SQLBinding{
		Definition: core.ResourceDefinition{URITemplate: docTmpl, Name: "document"},
		Plan:       goodPlan,
		Body:       goodBody,
	}
	if mut != nil {
		mut(&b)
	}
	return b
}

// assertConfigLine insists that err is one *core.ConfigError on one line
// that holds every one of want.
func assertConfigLine(t *testing.T, err error, want ...string) {
	t.Helper()
	var ce *core.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v (%T), want a *core.ConfigError", err, err)
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\n\r") {
		t.Fatalf("the error is not one line: %q", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Fatalf("error %q does not say %q", msg, w)
		}
	}
	t.Log(msg)
}

// TestOwnSchemaWrongDefinitionsFailBeforeServingWithOneLine: every mistake
// in a definition (a statement that does not prepare, a missing or
// misspelled column, a wrong type, a role that does not exist or that the
// login is not a member of, an ambiguous key family, an unknown object
// source or bucket, ...) fails at construction or at Check, as one
// *core.ConfigError line naming the binding and the statement or column,
// never at the first read.
func TestOwnSchemaWrongDefinitionsFailBeforeServingWithOneLine(t *testing.T) {
	t.Parallel()
	url, admin := newDocsDB(t)
	pool := newPool(t, url, nil)
	env := harness.S3(t)
	bucket, err := s3store.OpenBucket(t.Context(), s3Client(t, env, nil), env.Bucket, nil)
	if err != nil {
		t.Fatal(err)
	}
	newSource := func(t *testing.T, db postgres.DB, role string) *postgres.Source {
		t.Helper()
		src, err := postgres.NewSource(db, postgres.SourceOptions{Name: "docs", Role: role,
			Objects: map[string]string{"files": ""}})
		if err != nil {
			t.Fatal(err)
		}
		return src
	}

	// Mistakes found when the binding is built, without the database.
	construction := []struct {
		name string
		mut  func(*postgres.SQLBinding)
		want []string
	}{
		{"plan and bundle both set", func(b *postgres.SQLBinding) { b.Bundle = goodPlan }, []string{`"document"`, "not both"}},
		{"a bundle without body statement", func(b *postgres.SQLBinding) {
			b.Plan, b.Bundle, b.ItemURI, b.Body = "", goodPlan, "doc://x/{key}", ""
		}, []string{`"document"`, "body", "required"}},
		{"a plan without body with an object URI", func(b *postgres.SQLBinding) { b.Body, b.ObjectURI = "", "doc://x/{key}/object" }, []string{"ObjectURI", "request URI"}},
		{"a parameter the template does not have", func(b *postgres.SQLBinding) {
			b.Plan = `SELECT d.id AS key, d.xmin AS version, d.content_type AS mime FROM documents d WHERE d.tenant_id = $org`
		}, []string{`"document"`, "plan", "$org"}},
		{"a positional parameter", func(b *postgres.SQLBinding) { b.Plan = `SELECT 1 AS key WHERE $1 = 'x'` }, []string{"plan", "positional"}},
		{"a trailing semicolon", func(b *postgres.SQLBinding) { b.Plan = goodPlan + ";" }, []string{"plan", "semicolon"}},
		{"an unterminated string", func(b *postgres.SQLBinding) { b.Plan = `SELECT 'x AS key` }, []string{"plan", "unterminated"}},
		{"a bundle without item URIs", func(b *postgres.SQLBinding) { b.Plan, b.Bundle = "", goodPlan }, []string{"ItemURI", "required"}},
		{"an unknown object source", func(b *postgres.SQLBinding) { b.ObjectSource = "archive" }, []string{"ObjectSource", `"archive"`}},
		{"a body that ignores the key", func(b *postgres.SQLBinding) { b.Body = `SELECT d.body FROM documents d LIMIT 1` }, []string{"body", "$key"}},
		{"a body parameter it cannot have", func(b *postgres.SQLBinding) {
			b.Body = `SELECT d.body FROM documents d WHERE d.id::text = $key AND d.tenant_id = $tenant`
		}, []string{"body", "$tenant"}},
		{"a completion of an unknown variable", func(b *postgres.SQLBinding) {
			b.Complete = map[string]string{"org": `SELECT 'x' AS value WHERE starts_with('x', $prefix)`}
		}, []string{`complete "org"`, "no such variable"}},
		{"a completion without the prefix", func(b *postgres.SQLBinding) {
			b.Complete = map[string]string{"tenant": `SELECT id AS value FROM tenants`}
		}, []string{`complete "tenant"`, "$prefix"}},
		{"an item URI placeholder that is not a name", func(b *postgres.SQLBinding) {
			b.Plan, b.Bundle, b.ItemURI = "", goodPlan, "doc://x/{a-b}"
		}, []string{"ItemURI", "{a-b}"}},
	}
	for _, c := range construction {
		t.Run(c.name, func(t *testing.T) {
			_, err := newSource(t, pool, "docs_reader").Binding(docBinding(c.mut))
			assertConfigLine(t, err, c.want...)
		})
	}
	t.Run("a source without a role", func(t *testing.T) {
		_, err := postgres.NewSource(pool, postgres.SourceOptions{Name: "docs"})
		assertConfigLine(t, err, "source docs", "Role", "required")
	})
	t.Run("a policy that ignores the keys", func(t *testing.T) {
		_, err := newSource(t, pool, "docs_reader").Policy(`SELECT 'k' AS key, true AS visible, true AS read`)
		assertConfigLine(t, err, "source docs: decide", "$keys")
	})

	// Mistakes only the database can find, reported by Check.
	check := []struct {
		name string
		mut  func(*postgres.SQLBinding)
		want []string
	}{
		{"a table that does not exist", func(b *postgres.SQLBinding) {
			b.Plan = `SELECT d.id AS key, d.xmin AS version, 'text/plain' AS mime FROM docs d WHERE d.tenant_id = $tenant AND d.id::text = $id`
		}, []string{`"document"`, "plan", "does not prepare", `relation "docs" does not exist`}},
		{"a misspelled column in the SQL", func(b *postgres.SQLBinding) {
			b.Plan = `SELECT d.id AS key, d.xmin AS version, d.content_type AS mime, d.s3key AS object_key FROM documents d WHERE d.tenant_id = $tenant AND d.id::text = $id`
		}, []string{"plan", "does not prepare", "s3key"}},
		{"a parameter compared with another type", func(b *postgres.SQLBinding) {
			b.Plan = `SELECT d.id AS key, d.xmin AS version, d.content_type AS mime FROM documents d WHERE d.tenant_id = $tenant AND d.id = $id`
		}, []string{"plan", "does not prepare", "uuid = text"}},
		{"a missing version column", func(b *postgres.SQLBinding) {
			b.Plan = `SELECT d.id AS key, d.content_type AS mime FROM documents d WHERE d.tenant_id = $tenant AND d.id::text = $id`
		}, []string{`"document"`, "plan", `column "version" is missing`}},
		{"a result column the store does not read", func(b *postgres.SQLBinding) {
			b.Plan = goodPlan[:len(`SELECT d.id AS key`)] + `, d.s3_key AS objcet_key` + goodPlan[len(`SELECT d.id AS key`):]
		}, []string{"plan", `column "objcet_key" is not one the store reads`}},
		{"a size that is text", func(b *postgres.SQLBinding) {
			b.Plan = `SELECT d.id AS key, d.xmin AS version, d.content_type AS mime, d.title AS size FROM documents d WHERE d.tenant_id = $tenant AND d.id::text = $id`
		}, []string{"plan", `column "size" is text, want an integer type`}},
		{"a text flag that is a number", func(b *postgres.SQLBinding) {
			b.Plan = `SELECT d.id AS key, d.xmin AS version, d.content_type AS mime, 1 AS text FROM documents d WHERE d.tenant_id = $tenant AND d.id::text = $id`
		}, []string{"plan", `column "text" is int4, want boolean`}},
		{"a column returned twice", func(b *postgres.SQLBinding) {
			b.Plan = `SELECT d.id AS key, d.xmin AS version, d.content_type AS mime, d.title AS mime FROM documents d WHERE d.tenant_id = $tenant AND d.id::text = $id`
		}, []string{"plan", `column "mime" is returned twice`}},
		{"an object ETag without an object key", func(b *postgres.SQLBinding) {
			b.Plan = `SELECT d.id AS key, d.xmin AS version, d.content_type AS mime, d.s3_etag AS object_etag FROM documents d WHERE d.tenant_id = $tenant AND d.id::text = $id`
		}, []string{"plan", `"object_etag" needs an object_key`}},
		{"an object key without a source", func(b *postgres.SQLBinding) {
			b.Plan = `SELECT d.id AS key, d.xmin AS version, d.content_type AS mime, d.s3_key AS object_key FROM documents d WHERE d.tenant_id = $tenant AND d.id::text = $id`
		}, []string{"plan", `"object_key" needs an object_source`}},
		{"an item URI column the bundle does not return", func(b *postgres.SQLBinding) {
			b.Plan, b.Bundle, b.ItemURI = "", `SELECT d.id AS key, d.xmin AS version, d.content_type AS mime FROM documents d WHERE d.tenant_id = $tenant AND $id IS NOT NULL`, "doc://tenants/{tenant_id}/documents/{key}"
		}, []string{"ItemURI", "{tenant_id} names no column of the bundle statement"}},
		{"an object-only plan without an object", func(b *postgres.SQLBinding) { b.Body = "" }, []string{"plan", `"object_key" is missing`}},
		{"a body that is a number", func(b *postgres.SQLBinding) {
			b.Body = `SELECT 42 AS body, d.xmin AS version FROM documents d WHERE d.id::text = $key`
		}, []string{"body", `column "body" is int4, want bytea or text`}},
		{"a body pinned to no version", func(b *postgres.SQLBinding) {
			b.Body = `SELECT d.body FROM documents d WHERE d.id::text = $key`
		}, []string{"body", "not pinned to the version"}},
		{"a completion value that is a number", func(b *postgres.SQLBinding) {
			b.Complete = map[string]string{"tenant": `SELECT 1 AS value WHERE starts_with('x', $prefix)`}
		}, []string{`complete "tenant"`, `column "value" is int4, want text`}},
	}
	for _, c := range check {
		t.Run(c.name, func(t *testing.T) {
			src := newSource(t, pool, "docs_reader")
			if _, err := src.Binding(docBinding(c.mut)); err != nil {
				t.Fatalf("Binding: %v (this mistake is for Check)", err)
			}
			assertConfigLine(t, src.Check(t.Context()), c.want...)
		})
	}
	policies := []struct{ name, sql, want string }{
		{"a policy without the read column", `SELECT k.key, true AS visible FROM unnest($keys) AS k(key)`, `column "read" is missing`},
		{"a policy whose visible is text", `SELECT k.key, 'yes' AS visible, true AS read FROM unnest($keys) AS k(key)`, `column "visible" is text, want boolean`},
	}
	for _, c := range policies {
		t.Run(c.name, func(t *testing.T) {
			src := newSource(t, pool, "docs_reader")
			if _, err := src.Policy(c.sql); err != nil {
				t.Fatal(err)
			}
			assertConfigLine(t, src.Check(t.Context()), "source docs: decide", c.want)
		})
	}

	// The role.
	t.Run("a role that does not exist", func(t *testing.T) {
		var b [4]byte
		_, _ = rand.Read(b[:])
		role := "nosuch_" + hex.EncodeToString(b[:])
		src := newSource(t, pool, role)
		assertConfigLine(t, src.Check(t.Context()), "source docs", "Role", `role "`+role+`" does not exist`)
	})
	t.Run("a role that bypasses row-level security", func(t *testing.T) {
		src := newSource(t, pool, "postgres")
		assertConfigLine(t, src.Check(t.Context()), "Role", "bypasses row-level security")
	})
	t.Run("a login that is not a member of the role", func(t *testing.T) {
		login := loginRole(t, admin, url)
		src := newSource(t, login, "docs_reader")
		assertConfigLine(t, src.Check(t.Context()), "Role", "is not a member of role \"docs_reader\"")
	})
	t.Run("a role without the privilege to read the table", func(t *testing.T) {
		var b [4]byte
		_, _ = rand.Read(b[:])
		role := "noprivs_" + hex.EncodeToString(b[:])
		if _, err := admin.Exec(t.Context(), "CREATE ROLE "+role+" NOLOGIN"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP ROLE "+role) })
		src := newSource(t, pool, role)
		if _, err := src.Binding(docBinding(nil)); err != nil {
			t.Fatal(err)
		}
		assertConfigLine(t, src.Check(t.Context()), `"document"`, "plan", "does not run as "+role, "permission denied")
	})

	// Buckets and key families.
	t.Run("a bucket that does not exist", func(t *testing.T) {
		missing, err := s3store.OpenBucket(t.Context(), s3Client(t, env, nil), "no-such-bucket-"+strings.ToLower(hex.EncodeToString([]byte(t.Name()[:4]))), nil)
		if err != nil {
			t.Fatal(err)
		}
		assertConfigLine(t, missing.Check(t.Context()), "bucket", "does not exist")
	})
	family := func(mut func(*s3store.KeyFamily)) s3store.KeyFamily {
		f := s3store.KeyFamily{Definition: core.ResourceDefinition{Name: "report"},
			URI: "report://tenants/{tenant}/reports/...", Prefix: "tenants/{tenant}/reports/", MaxDepth: 3}
		mut(&f)
		return f
	}
	families := []struct {
		name string
		fams []s3store.KeyFamily
		want []string
	}{
		{"a family URI without its nested part", []s3store.KeyFamily{family(func(f *s3store.KeyFamily) { f.URI = "report://tenants/{tenant}/reports" })}, []string{`binding "report": URI`, `"/..."`}},
		{"a prefix that drops a capture", []s3store.KeyFamily{family(func(f *s3store.KeyFamily) { f.Prefix = "reports/" })}, []string{"Prefix", "{tenant}"}},
		{"a prefix with a capture the URI lacks", []s3store.KeyFamily{family(func(f *s3store.KeyFamily) { f.Prefix = "tenants/{tenant}/{year}/" })}, []string{"Prefix", "{year}"}},
		{"a prefix with a dot-dot segment", []s3store.KeyFamily{family(func(f *s3store.KeyFamily) { f.Prefix = "tenants/{tenant}/../" })}, []string{"Prefix", `".."`}},
		{"a partial-segment capture", []s3store.KeyFamily{family(func(f *s3store.KeyFamily) { f.URI = "report://tenants/t-{tenant}/reports/..." })}, []string{"URI", "whole segments"}},
		{"a depth of zero", []s3store.KeyFamily{family(func(f *s3store.KeyFamily) { f.MaxDepth = 0 })}, []string{"MaxDepth"}},
		{"two families one URI could select at once", []s3store.KeyFamily{
			family(func(*s3store.KeyFamily) {}),
			family(func(f *s3store.KeyFamily) {
				f.Definition.Name = "org-report"
				f.URI, f.Prefix = "report://tenants/{org}/reports/...", "orgs/{org}/reports/"
			}),
		}, []string{`binding "org-report"`, "both match"}},
	}
	for _, c := range families {
		t.Run(c.name, func(t *testing.T) {
			_, err := bucket.KeyBindings(c.fams...)
			assertConfigLine(t, err, c.want...)
		})
	}
}

// loginRole returns a pool that logs in as a fresh role that is a member
// of no other role.
func loginRole(t *testing.T, admin *pgxpool.Pool, url string) *pgxpool.Pool {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	role := "login_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(t.Context(), "CREATE ROLE "+role+" LOGIN PASSWORD 'pw-"+role+"'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP ROLE "+role) })
	return newPool(t, url, func(cfg *pgxpool.Config) {
		cfg.ConnConfig.User, cfg.ConnConfig.Password = role, "pw-"+role
	})
}
