// Package bigfile writes resources files of many templates over one small
// schema, for the tests and benchmarks of a big file's start-up check: a
// generated file is kept out of the repository (a file of 10,000
// templates is larger than the 1 MiB that CI lets a tracked file be).
package bigfile

import (
	"fmt"
	"strings"
)

// Schema returns the statements that make the schema of [File] in the
// current database, and role, the role its statements run as (created
// when missing, granted to the login role): one table whose row-level
// security shows a row to its owner (mcp.principal) alone, and row
// id-1 of every shape, owned by alice.
func Schema(role string, shapes int) string {
	ident := `"` + strings.ReplaceAll(role, `"`, `""`) + `"`
	lit := "'" + strings.ReplaceAll(role, "'", "''") + "'"
	return `DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = ` + lit + `) THEN
    CREATE ROLE ` + ident + ` NOLOGIN;
  END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END $$;
GRANT ` + ident + ` TO current_user;
CREATE TABLE big_items (id text NOT NULL, shape int NOT NULL, owner text NOT NULL, body text NOT NULL, PRIMARY KEY (shape, id));
ALTER TABLE big_items ENABLE ROW LEVEL SECURITY;
CREATE POLICY big_items_owner ON big_items FOR SELECT TO ` + ident + ` USING (owner = current_setting('mcp.principal', true));
GRANT SELECT ON big_items TO ` + ident + `;
INSERT INTO big_items SELECT 'id-1', s, 'alice', 'body of shape ' || s FROM generate_series(0, ` + fmt.Sprint(max(shapes, 1)-1) + `) AS s;`
}

// File returns a resources file of n templates, big0://items/{id} to
// big(n-1)://items/{id}, on the one PostgreSQL source "big" whose URL is
// ${BIG_DATABASE_URL}, with statements run as role. Template i has a plan
// and a body statement of shape i mod shapes: a file of shapes distinct
// pairs of statement texts (0 or less: every template its own), as a
// generated file repeats a few. Each reads row id of its shape, whose
// owner alone sees it.
func File(n, shapes int, role string) []byte {
	var b strings.Builder
	b.Grow(n * 420)
	fmt.Fprintf(&b, "version: 1\nsources:\n  big:\n    postgres:\n      url: ${BIG_DATABASE_URL}\n      role: %s\npolicy: database\nresources:\n", role)
	for i := range n {
		shape := i
		if shapes > 0 {
			shape = i % shapes
		}
		fmt.Fprintf(&b, "  item-%d:\n    template: big%d://items/{id}\n    description: Item of shape %d\n    source: big\n    plan: |\n      %s\n    body: %s\n",
			i, i, shape, strings.ReplaceAll(Plan(shape), "\n", "\n      "), Body(shape))
	}
	return []byte(b.String())
}

// URI is the URI of row id-1 through template i of [File].
func URI(i int) string { return fmt.Sprintf("big%d://items/id-1", i) }

// Plan is the plan statement of the templates of shape shape.
func Plan(shape int) string {
	return fmt.Sprintf("SELECT i.id AS key, i.xmin AS version, 'text/plain' AS mime, true AS visible, true AS read, true AS disclose\n"+
		"FROM big_items i WHERE i.shape = %d AND i.id = $id", shape)
}

// Body is the body statement of the templates of shape shape.
func Body(shape int) string {
	return fmt.Sprintf("SELECT i.body, i.xmin AS version FROM big_items i WHERE i.shape = %d AND i.id = $key", shape)
}
