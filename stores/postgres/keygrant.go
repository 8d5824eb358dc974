package postgres

import (
	"context"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"go.phpboyscout.uk/mcp/resources/core"
)

// grantColumns are the columns a key grant statement may return: exactly
// one of them.
var grantColumns = []column{{"key", colAny, false}, {"prefix", colAny, false}}

// KeyGrant returns the grant of the S3 objects that the binding named
// binding serves (package s3store's KeyGrant, built here so that neither
// package imports the other): one statement, run as the source's role with
// the caller set, under row-level security like every other, that returns
// the keys the caller may read, in one column named key, or the key
// prefixes, in one column named prefix (each ending in '/': a prefix grants
// every key under it). Its parameters, all text, are any of $key (the
// object's key, decoded), $binding (the binding's name), $principal and the
// URI's decoded captures named in captures (for a key family, the
// template's and k1, k2, ...). A key is granted when a row equals it, or
// starts it as a prefix; the store asks for one such row and no more, in
// one round trip, before any request to S3.
//
// Write it over the rows that reference objects (an attachment's key), not
// over the URI: a key that no row names is refused even under a prefix the
// caller may see. The statement is checked by [Source.Check] with the
// source's others, which refuses one whose answer cannot depend on the
// caller (it binds no $principal and reads no table whose row-level
// security depends on the caller): objects meant for everyone need no
// grant. Errors are *core.ConfigError values.
func (src *Source) KeyGrant(binding, sql string, captures []string) (func(ctx context.Context, binding, key string, vars map[string]string) (bool, error), error) {
	return src.keyGrant(binding, sql, captures, false)
}

// PrefixGrant is [Source.KeyGrant] for a listing of a whole key prefix
// (package s3store's KeyListing, which asks about the listed prefix once,
// before the LIST): the statement must return key prefixes, in one column
// named prefix, and may not use $key or a capture outside captures (pass
// the listing's captures, not k1, k2, ...), so that its answer for the
// listed prefix is its answer for every key under it. A prefix is granted
// when a returned prefix starts it. [Source.Check] refuses a statement
// that returns keys.
func (src *Source) PrefixGrant(binding, sql string, captures []string) (func(ctx context.Context, binding, key string, vars map[string]string) (bool, error), error) {
	return src.keyGrant(binding, sql, captures, true)
}

func (src *Source) keyGrant(binding, sql string, captures []string, prefixOnly bool) (func(ctx context.Context, binding, key string, vars map[string]string) (bool, error), error) {
	path := core.ConfigPath{Source: src.name, Binding: binding, Field: "Grant"}
	fail := func(err error) error {
		return path.Reject(err.Error(), err)
	}
	allowed := func(n string) bool {
		return n == "key" && !prefixOnly || n == "binding" || n == "principal" || slices.Contains(captures, n)
	}
	rule := "a grant statement takes $key, $binding, $principal and the template's captures"
	if prefixOnly {
		rule = "a listing's grant is asked once for the whole listed prefix: it takes $binding, $principal and the listing's captures, not $key or a key segment"
	}
	named, err := parseNamed(sql, nil, allowed, rule)
	if err != nil {
		return nil, fail(err)
	}
	st := &statement{kind: "grant", path: path, named: named, callerBound: true}
	st.prepare = func(desc *pgconn.StatementDescription) (*prepared, error) {
		cols, has, err := pickColumns(desc.Fields, grantColumns, nil)
		if err != nil {
			return nil, st.configError(err.Error(), nil)
		}
		if len(cols) != 1 {
			return nil, st.configError(`return one column: key (the keys the caller may read) or prefix (the key prefixes, each ending in '/')`, nil)
		}
		if prefixOnly && !has["prefix"] {
			return nil, st.configError(`a listing is granted by key prefixes: return one column prefix (each ending in '/'), not key`, nil)
		}
		keyParam := "$" + strconv.Itoa(len(named.Names)+1) + "::text"
		if i := named.paramIndex("key"); i > 0 {
			keyParam = "$" + strconv.Itoa(i) + "::text"
		}
		match := "q.\"key\"::text = " + keyParam
		unusable := "q.\"key\" IS NULL OR q.\"key\"::text = ''"
		if has["prefix"] {
			match = "right(q.\"prefix\"::text, 1) = '/' AND starts_with(" + keyParam + ", q.\"prefix\"::text)"
			unusable = "q.\"prefix\" IS NULL OR right(q.\"prefix\"::text, 1) <> '/'"
		}
		return &prepared{sql: grantQuery(named.SQL, match, unusable), has: has}, nil
	}
	src.add(st)
	grantName := binding // the grant's own binding, which UnusableGrantRows names
	return func(ctx context.Context, binding, key string, vars map[string]string) (bool, error) {
		prep, err := src.serve(ctx, st)
		if err != nil {
			return false, err
		}
		given := make(map[string]string, len(vars)+2)
		for n, v := range vars {
			if slices.Contains(captures, n) {
				given[n] = v
			}
		}
		given["key"], given["binding"] = key, binding
		vals, err := src.values(ctx, named, given)
		if err != nil {
			return false, err
		}
		args := named.args(vals)
		if named.paramIndex("key") == 0 {
			args = append(args, key)
		}
		var granted bool
		var unusable int64
		if _, err := src.queryRaw(ctx, prep.sql, args, func(r pgx.Rows) (row, error) {
			return row{}, r.Scan(&granted, &unusable)
		}); err != nil {
			return false, err
		}
		if !granted && unusable > 0 && src.unusable != nil {
			src.unusable(grantName, unusable)
		}
		return granted, nil
	}, nil
}

// grantQuery is the one statement a grant runs: one row, (true, 0) as soon
// as a row of the grant's statement sql matches the key (match), else
// (false, the number of its rows that can never grant anything: unusable,
// a NULL or empty key, a prefix that is NULL or does not end in '/'). The
// outer LIMIT stops at the first branch's row, so a granted key costs what
// a bare LIMIT 1 costs; only a refusal counts the unusable rows.
func grantQuery(sql, match, unusable string) string {
	return "SELECT * FROM ((SELECT true, 0::bigint FROM (" + sql + "\n) AS q WHERE " + match + " LIMIT 1)\n" +
		"UNION ALL (SELECT false, count(*) FROM (" + sql + "\n) AS q WHERE " + unusable + ")) AS g LIMIT 1"
}
