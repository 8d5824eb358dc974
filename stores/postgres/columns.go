package postgres

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// colType is the kind of value a result column must hold.
type colType uint8

const (
	colAny     colType = iota + 1 // any type: the store casts it to text
	colText                       // text, varchar, char or name
	colInteger                    // smallint, integer or bigint
	colBool                       // boolean
	colBody                       // bytea, text, varchar or char
)

func (c colType) String() string {
	switch c {
	case colText:
		return "text"
	case colInteger:
		return "an integer type"
	case colBool:
		return "boolean"
	case colBody:
		return "bytea or text"
	}
	return "any type"
}

// cast is the SQL cast the store applies when it selects a column.
func (c colType) cast() string {
	switch c {
	case colInteger:
		return "int8"
	case colBool:
		return "boolean"
	case colBody:
		return ""
	}
	return "text"
}

func (c colType) accepts(oid uint32) bool {
	switch c {
	case colAny:
		return true
	case colText:
		return oid == pgtype.TextOID || oid == pgtype.VarcharOID || oid == pgtype.BPCharOID || oid == pgtype.NameOID
	case colInteger:
		return oid == pgtype.Int2OID || oid == pgtype.Int4OID || oid == pgtype.Int8OID
	case colBool:
		return oid == pgtype.BoolOID
	case colBody:
		return oid == pgtype.ByteaOID || colText.accepts(oid)
	}
	return false
}

// column is one result column a statement kind reads.
type column struct {
	name     string
	typ      colType
	required bool
}

// pickColumns checks a statement's result columns against the columns its
// kind reads (plus extra, columns a URI pattern names, of any type): every
// column it returns must be one of them and be named once, every required
// one must be there, and each must have an acceptable type. It returns the
// columns present, in the order of want then extra.
func pickColumns(fields []pgconn.FieldDescription, want []column, extra []string) ([]column, map[string]bool, error) {
	got := make(map[string]uint32, len(fields))
	for _, f := range fields {
		if _, dup := got[f.Name]; dup {
			return nil, nil, fmt.Errorf("column %q is returned twice", f.Name)
		}
		got[f.Name] = f.DataTypeOID
	}
	all := slices.Clone(want)
	for _, e := range extra {
		if !slices.ContainsFunc(all, func(c column) bool { return c.name == e }) {
			all = append(all, column{name: e, typ: colAny, required: true})
		}
	}
	for _, f := range fields {
		if !slices.ContainsFunc(all, func(c column) bool { return c.name == f.Name }) {
			return nil, nil, fmt.Errorf("column %q is not one the store reads (%s)", f.Name, columnNames(all))
		}
	}
	var present []column
	has := map[string]bool{}
	for _, c := range all {
		oid, ok := got[c.name]
		switch {
		case !ok && c.required:
			return nil, nil, fmt.Errorf("column %q is missing", c.name)
		case !ok:
			continue
		case !c.typ.accepts(oid):
			return nil, nil, fmt.Errorf("column %q is %s, want %s", c.name, typeName(oid), c.typ)
		}
		present = append(present, c)
		has[c.name] = true
	}
	return present, has, nil
}

func columnNames(cs []column) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// typeName names the common types by their SQL names, others by OID.
func typeName(oid uint32) string {
	if t, ok := pgtype.NewMap().TypeForOID(oid); ok {
		return t.Name
	}
	return fmt.Sprintf("type %d", oid)
}

// selectList returns "q.a::text, q.b::int8, ..." for cols.
func selectList(cols []column) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		if c.name == inlineColumn {
			// Inline content only up to inlineMaxBytes: a longer one is
			// not transferred, and the item is read by the body statement.
			b.WriteString("CASE WHEN octet_length(q." + quoteIdent(c.name) + ") <= " + strconv.Itoa(inlineMaxBytes) +
				" THEN q." + quoteIdent(c.name) + " END")
			continue
		}
		b.WriteString("q.")
		b.WriteString(quoteIdent(c.name))
		if cast := c.typ.cast(); cast != "" {
			b.WriteString("::")
			b.WriteString(cast)
		}
	}
	return b.String()
}

// quoteIdent quotes a column name, which is the host's (from its own SQL),
// never request data.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// scanTargets returns one nullable destination per column.
func scanTargets(cols []column) []any {
	out := make([]any, len(cols))
	for i, c := range cols {
		switch c.typ {
		case colInteger:
			out[i] = new(*int64)
		case colBool:
			out[i] = new(*bool)
		case colBody:
			out[i] = new([]byte)
		default:
			out[i] = new(*string)
		}
	}
	return out
}

// row is one scanned result row by column name.
type row map[string]any

func newRow(cols []column, dest []any) row {
	r := make(row, len(cols))
	for i, c := range cols {
		switch d := dest[i].(type) {
		case **string:
			if *d != nil {
				r[c.name] = **d
			}
		case **int64:
			if *d != nil {
				r[c.name] = **d
			}
		case **bool:
			if *d != nil {
				r[c.name] = **d
			}
		case *[]byte:
			if *d != nil {
				r[c.name] = *d
			}
		}
	}
	return r
}

func (r row) str(name string) (string, bool) { s, ok := r[name].(string); return s, ok }
func (r row) int(name string) (int64, bool)  { n, ok := r[name].(int64); return n, ok }
func (r row) bool(name string) (bool, bool)  { b, ok := r[name].(bool); return b, ok }

// nullIsFalse sets each named column that is NULL (absent) to false.
func (r row) nullIsFalse(names ...string) {
	for _, n := range names {
		if _, ok := r[n]; !ok {
			r[n] = false
		}
	}
}

// grants returns the policy's answer a plan row carries in its visible,
// read and disclose columns (see [row.nullIsFalse]), or nil when the plan
// has none.
func (r row) grants() *grantFlags {
	if _, ok := r["visible"]; !ok {
		return nil
	}
	var f grantFlags
	f.Visible, _ = r.bool("visible")
	f.Read, _ = r.bool("read")
	f.Disclose, _ = r.bool("disclose")
	return &f
}
