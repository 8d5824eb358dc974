package postgres

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzBuildBatchPlan: for every plan statement the parameter rewriter
// accepts, the batch form builds, binds each template variable as one
// text[] (never as SQL), keeps $principal one parameter, and keeps the
// host statement's text between the uses of its parameters.
func FuzzBuildBatchPlan(f *testing.F) {
	f.Add(`SELECT id AS key FROM t WHERE project = $project AND id = $asset`)
	f.Add(`SELECT 'projects' AS key`)
	f.Add(`SELECT $id AS key, $principal AS who, '$id' AS lit -- $id`)
	f.Add(`SELECT x AS key FROM t WHERE a = $a OR a = $a AND b = $b`)
	cols := []column{{name: "key", typ: colAny}}
	f.Fuzz(func(t *testing.T, sql string) {
		named, err := parseNamed(sql, nil, func(string) bool { return true }, "")
		if err != nil {
			return
		}
		bp, err := buildBatchPlan(named, cols)
		if err != nil {
			t.Fatalf("a rewritten statement %q has no batch form: %v", named.SQL, err)
		}
		vars := 0
		for _, n := range named.Names {
			if n != "principal" {
				vars++
			}
		}
		if len(bp.vars) != vars {
			t.Fatalf("%d variables bound, want %d", len(bp.vars), vars)
		}
		for i := range bp.vars {
			if !strings.Contains(bp.sql, "$"+strconv.Itoa(i+1)+"::text[]") {
				t.Fatalf("variable %d is not bound as a text[]: %s", i, bp.sql)
			}
		}
		if (named.paramIndex("principal") > 0) != (bp.principal > 0) {
			t.Fatalf("$principal: position %d in %s", bp.principal, bp.sql)
		}
		if !strings.Contains(bp.sql, "LIMIT $"+strconv.Itoa(bp.limit)+")") {
			t.Fatalf("no per-request limit $%d: %s", bp.limit, bp.sql)
		}
	})
}
