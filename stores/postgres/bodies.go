package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/core"
)

// This file builds and runs the statement that reads the bodies of many
// planned row items of one binding in one round trip (issue 37: "a
// bundle's bodies in one round trip"), optionally with the source's
// recheck evaluated in the same statement, hence the same snapshot. A
// binding's reader ([sqlBinding.Read]) sends it for the row items of each
// read request.
//
// The statement is built from the binding's own body statement, whose
// $key and $version become the columns of one unnest row per item, joined
// LATERAL, so an arbitrary operator-written body statement keeps its
// meaning: each of its uses of $key and $version stands for that item's
// planned key and version, $principal stays a bound parameter. Its
// parameters:
//
//	$1 text[]  the items' planned keys, in plan order
//	$2 text[]  their planned versions
//	$3 int8[]  their byte limits
//	$4 int8    the budget: bytes the bodies returned together may hold
//	$5...      $principal, $binding, $captures, as the statements use them
//
// and it returns one row per row of the body statement per item (exactly
// one for a well-formed statement; none is impossible, the join is LEFT),
// in plan order:
//
//	ord      int8    the item's position, 1-based
//	found    bool    the body statement returned a row for the item
//	version  text    the row's version (the planned one when the statement has no version column)
//	size     int8    octet_length of the body, NULL for a NULL body
//	cut      bool    the body fits its limit but the running sum passed the budget
//	body             the body, only when it has the planned version, fits its limit and is not cut
//
// and, with the recheck folded in, decided, visible, read, discover and
// disclose: the decide statement's answer for the item's key (decided is
// false when it returned no row for the key, which hides the item; several
// rows take the most restrictive answer, as [Source.Policy] does).
//
// The budget is a window over the items in plan order: the running sum of
// the sizes of the bodies that have the planned version and fit their own
// limit. A body is returned while that sum stays within the budget; the
// first one past it, and every one after it, is cut. That is the
// gateway's sequential admission: an item over its own limit is an issue
// of its own and spends nothing, one that overflows what is left stops
// admission. A cut or oversized body is never transferred.

// bodyItem is one planned row item of a batch body read.
type bodyItem struct {
	key, version string
	limit        int64 // bytes its body may hold
}

// bodiesRecheck folds the source's decide statement into a batch body
// read: decide is the policy's statement ($keys, $principal, $binding,
// $captures), discover and disclose say whether it returns those optional
// columns (its prepared form's has).
type bodiesRecheck struct {
	decide             namedSQL
	discover, disclose bool
}

// bodiesStatement is the statement [buildBodies] builds.
type bodiesStatement struct {
	sql     string
	recheck bool
	params  []string // the names bound as $5, $6, ...: "principal", "binding", "captures"
}

// Fixed parameters of a bodies statement.
const (
	bodiesKeys     = "($1::text[])"
	bodiesVersions = "($2::text[])"
	bodiesLimits   = "($3::int8[])"
	bodiesBudget   = "($4::int8)"
	bodiesFixed    = 4
	// bodiesItem is the alias of the items' unnest, the one name the
	// statement adds to the body statement's scope: its columns are
	// mcpres_key, mcpres_version, mcpres_limit and mcpres_ord.
	bodiesItem = "mcpres_item"
)

// buildBodies returns the statement that reads the bodies of any number of
// items of the binding whose body statement is body: versionColumn says
// whether body returns a version column (its prepared form's has); without
// one body must use $version, and an item whose version changed is one it
// returns no row for. A non-nil recheck folds the decide statement in.
//
// The result is checked by preparing it: a body statement that uses $key
// or $version where PostgreSQL takes no column reference (LIMIT $key) does
// not prepare.
func buildBodies(body namedSQL, versionColumn bool, recheck *bodiesRecheck) (*bodiesStatement, error) {
	if body.paramIndex("key") == 0 {
		return nil, errors.New("the body statement does not use $key")
	}
	if !versionColumn && body.paramIndex("version") == 0 {
		return nil, errors.New("is not pinned to the version: return a version column or compare with $version")
	}
	st := &bodiesStatement{recheck: recheck != nil}
	bound := func(name string) string {
		for i, n := range st.params {
			if n == name {
				return "($" + strconv.Itoa(bodiesFixed+i+1) + "::text)"
			}
		}
		st.params = append(st.params, name)
		return "($" + strconv.Itoa(bodiesFixed+len(st.params)) + "::text)"
	}
	inner, err := substituteParams(body, textCast, func(name string) (string, error) {
		switch name {
		case "key":
			return "(" + bodiesItem + ".mcpres_key)", nil
		case "version":
			return "(" + bodiesItem + ".mcpres_version)", nil
		case "principal":
			return bound(name), nil
		}
		return "", fmt.Errorf("the body statement takes $key, $version and $principal, not $%s", name)
	})
	if err != nil {
		return nil, err
	}
	version, fits := "q.version::text", "q.version::text = "+bodiesItem+".mcpres_version AND octet_length(q.body) <= "+bodiesItem+".mcpres_limit"
	if !versionColumn {
		version, fits = bodiesItem+".mcpres_version", "octet_length(q.body) <= "+bodiesItem+".mcpres_limit"
	}
	var b strings.Builder
	b.WriteString("SELECT " + bodiesItem + ".mcpres_ord, b.found IS NOT NULL, b.version, b.size,\n")
	b.WriteString("\tcoalesce(b.fits, false) AND sum(CASE WHEN b.fits THEN b.size ELSE 0 END) OVER w > " + bodiesBudget + ",\n")
	b.WriteString("\tCASE WHEN b.fits AND sum(CASE WHEN b.fits THEN b.size ELSE 0 END) OVER w <= " + bodiesBudget + " THEN b.body END")
	if recheck != nil {
		b.WriteString(",\n\td.mcpres_key IS NOT NULL, coalesce(d.visible, false), coalesce(d.read, false), coalesce(d.discover, false), coalesce(d.disclose, false)")
	}
	b.WriteString("\nFROM unnest(" + bodiesKeys + ", " + bodiesVersions + ", " + bodiesLimits + ") WITH ORDINALITY AS " +
		bodiesItem + "(mcpres_key, mcpres_version, mcpres_limit, mcpres_ord)\n")
	b.WriteString("LEFT JOIN LATERAL (SELECT true AS found, " + version + " AS version, octet_length(q.body)::int8 AS size,\n")
	b.WriteString("\tcoalesce(" + fits + ", false) AS fits, q.body\n")
	// OFFSET 0 keeps the body statement a subquery of its own: pulled up,
	// each use of q.body above (its size twice, then the body) would
	// compute a computed body (json_build_object over a row) again.
	b.WriteString("\tFROM (SELECT * FROM (" + inner + "\n) AS q OFFSET 0) AS q) AS b ON true\n")
	if recheck != nil {
		decide, err := substituteParams(recheck.decide, decideCast, func(name string) (string, error) {
			switch name {
			case "keys":
				return bodiesKeys, nil
			case "principal", "binding", "captures":
				return bound(name), nil
			}
			return "", fmt.Errorf("the decide statement takes $keys, $binding, $captures and $principal, not $%s", name)
		})
		if err != nil {
			return nil, err
		}
		discover, disclose := "true", "false"
		if recheck.discover {
			discover = "coalesce(d.discover, true)"
		}
		if recheck.disclose {
			disclose = "coalesce(d.disclose, false)"
		}
		b.WriteString("LEFT JOIN (SELECT d.key::text AS mcpres_key, bool_and(coalesce(d.visible, false)) AS visible,\n")
		b.WriteString("\tbool_and(coalesce(d.read, false)) AS read, bool_and(" + discover + ") AS discover, bool_and(" + disclose + ") AS disclose\n")
		b.WriteString("\tFROM (" + decide + "\n) AS d WHERE d.key IS NOT NULL GROUP BY 1) AS d ON d.mcpres_key = " + bodiesItem + ".mcpres_key\n")
	}
	b.WriteString("WINDOW w AS (ORDER BY " + bodiesItem + ".mcpres_ord ROWS UNBOUNDED PRECEDING)\n")
	b.WriteString("ORDER BY " + bodiesItem + ".mcpres_ord")
	st.sql = b.String()
	return st, nil
}

// decideCast is the cast rewriteNamed gives a policy statement's
// parameters ([Source.Policy]).
func decideCast(name string) string {
	if name == "keys" {
		return "text[]"
	}
	return "text"
}

// substituteParams returns n's SQL with every use of a named parameter
// replaced by what expr returns for its name, in place of the positional
// parameter ($n::cast) that rewriteNamed wrote there with cast. It walks
// n.Uses, so constants, quoted identifiers and comments that merely look
// like a parameter are left alone, as rewriteNamed left them.
func substituteParams(n namedSQL, cast paramCast, expr func(name string) (string, error)) (string, error) {
	var out strings.Builder
	out.Grow(len(n.SQL) + 32*len(n.Uses))
	cursor, delta := 0, 0
	for _, u := range n.Uses {
		rep := "($" + strconv.Itoa(n.paramIndex(u.Name)) + "::" + cast(u.Name) + ")"
		at := u.Offset + delta
		if at < cursor || at+len(rep) > len(n.SQL) || n.SQL[at:at+len(rep)] != rep {
			return "", fmt.Errorf("postgres: parameter $%s at offset %d was not rewritten as %s", u.Name, u.Offset, rep)
		}
		e, err := expr(u.Name)
		if err != nil {
			return "", err
		}
		out.WriteString(n.SQL[cursor:at])
		out.WriteString(e)
		cursor = at + len(rep)
		delta += len(rep) - (1 + len(u.Name))
	}
	out.WriteString(n.SQL[cursor:])
	return out.String(), nil
}

// bodiesPass is what a folded recheck binds besides the keys: the name of
// the definition the pass reads and its decoded captures as a JSON object
// ("" binds NULL), as [Source.Policy]'s Decide binds them.
type bodiesPass struct{ binding, captures string }

// bodyResult is what a batch body read returned for one item.
type bodyResult struct {
	found   bool   // the body statement returned a row
	version string // that row's version
	size    *int64 // its body's size; nil for a NULL body
	cut     bool   // the body fits its limit but not the budget
	body    []byte // the body, when returned
	rows    int    // rows the body statement returned for the item
	// decided is whether the folded recheck's decide statement returned a
	// row for the item's key, answer its answer.
	decided bool
	answer  flags
	// rechecked says the statement that read it folded the recheck in
	// (a body a standby served was read without it: the gateway's recheck
	// asks the policy on the primary).
	rechecked bool
}

// decision is the answer of the folded recheck for r's item, exactly as
// [Source.Policy]'s Decide gives it at the recheck: no row for the key
// hides the item, discover false hides it too.
func (r bodyResult) decision() *core.TargetDecision {
	f := r.answer
	if !r.decided {
		f = flags{}
	}
	d := f.decision()
	return &d
}

// payload turns r into the item's payload or error, as the sequential
// read does: Unavailable for an item that is gone, refused or without
// content, ErrChanged for one with another version, TooLarge for one over
// its limit or cut by the budget.
func (r bodyResult) payload(it bodyItem, mime string, text bool) (core.ResourcePayload, error) {
	switch {
	case r.rows > 1:
		return core.ResourcePayload{}, errors.New("postgres: the body statement returned more than one row")
	case r.cut && r.size != nil:
		return core.ResourcePayload{}, &core.TooLargeError{Size: *r.size}
	}
	return decide(r.found, r.version == it.version, r.size, r.body, it.limit, mime, text)
}

// maxBodyRowsPerItem bounds the rows a batch body read accepts per item on
// average: a body statement returns one row per item, and a statement that
// returns many more fails the batch instead of being read to its end.
const maxBodyRowsPerItem = 2

// bodies runs st for items (at most the session's MaxPlanItems) in one
// round trip and returns one result per item, in order. budget bounds the
// bytes of all bodies returned together; pass is bound where st's
// statements use $binding and $captures. It checks what the server
// returned against the limits, so a statement that did not honour them
// fails instead of being served.
func (s *session) bodies(ctx context.Context, st *bodiesStatement, items []bodyItem, budget int64, pass bodiesPass) ([]bodyResult, error) {
	switch {
	case len(items) == 0:
		return nil, nil
	case len(items) > s.maxItems:
		return nil, fmt.Errorf("postgres: %d items in one body read, over MaxPlanItems %d", len(items), s.maxItems)
	case budget < 0:
		budget = 0
	}
	keys, versions, limits := make([]string, len(items)), make([]string, len(items)), make([]int64, len(items))
	for i, it := range items {
		keys[i], versions[i], limits[i] = it.key, it.version, max(it.limit, 0)
	}
	args := make([]any, bodiesFixed, bodiesFixed+len(st.params))
	args[0], args[1], args[2], args[3] = keys, versions, limits, budget
	for _, name := range st.params {
		switch name {
		case "principal":
			p, err := s.principal(ctx)
			if err != nil {
				return nil, err
			}
			args = append(args, p)
		case "binding":
			args = append(args, nullText(pass.binding))
		case "captures":
			args = append(args, nullText(pass.captures))
		default:
			return nil, fmt.Errorf("postgres: bodies statement binds unknown parameter $%s", name)
		}
	}
	out := make([]bodyResult, len(items))
	var (
		rows, spent, ord int64
		res              bodyResult
		version          *string
	)
	dest := []any{&ord, &res.found, &version, &res.size, &res.cut, &res.body} // scanned into for every row
	if st.recheck {
		dest = append(dest, &res.decided, &res.answer.visible, &res.answer.read, &res.answer.discover, &res.answer.disclose)
	}
	err := s.queryPlanned(ctx, true, st.sql, args, func(r pgx.Rows) error {
		if rows++; rows > int64(maxBodyRowsPerItem*len(items)) {
			return errors.New("postgres: the body statement returned more than one row per item")
		}
		res, version = bodyResult{}, nil
		if err := r.Scan(dest...); err != nil {
			return err
		}
		if ord < 1 || ord > int64(len(items)) {
			return fmt.Errorf("postgres: the bodies statement returned position %d of %d items", ord, len(items))
		}
		if version != nil {
			res.version = *version
		}
		it, prev := items[ord-1], &out[ord-1]
		if res.body != nil {
			spent += int64(len(res.body))
			if int64(len(res.body)) > it.limit || spent > budget {
				return fmt.Errorf("postgres: the bodies statement returned %d bytes for item %d past its limits", len(res.body), ord)
			}
		}
		res.rows, res.rechecked = prev.rows+1, st.recheck
		if prev.rows > 0 {
			res.body = nil // an item of several rows is an error; keep none of them
		}
		*prev = res
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// nullText binds "" as NULL.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}
