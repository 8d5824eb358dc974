package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/mediatype"
	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

// SQLBinding defines one resource of a host's own schema by the SQL the
// host writes. Statements name their parameters ($tenant, $id, ...): the
// store binds them by position as text (cast where a column has another
// type: $id::uuid) and never builds SQL from a value. Each statement is one
// SELECT without a trailing semicolon; [Source.Check] prepares it and checks
// its parameters and columns.
//
// The plan (or bundle) statement selects identity metadata only, never a
// body. Its result columns, by name:
//
//	key                (any type, required)  the item's stable id; the body statement's $key
//	version            (any type, required)  changes whenever the content or MIME type does
//	mime               (text, required)      the item's MIME type
//	name, title        (text)                accepted and checked; not served (core items carry no name)
//	size               (integer)             the body's size, when known
//	text               (boolean)             serve the body as text; default: by MIME type
//	object_key         (text)                a referenced object: a second item, a core.ObjectRef read by the object source
//	object_source      (text)                which of SourceOptions.Objects holds it (default ObjectSource)
//	object_bucket      (text)                the bucket the row names: a row naming another bucket than its object source's (SourceOptions.Objects) has no object item
//	object_etag        (text)                the ETag that pins it
//	object_version_id  (text)                the version id that pins it (with neither, the object source pins the current object when it reads it, unless Unpinned)
//	object_size        (integer)             its size, checked when it is read
//	object_mime        (text)                its MIME type; default: the object store's (an s3store bucket opened with TypeByKey, as a resources file's are: the key extension's, else application/octet-stream)
//	visible, read      (boolean, together)   the policy's answer for the row, read in the plan
//	disclose           (boolean)             issues about the row may carry its URI
//	content            (bytea or text)       the row item's content, inline (needs visible and read)
//
// plus any column ItemURI or ObjectURI names. A NULL object_key is a row
// without an object. Any other column is a mistake that Check reports.
//
// A content column plans the row item with its content
// (core.ResourceMatch.WithContent): the gateway reads no body for it and,
// when it serves the binding under a [Source.Policy] of the same source
// (core.ResourceMatch.Policy), with the decision the plan read with it,
// naming that policy, which the gateway rechecks the item by, so a read of
// such items costs the plan alone; under another policy the content comes
// with no decision, and that policy is asked at the recheck. The content
// serves the read that planned it only: a target kept from an earlier plan
// is read by the body statement. The store inlines content
// of at most 8 KiB (a longer one is not transferred, and the item is read
// by the body statement, as is one whose content is NULL): fields, small
// JSON documents. Return it only where the row's read column is true (CASE
// WHEN ... THEN ... END), since it is fetched before the gateway decides,
// and exactly what the body statement returns for the row.
//
// The visible, read and disclose columns fold the policy's decision into
// the plan: the [Source.Policy] of the same source decides the pass before
// the body reads from them, with no statement of its own, and runs its
// decide statement only for the recheck after the reads. Compute them with
// the same predicate as the decide statement (a LATERAL join on the grants
// table, say), so that both stages answer alike; the row's object item
// takes the row's answer. Whatever policy the gateway asks, the store
// reads no body of a row its plan answered hidden or unreadable: the
// reader refuses it, as storage refuses an item the caller may not read.
//
// A Plan without Body serves the row's object alone, as the request URI:
// register it beside the row's binding under the object item's URI
// (doc://tenants/{tenant}/documents/{id}/object) so that the object items
// of the row's reads can be read on their own. Its Plan must return
// object_key, and ObjectURI stays empty. A row without an object, or with
// one its store does not serve, is unavailable.
//
// A source without object sources (SourceOptions.Objects empty) serves
// every row alone: the plan's object columns are accepted and ignored, for
// a host that serves a definition written with objects but has no object
// store (the reference server without --bucket).
type SQLBinding struct {
	// Definition is the resource's definition: a URITemplate whose
	// variables the statements use by name, or a concrete URI.
	Definition core.ResourceDefinition
	// Plan is the statement that plans one item: the request names exactly
	// one row (zero rows is unavailable, exactly like a row the principal
	// may not see; more than one is an error). The item's URI is the
	// request URI in its canonical form: the template with each decoded
	// capture escaped as one path segment, as ItemURI's values are
	// (doc://tenants/%61cme/documents/1 is doc://tenants/acme/documents/1). Parameters: the template's variables and $principal.
	// Exactly one of Plan and Bundle is set.
	Plan string
	// Bundle is the statement that plans several items, one per row in
	// the statement's order: zero rows is a legitimately empty bundle.
	// Parameters as for Plan; ItemURI is required.
	Bundle string
	// Anchored makes a bundle statement select from the bundle's own row (a
	// project, a tenant) LEFT JOINed with its items: zero rows means the
	// bundle does not exist or is refused, and is unavailable exactly like
	// a plan with no row, while one row with a NULL key is the anchor of a
	// bundle without items and plans none. Without Anchored, zero rows is
	// an empty bundle and a NULL key is an error.
	Anchored bool
	// ItemURI is the pattern of a bundle row's item URI: literal text and
	// {column} placeholders, each replaced by that column's value escaped
	// as one path segment (doc://tenants/{tenant_id}/{id}).
	ItemURI string
	// ObjectURI is the pattern of a row's object item URI, as ItemURI;
	// empty means the row item's URI followed by "/object".
	ObjectURI string
	// Body is the statement that selects one item's content, pinned to
	// the planned key and version (none in a plan that serves its row's
	// object alone): parameters $key, $version and
	// $principal; columns body (bytea or text, required) and version
	// (any type). With a version column the store tells a changed item
	// (read_failed, retryable) from one that is gone or refused
	// (unavailable); without one the statement must use $version and a
	// changed item is unavailable. The store returns the body only when it
	// fits the item's Limit, in the same statement (octet_length), so an
	// oversized body is never transferred. Zero rows is unavailable; more
	// than one is an error. The store reads all the row items of a
	// request (a bundle's bodies) with one statement built from this one,
	// in which each use of $key and $version stands for an item's planned
	// key and version (a column, no longer a parameter); [Source.Check]
	// refuses a body statement that PostgreSQL does not accept so.
	Body string
	// Complete holds one statement per template variable it completes:
	// parameters $prefix (required; compare with starts_with, a literal),
	// $limit (bigint), $principal and the template's other variables (NULL
	// when the caller has not chosen them); one column, value (text), in
	// the order to offer.
	Complete map[string]string
	// ObjectSource names the entry of SourceOptions.Objects that holds
	// rows' objects when the plan has no object_source column.
	ObjectSource string
	// Unpinned lets the object of a row that records neither an
	// object_etag nor an object_version_id be read as the current object,
	// unpinned (core.ObjectRef.Unpinned). Without it, the default, the
	// object source pins such an object when it reads it, after the
	// decision (package s3store: one HEAD, then a GET of that ETag or
	// nothing), so that the bytes served are those of one version.
	Unpinned bool
	// Representation labels the row items; empty means "row". Object
	// items are labelled "object".
	Representation string
	// Public says every caller may read what the binding serves: its
	// statements may answer alike for every caller. Without it,
	// [Source.Check] refuses a plan, bundle, body or completion statement
	// whose answer cannot depend on the caller (it binds no $principal and
	// reads no relation whose row-level security depends on the caller; see
	// [Source.Prove]). It waives nothing else of the proof.
	Public bool
	// Listen is the channel on which the host's triggers NOTIFY the keys of
	// changed items (see [Source.Listener]), for subscriptions; empty
	// means the binding's reads are not watched. Lowercase letters, digits
	// and _.
	Listen string
}

// The representations of the targets a Source plans.
const (
	// ReprRow labels a row item of a [SQLBinding] unless it names its own.
	ReprRow = "row"
	// reprSQLBundle labels the requested target of a bundle.
	reprSQLBundle = "sql-bundle"
)

// planColumns are the columns a plan or bundle statement may return.
var planColumns = []column{
	{"key", colAny, true}, {"version", colAny, true}, {"mime", colText, true},
	{"name", colText, false}, {"title", colText, false}, {"size", colInteger, false}, {"text", colBool, false},
	{"object_key", colText, false}, {"object_source", colText, false}, {"object_bucket", colText, false}, {"object_etag", colText, false},
	{"object_version_id", colText, false}, {"object_size", colInteger, false}, {"object_mime", colText, false},
	{"visible", colBool, false}, {"read", colBool, false}, {"disclose", colBool, false},
	{inlineColumn, colBody, false},
}

// inlineColumn is the plan column of a row item's inline content, and
// inlineMaxBytes the most the store inlines.
const (
	inlineColumn   = "content"
	inlineMaxBytes = 8 << 10
)

var bodyColumns = []column{{"body", colBody, true}, {"version", colAny, false}}

var completeColumns = []column{{"value", colText, true}}

// sqlRef is the private authorization data of a target a Source planned.
type sqlRef struct {
	Kind    string `json:"k"` // "row", "object" or "bundle"
	Source  string `json:"s"`
	Binding string `json:"b"`
	Key     string `json:"key,omitempty"`
	Version string `json:"v,omitempty"`
	MIME    string `json:"m,omitempty"`
	Text    bool   `json:"t,omitempty"`
	// Grants is the policy's answer read by the plan statement (its
	// visible, read and disclose columns), for the decision before the
	// reads; nil when the plan has no such columns.
	Grants *grantFlags `json:"g,omitempty"`
}

const (
	refRow    = "row"
	refObject = "object"
	refBundle = "bundle"
)

func parseSQLRef(t core.ResourceTarget) (sqlRef, bool) {
	var r sqlRef
	if decodeSQLRef(t.AuthorizationData(), &r) != nil || r.Source == "" {
		return sqlRef{}, false
	}
	switch r.Kind {
	case refRow, refObject, refBundle:
		return r, true
	}
	return sqlRef{}, false
}

// sqlBinding is a checked SQLBinding: its resolver, reader and completion.
type sqlBinding struct {
	src       *Source
	name      string
	repr      string
	bundle    bool
	plan      *statement
	body      *statement
	complete  map[string]*statement
	itemURI   uriPattern
	objectURI uriPattern
	canonical uriPattern // a plan's URITemplate, for its item's canonical URI
	objSource string
	objOnly   bool
	anchored  bool
	unpinned  bool // SQLBinding.Unpinned
	// folded are the bodies statements with the recheck of a policy of
	// the source folded in, by its *sqlPolicy ([Source.fold]).
	folded sync.Map
	// batch is the plan statement's batch form, for ResolveAll.
	batch planBatch
}

// Binding returns the binding that b defines over src. It checks what it
// can without the database (the statements' syntax and parameter names
// against the template, the URI patterns, the object source) and returns
// the first mistake as a *core.ConfigError naming the binding, the
// statement and the parameter; [Source.Check] then checks the statements
// against the database, and until it has they serve nothing.
func (src *Source) Binding(b SQLBinding) (core.ResourceBinding, error) {
	name := b.Definition.Name
	if name == "" {
		name = b.Definition.URITemplate + b.Definition.URI
	}
	at := func(field, key string) core.ConfigPath {
		return core.ConfigPath{Source: src.name, Binding: name, Field: field, Key: key}
	}
	// failAt reports a mistake in the field of b at path, wrapping err (an
	// *SQLError says where in the statement).
	failAt := func(path core.ConfigPath, reason string, err error) (core.ResourceBinding, error) {
		return core.ResourceBinding{}, path.Reject(reason, err)
	}
	fail := func(field, reason string) (core.ResourceBinding, error) { return failAt(at(field, ""), reason, nil) }
	var vars []string
	if b.Definition.URITemplate != "" {
		v, err := core.TemplateVariables(b.Definition.URITemplate)
		if err != nil {
			return failAt(at("URITemplate", ""), errors.Unwrap(err).Error(), err) // the rule, without "core: URI template"
		}
		vars = v
	}
	sb := &sqlBinding{src: src, name: name, repr: b.Representation, objSource: b.ObjectSource, unpinned: b.Unpinned, complete: map[string]*statement{}}
	if sb.repr == "" {
		sb.repr = ReprRow
	}
	if sb.repr == reprSQLBundle {
		return fail("Representation", "is reserved")
	}
	planSQL, kind, planField := b.Plan, "plan", "Plan"
	switch {
	case b.Plan != "" && b.Bundle != "":
		return fail("", "give plan (one item) or bundle (several items), not both")
	case b.Plan == "" && b.Bundle == "":
		return fail("", "give plan (one item) or bundle (several items)")
	case b.Bundle != "":
		planSQL, kind, planField, sb.bundle = b.Bundle, "bundle", "Bundle", true
		if b.ItemURI == "" {
			return fail("ItemURI", "is required for a bundle: name each row's item URI, such as doc://tenants/{tenant_id}/{id}")
		}
	case b.ItemURI != "":
		return fail("ItemURI", "is for bundles; a plan's item is the request URI")
	}
	if b.Anchored && b.Bundle == "" {
		return fail("Anchored", "is for bundles: a plan's missing row is already unavailable")
	}
	sb.anchored = b.Anchored
	sb.objOnly = b.Plan != "" && b.Body == ""
	switch {
	case b.Body == "" && (b.Bundle != "" || len(src.objects) == 0):
		return fail("Body", "is required")
	case sb.objOnly && b.ObjectURI != "":
		return fail("ObjectURI", "a plan without body serves its row's object alone, as the request URI: leave it out")
	}
	if b.Listen != "" && !ValidChannel(b.Listen) {
		return fail("Listen", fmt.Sprintf("%q is not a channel name (lowercase letters, digits and _, up to 63)", b.Listen))
	}
	var err error
	if sb.itemURI, err = parseURIPattern(b.ItemURI); err != nil {
		return fail("ItemURI", err.Error())
	}
	if sb.objectURI, err = parseURIPattern(b.ObjectURI); err != nil {
		return fail("ObjectURI", err.Error())
	}
	if !sb.bundle && b.Definition.URITemplate != "" {
		// The template as a pattern of its captures: a plan's item URI is
		// the request's canonical form, escaped as a bundle's item URIs are.
		sb.canonical, _ = parseURIPattern(b.Definition.URITemplate)
	}
	if b.ObjectSource != "" {
		if _, ok := src.objects[b.ObjectSource]; !ok {
			return fail("ObjectSource", fmt.Sprintf("names object source %q, which SourceOptions.Objects does not hold", b.ObjectSource))
		}
	}
	allowCapture := func(n string) bool { return n == "principal" || slices.Contains(vars, n) }
	// The plan.
	named, err := parseNamed(planSQL, nil, allowCapture, "the template has no such variable (parameters: the template's variables and $principal)")
	if err != nil {
		return failAt(at(planField, ""), err.Error(), err)
	}
	for _, v := range vars {
		if named.paramIndex(v) == 0 {
			return fail(planField, fmt.Sprintf("must use $%s: URIs that differ only in {%s} would read the same rows", v, v))
		}
	}
	sb.plan = &statement{kind: kind, path: at(planField, ""), named: named, callerBound: !b.Public}
	sb.plan.prepare = sb.preparePlan
	// Completions, in name order so that Check reports deterministically;
	// an object-only binding completes its captures like any other.
	for _, v := range slices.Sorted(maps.Keys(b.Complete)) {
		field, path := fmt.Sprintf("complete %q", v), at("Complete", v)
		if !slices.Contains(vars, v) {
			return failAt(path, "the template has no such variable", nil)
		}
		cast := func(n string) string {
			if n == "limit" {
				return "int8"
			}
			return "text"
		}
		named, err := parseNamed(b.Complete[v], cast, func(n string) bool { return n == "prefix" || n == "limit" || allowCapture(n) },
			"a completion takes $prefix, $limit, $principal and the template's variables")
		if err != nil {
			return failAt(path, err.Error(), err)
		}
		if named.paramIndex("prefix") == 0 {
			return failAt(path, "must use $prefix: compare the value with starts_with(value, $prefix)", nil)
		}
		st := &statement{kind: field, path: path, named: named, callerBound: !b.Public}
		st.prepare = func(desc *pgconn.StatementDescription) (*prepared, error) {
			return prepareSelect(st, desc, completeColumns, nil, func(cols string, n int) string {
				return "SELECT " + cols + ", count(*) OVER () FROM (" + st.named.SQL + "\n) AS q LIMIT $" + strconv.Itoa(n+1)
			})
		}
		sb.complete[v] = st
	}
	// The body, unless the plan serves its row's object alone.
	if !sb.objOnly {
		if named, err = parseNamed(b.Body, nil, func(n string) bool { return n == "key" || n == "version" || n == "principal" },
			"a body statement takes $key, $version and $principal"); err != nil {
			return failAt(at("Body", ""), err.Error(), err)
		}
		if named.paramIndex("key") == 0 {
			return fail("Body", "must use $key: it selects the planned item")
		}
		sb.body = &statement{kind: "body", path: at("Body", ""), named: named, callerBound: !b.Public}
		sb.body.prepare = sb.prepareBody
	}
	src.add(sb.plan)
	if sb.body != nil {
		src.add(sb.body)
		src.mu.Lock()
		src.bodied = append(src.bodied, sb)
		for _, p := range src.policies {
			src.fold(sb, p)
		}
		src.mu.Unlock()
	}
	for _, v := range slices.Sorted(maps.Keys(sb.complete)) {
		src.add(sb.complete[v])
	}
	src.watch(name, b.Listen)
	return sb.binding(b.Definition), nil
}

// binding is the core binding of sb, with its completion when it has
// completion statements.
func (sb *sqlBinding) binding(def core.ResourceDefinition) core.ResourceBinding {
	out := core.ResourceBinding{Definition: def, Resolver: sb, Reader: sb}
	if len(sb.complete) > 0 {
		out.Complete = sb.Complete
	}
	return out
}

// prepareSelect checks desc's columns against want (plus extra) and returns
// the statement that build makes from the select list and the number of
// the host statement's parameters.
func prepareSelect(st *statement, desc *pgconn.StatementDescription, want []column, extra []string,
	build func(cols string, nparams int) string) (*prepared, error) {
	cols, has, err := pickColumns(desc.Fields, want, extra)
	if err != nil {
		return nil, st.configError(err.Error(), nil)
	}
	return &prepared{sql: build(selectList(cols), len(st.named.Names)), cols: cols, has: has}, nil
}

func (sb *sqlBinding) preparePlan(desc *pgconn.StatementDescription) (*prepared, error) {
	// A placeholder that names no column is the pattern's mistake, not the
	// statement's: say so first, whatever else the statement returns.
	for _, p := range []struct {
		field string
		pat   uriPattern
	}{{"ItemURI", sb.itemURI}, {"ObjectURI", sb.objectURI}} {
		for _, c := range p.pat.columns() {
			if !slices.ContainsFunc(desc.Fields, func(f pgconn.FieldDescription) bool { return f.Name == c }) {
				names := make([]string, len(desc.Fields))
				for i, f := range desc.Fields {
					names[i] = f.Name
				}
				return nil, core.ConfigPath{Source: sb.src.name, Binding: sb.name, Field: p.field, Column: c}.Reject(fmt.Sprintf("{%s} names no column of the %s statement, which returns %s",
					c, sb.plan.kind, strings.Join(names, ", ")), nil)
			}
		}
	}
	extra := append(sb.itemURI.columns(), sb.objectURI.columns()...)
	p, err := prepareSelect(sb.plan, desc, planColumns, extra, func(cols string, n int) string {
		return "SELECT " + cols + " FROM (" + sb.plan.named.SQL + "\n) AS q LIMIT $" + strconv.Itoa(n+1)
	})
	if err != nil {
		return nil, err
	}
	for _, c := range []string{"object_source", "object_bucket", "object_etag", "object_version_id", "object_size", "object_mime"} {
		if p.has[c] && !p.has["object_key"] {
			return nil, sb.plan.configError(fmt.Sprintf("column %q needs an object_key column", c), nil)
		}
	}
	if p.has["visible"] != p.has["read"] || (p.has["disclose"] && !p.has["visible"]) {
		return nil, sb.plan.configError(`columns "visible" and "read" go together (and "disclose" needs them): they are the policy's answer folded into the plan`, nil)
	}
	if p.has[inlineColumn] && (!p.has["visible"] || sb.objOnly) {
		if sb.objOnly {
			return nil, sb.plan.configError(`column "content" is for row items; a plan without body serves the row's object, which its object source reads`, nil)
		}
		return nil, sb.plan.configError(`column "content" needs the "visible" and "read" columns: inline content is admitted and rechecked by the decision the plan read with it`, nil)
	}
	if sb.objOnly && !p.has["object_key"] {
		return nil, sb.plan.configError(`column "object_key" is missing: a plan without body serves the row's object`, nil)
	}
	if p.has["object_key"] && !p.has["object_source"] && sb.objSource == "" && len(sb.src.objects) > 0 {
		return nil, sb.plan.configError(`column "object_key" needs an object_source column or SQLBinding.ObjectSource`, nil)
	}
	return p, nil
}

// prepareBody checks the body statement's columns and returns the
// statement the store sends for it: the bodies statement ([buildBodies]),
// which reads any number of the binding's items in one round trip, each
// pinned to its planned key and version and bounded by its limit.
func (sb *sqlBinding) prepareBody(desc *pgconn.StatementDescription) (*prepared, error) {
	cols, has, err := pickColumns(desc.Fields, bodyColumns, nil)
	if err != nil {
		return nil, sb.body.configError(err.Error(), nil)
	}
	st, err := buildBodies(sb.body.named, has["version"], nil)
	if err != nil {
		return nil, sb.body.configError(err.Error(), err)
	}
	return &prepared{sql: st.sql, cols: cols, has: has, bodies: st, sentReason: bodiesSentReason}, nil
}

// prepareFolded returns the bodies statement of sb with the decide
// statement of p folded in, from the checked forms of both.
func (sb *sqlBinding) prepareFolded(p *sqlPolicy) (*prepared, error) {
	body, err := sb.body.load()
	if err != nil {
		return nil, err
	}
	decide, err := p.st.load()
	if err != nil {
		return nil, err
	}
	st, err := buildBodies(sb.body.named, body.has["version"],
		&bodiesRecheck{decide: p.st.named, discover: decide.has["discover"], disclose: decide.has["disclose"]})
	if err != nil {
		return nil, sb.body.configError(err.Error(), err)
	}
	return &prepared{sql: st.sql, cols: body.cols, has: body.has, bodies: st, sentReason: foldedSentReason}, nil
}

// foldedSentReason is why a checked body statement may not prepare with
// the policy's recheck folded in.
const foldedSentReason = "does not prepare with the policy's decide statement folded in, as the store reads a bundle's items and their recheck at once"

// bodiesSentReason is why a body statement that prepares alone may not
// prepare as its bodies statement.
const bodiesSentReason = "does not prepare as the statement that reads a bundle's items at once " +
	"(each use of $key and $version becomes a column of the items, which PostgreSQL refuses in a few places, such as an aggregate of $key alone)"

// Resolve plans a request with the plan or bundle statement.
func (sb *sqlBinding) Resolve(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
	p, err := sb.src.serve(ctx, sb.plan)
	if err != nil {
		return core.ResourceReadPlan{}, err
	}
	vals, err := sb.src.values(ctx, sb.plan.named, m.Vars())
	if err != nil {
		return core.ResourceReadPlan{}, err
	}
	maxItems := sb.src.s.maxItems
	args := append(sb.plan.named.args(vals), maxItems+1)
	rows, err := sb.src.query(ctx, p, args)
	if err != nil {
		return core.ResourceReadPlan{}, err
	}
	return sb.planOf(m, p, rows)
}

// planOf builds the plan of m from the rows its plan statement p returned
// (at most MaxPlanItems+1 of them).
func (sb *sqlBinding) planOf(m core.ResourceMatch, p *prepared, rows []row) (core.ResourceReadPlan, error) {
	var err error
	maxItems := sb.src.s.maxItems
	// A bundle past maxItems is cut there and its plan truncated: the read
	// is partial, with a budget issue, never silently short.
	truncated := false
	switch {
	case len(rows) > maxItems && sb.bundle:
		rows, truncated = rows[:maxItems], true
	case len(rows) > maxItems:
		return core.ResourceReadPlan{}, fmt.Errorf("postgres: the request plans more than %d items (SourceOptions.MaxPlanItems)", maxItems)
	case (!sb.bundle || sb.anchored) && len(rows) == 0:
		return core.ResourceReadPlan{}, core.NewFailure(core.FailureUnavailable, ErrNotVisible)
	case !sb.bundle && len(rows) > 1:
		return core.ResourceReadPlan{}, fmt.Errorf("postgres: binding %q: the plan statement returned %d rows for one item", sb.name, len(rows))
	}
	for _, r := range rows {
		if p.has["visible"] {
			r.nullIsFalse("visible", "read", "disclose")
		}
	}
	// A plan's item has the request's canonical URI: its decoded captures
	// escaped as a bundle's item URIs are (doc://tenants/%61cme/... is
	// doc://tenants/acme/...); the requested target keeps the request URI.
	planURI := m.URI()
	if !sb.canonical.empty() {
		if u, err := sb.canonical.expandWith(m.Var); err == nil {
			planURI = u
		}
	}
	if sb.objOnly {
		ot, ok, err := sb.objectTarget(planURI, rows[0])
		switch {
		case err != nil:
			return core.ResourceReadPlan{}, err
		case !ok:
			return core.ResourceReadPlan{}, core.NewFailure(core.FailureUnavailable, ErrNotVisible)
		}
		requested := ot
		if planURI != m.URI() {
			if requested, _, err = sb.objectTarget(m.URI(), rows[0]); err != nil {
				return core.ResourceReadPlan{}, err
			}
		}
		return core.NewResourceReadPlan(requested, ot)
	}
	items := make([]core.ResourceTarget, 0, len(rows))
	requested := core.ResourceTarget{}
	for _, r := range rows {
		if _, ok := r.str("key"); !ok && sb.anchored {
			continue // the anchor of a bundle without items
		}
		uri := planURI
		if sb.bundle {
			if uri, err = sb.itemURI.expand(r); err != nil {
				return core.ResourceReadPlan{}, fmt.Errorf("postgres: binding %q: ItemURI: %w", sb.name, err)
			}
		}
		t, err := sb.rowTarget(m, uri, r)
		if err != nil {
			return core.ResourceReadPlan{}, err
		}
		ot, ok, err := sb.objectTarget(uri, r)
		if err != nil {
			return core.ResourceReadPlan{}, err
		}
		if n := len(items) + 1 + btoi(ok); n > maxItems {
			truncated = true // a row and its object stay together
			break
		}
		items = append(items, t)
		if t.URI() == m.URI() {
			requested = t
		}
		if ok {
			items = append(items, ot)
		}
	}
	if requested.IsZero() && !sb.bundle && len(items) > 0 {
		// A plan requested under another encoding than its item's:
		// the same row, under the request URI.
		if requested, err = sb.rowTarget(m, m.URI(), rows[0]); err != nil {
			return core.ResourceReadPlan{}, err
		}
	}
	if requested.IsZero() {
		authz, _ := json.Marshal(sqlRef{Kind: refBundle, Source: sb.src.name, Binding: sb.name})
		if requested, err = core.NewResourceTarget(m.URI(), reprSQLBundle, authz); err != nil {
			return core.ResourceReadPlan{}, err
		}
	}
	plan, err := core.NewResourceReadPlan(requested, items...)
	if truncated {
		plan = plan.Truncated()
	}
	return plan, err
}

// btoi is 1 for true, else 0.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (sb *sqlBinding) rowTarget(m core.ResourceMatch, uri string, r row) (core.ResourceTarget, error) {
	ref := sqlRef{Kind: refRow, Source: sb.src.name, Binding: sb.name}
	var ok bool
	if ref.Key, ok = r.str("key"); !ok {
		return core.ResourceTarget{}, fmt.Errorf("postgres: binding %q: a plan row has a NULL key", sb.name)
	}
	if ref.Version, ok = r.str("version"); !ok {
		return core.ResourceTarget{}, fmt.Errorf("postgres: binding %q: a plan row has a NULL version", sb.name)
	}
	ref.Grants = r.grants()
	ref.MIME, _ = r.str("mime")
	if text, ok := r.bool("text"); ok {
		ref.Text = text
	} else {
		ref.Text = mediatype.IsText(ref.MIME)
	}
	authz, err := json.Marshal(ref)
	if err != nil {
		return core.ResourceTarget{}, err
	}
	t, err := core.NewResourceTarget(uri, sb.repr, authz)
	if err != nil {
		return t, err
	}
	t = withVersion(t, ref.Version)
	// Content the flags deny is not planned (the reader refuses such an
	// item, see Read). The flags are the answer of this source's policies
	// only: they come with the content naming the policy in force when it
	// is one of them; any other policy is asked at the recheck.
	if c, ok := r[inlineColumn].([]byte); ok && ref.Grants != nil && ref.Grants.readable() {
		p := core.BlobPayload(ref.MIME, c)
		if ref.Text {
			p = core.TextPayload(ref.MIME, string(c))
		}
		var d *core.TargetDecision
		if pol, ok := sb.src.own(m.Policy()); ok {
			dc := ref.Grants.flags().decision()
			dc.Policy = pol
			d = &dc
		}
		if wc, err := m.WithContent(t, p, d); err == nil {
			t = wc // else (content over the 64 KiB core.ResourceMatch.WithContent takes) the body statement reads it
		}
	}
	return t, nil
}

// objectRepresentation labels the object items of rows.
const objectRepresentation = "object"

// objectTarget returns the object item a row references, if any: a target
// with a [core.ObjectRef] naming the row's object source, which the gateway
// hands to the reader registered under that name; its authorization data
// is the row's key, which the policy decides. ok is false for a row without
// an object and for one naming another bucket than its object source's
// (the row's item then stands alone).
func (sb *sqlBinding) objectTarget(rowURI string, r row) (core.ResourceTarget, bool, error) {
	key, ok := r.str("object_key")
	if !ok {
		return core.ResourceTarget{}, false, nil
	}
	srcName, ok := r.str("object_source")
	if !ok {
		srcName = sb.objSource
	}
	named, ok := sb.src.objects[srcName]
	if !ok {
		return core.ResourceTarget{}, false, nil
	}
	if bucket, ok := r.str("object_bucket"); ok && named != "" && named != bucket {
		return core.ResourceTarget{}, false, nil // another bucket's object: the row stands alone
	}
	uri := rowURI + "/object"
	if sb.objOnly {
		uri = rowURI
	} else if !sb.objectURI.empty() {
		var err error
		if uri, err = sb.objectURI.expand(r); err != nil {
			return core.ResourceTarget{}, false, fmt.Errorf("postgres: binding %q: ObjectURI: %w", sb.name, err)
		}
	}
	obj := core.ObjectRef{Source: srcName, Key: key, Size: -1, Unpinned: sb.unpinned}
	obj.ETag, _ = r.str("object_etag")
	obj.VersionID, _ = r.str("object_version_id")
	if size, ok := r.int("object_size"); ok {
		obj.Size = size
	}
	obj.MIMEType, _ = r.str("object_mime")
	if obj.MIMEType != "" && !mediatype.Valid(obj.MIMEType) {
		obj.MIMEType = "" // the object source chooses, as for none
	}
	rowKey, _ := r.str("key")
	version, _ := r.str("version")
	authz, err := json.Marshal(sqlRef{Kind: refObject, Source: sb.src.name, Binding: sb.name, Key: rowKey, Version: version, Grants: r.grants()})
	if err != nil {
		return core.ResourceTarget{}, false, err
	}
	t, err := core.NewResourceTarget(uri, objectRepresentation, authz)
	if err != nil {
		return core.ResourceTarget{}, false, err
	}
	if t, err = t.WithObject(obj); err != nil {
		return core.ResourceTarget{}, false, nil // a reference no object source can read: the row stands alone
	}
	return withVersion(t, version), true, nil
}

// withVersion labels t with its row's planned version for audit records
// (core.ResourceTarget.WithVersion); a version too long to record is left
// out, since it changes nothing the read does.
func withVersion(t core.ResourceTarget, version string) core.ResourceTarget {
	if v, err := t.WithVersion(version); err == nil {
		return v
	}
	return t
}

// Read is the binding's native batch [core.Reader]: the row items of the
// binding in req are read by one bodies statement in one round trip, each
// pinned to its planned key and version and bounded by its Limit, their
// bodies together by req.Budget. An item it did not plan (another
// binding's, an object item, which the gateway routes to its object
// source) is ErrBadTarget, and costs nothing.
func (sb *sqlBinding) Read(ctx context.Context, req core.ReadRequest) ([]core.ReadResult, error) {
	out := make([]core.ReadResult, len(req.Items))
	items := make([]bodyItem, 0, len(req.Items))
	at := make([]int, 0, len(req.Items))      // the index in req of items[k]
	refs := make([]sqlRef, 0, len(req.Items)) // and its reference
	for i, it := range req.Items {
		ref, ok := sb.rowRef(it.Target)
		switch {
		case !ok:
			out[i].Err = ErrBadTarget
			continue
		case ref.Grants != nil && !ref.Grants.readable():
			// The plan's own answer denied it: storage refuses what it
			// planned as unreadable, whatever policy the gateway asked.
			out[i].Err = core.NewFailure(core.FailureUnavailable, ErrNotVisible)
			continue
		}
		items, at, refs = append(items, bodyItem{key: ref.Key, version: ref.Version, limit: it.Limit}), append(at, i), append(refs, ref)
	}
	if len(items) == 0 {
		return out, nil
	}
	fail := func(err error) ([]core.ReadResult, error) {
		for _, i := range at {
			out[i].Err = err
		}
		return out, nil
	}
	p, err := sb.src.serve(ctx, sb.body)
	if err != nil {
		return fail(err)
	}
	// With the recheck of the policy in force folded in, when it is one of
	// this source's: its answers name it.
	var pol *sqlPolicy
	if own, ok := sb.src.own(req.Policy); ok {
		if f, ok := sb.folded.Load(own); ok {
			if fp := f.(*statement).ready.Load(); fp != nil {
				p, pol = fp, own
			}
		}
	}
	// The bodies may go to a standby when the policy in force is one of
	// this source's decide statements, which the recheck runs on the
	// primary; there the statement without the recheck folded in is sent.
	plain := p.bodies
	_, routed := sb.src.own(req.Policy)
	if routed && pol != nil {
		bp, err := sb.body.load()
		if err != nil {
			return fail(err)
		}
		plain = bp.bodies
	}
	budget := req.Budget
	for start := 0; start < len(items); start += sb.src.s.maxItems {
		end := min(start+sb.src.s.maxItems, len(items))
		res, err := sb.src.routedBodies(ctx, routed, p.bodies, plain, items[start:end], budget, bodiesPass{binding: sb.name})
		if err != nil {
			return fail(err)
		}
		for k, r := range res {
			it, ref := items[start+k], refs[start+k]
			o := &out[at[start+k]]
			o.Payload, o.Err = r.payload(it, ref.MIME, ref.Text)
			if p.bodies.recheck && r.rechecked {
				if o.Decision = r.decision(); o.Decision != nil {
					o.Decision.Policy = pol
				}
			}
			switch {
			case r.cut:
				budget = 0 // admission stopped: what follows is cut too
			case o.Err == nil:
				budget -= o.Payload.Len()
			}
		}
	}
	return out, nil
}

// rowRef returns the reference of t when it is a row item this binding
// planned.
func (sb *sqlBinding) rowRef(t core.ResourceTarget) (sqlRef, bool) {
	if _, obj := t.Object(); obj || sb.objOnly || t.Representation() != sb.repr {
		return sqlRef{}, false
	}
	ref, ok := parseSQLRef(t)
	if !ok || ref.Source != sb.src.name || ref.Binding != sb.name || ref.Kind != refRow {
		return sqlRef{}, false
	}
	return ref, true
}

// Complete is the binding's completion ([core.ResourceBinding].Complete,
// set when it has completion statements); a variable without one
// completes to nothing.
func (sb *sqlBinding) Complete(ctx context.Context, req core.CompletionRequest) (core.Completion, error) {
	st, ok := sb.complete[req.Variable]
	if !ok {
		return core.Completion{Values: []string{}}, nil
	}
	p, err := sb.src.serve(ctx, st)
	if err != nil {
		return core.Completion{}, err
	}
	limit := min(max(req.Limit, 1), wire.MaxCompletionValues)
	given := map[string]string{"prefix": req.Prefix, "limit": strconv.Itoa(limit)}
	for k, v := range req.Arguments {
		if k != "prefix" && k != "limit" && k != "principal" {
			given[k] = v
		}
	}
	vals, err := sb.src.values(ctx, st.named, given)
	if err != nil {
		return core.Completion{}, err
	}
	if _, ok := vals["limit"]; ok {
		vals["limit"] = int64(limit)
	}
	rows, err := sb.src.queryRaw(ctx, p.sql, append(st.named.args(vals), limit), func(rows pgx.Rows) (row, error) {
		var v string
		var total int64
		if err := rows.Scan(&v, &total); err != nil {
			return nil, err
		}
		return row{"value": v, "total": total}, nil
	})
	if err != nil {
		return core.Completion{}, err
	}
	c := core.Completion{Values: make([]string, 0, len(rows))}
	for _, r := range rows {
		v, _ := r.str("value")
		c.Values = append(c.Values, v)
		total, _ := r.int("total")
		c.Total = int(total)
	}
	c.HasMore = c.Total > len(c.Values)
	return c, nil
}

// values returns the named parameters of a statement: $principal from the
// request context, the rest from given (a name given no value binds NULL).
func (src *Source) values(ctx context.Context, named namedSQL, given map[string]string) (map[string]any, error) {
	vals := make(map[string]any, len(named.Names))
	for _, n := range named.Names {
		if n == "principal" {
			p, err := src.s.principal(ctx)
			if err != nil {
				return nil, err
			}
			vals[n] = p
			continue
		}
		if v, ok := given[n]; ok {
			vals[n] = v
		}
	}
	return vals, nil
}

// query runs a checked select statement in one round trip and returns its
// rows by column name.
func (src *Source) query(ctx context.Context, p *prepared, args []any) ([]row, error) {
	return src.queryRaw(ctx, p.sql, args, func(rows pgx.Rows) (row, error) {
		dest := scanTargets(p.cols)
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		return newRow(p.cols, dest), nil
	})
}

func (src *Source) queryRaw(ctx context.Context, sql string, args []any, scan func(pgx.Rows) (row, error)) ([]row, error) {
	var out []row
	err := src.s.query(ctx, sql, args, func(rows pgx.Rows) error {
		r, err := scan(rows)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// uriPattern is an absolute URI pattern: literal text with {column}
// placeholders.
type uriPattern struct{ parts []string } // even: literal, odd: column name

func parseURIPattern(s string) (uriPattern, error) {
	var p uriPattern
	if scheme, rest, ok := strings.Cut(s, "://"); s != "" && (!ok || scheme == "" || rest == "" || strings.ContainsAny(scheme, "{}")) {
		return p, errors.New("is not an absolute URI pattern such as doc://tenants/{tenant_id}/documents/{id}")
	}
	for s != "" {
		open := strings.IndexByte(s, '{')
		if open < 0 {
			p.parts = append(p.parts, s)
			break
		}
		end := strings.IndexByte(s[open:], '}')
		if end < 0 {
			return uriPattern{}, errors.New("has a '{' without its '}'")
		}
		name := s[open+1 : open+end]
		if !validParamName(name) {
			return uriPattern{}, fmt.Errorf("{%s} does not name a column", name)
		}
		if strings.ContainsAny(s[:open], "}") {
			return uriPattern{}, errors.New("has a '}' without its '{'")
		}
		p.parts = append(p.parts, s[:open], name)
		s = s[open+end+1:]
	}
	return p, nil
}

func (p uriPattern) empty() bool { return len(p.parts) == 0 }

func (p uriPattern) columns() []string {
	var out []string
	for i := 1; i < len(p.parts); i += 2 {
		out = append(out, p.parts[i])
	}
	return out
}

// expand fills the pattern from r, each value escaped as one path segment.
func (p uriPattern) expand(r row) (string, error) { return p.expandWith(r.str) }

// expandWith fills the pattern with value's answer for each placeholder,
// each escaped as one path segment (url.PathEscape): the one canonical
// form of a URI the store plans, a bundle's item URIs and a plan's alike.
func (p uriPattern) expandWith(value func(string) (string, bool)) (string, error) {
	var b strings.Builder
	for i, part := range p.parts {
		if i%2 == 0 {
			b.WriteString(part)
			continue
		}
		v, ok := value(part)
		if !ok || v == "" {
			return "", fmt.Errorf("column %q is NULL or empty", part)
		}
		b.WriteString(url.PathEscape(v))
	}
	return b.String(), nil
}
