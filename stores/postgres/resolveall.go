package postgres

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"go.phpboyscout.uk/mcp/resources/core"
)

// batchPlan is the plan statement of a binding made to plan any number of
// requests at once: each use of a template variable becomes a column of
// the requests (unnest of one text[] per variable), $principal stays one
// parameter, and every request keeps its own LIMIT of MaxPlanItems+1 rows.
type batchPlan struct {
	sql  string
	vars []string // the template variables, in the order of their arrays
	// principal is the position of $principal, 0 when the statement does
	// not use it; limit is the position of the per-request row limit.
	principal, limit int
}

// The alias of the requests in a batch plan statement, and its columns.
const (
	batchReq = "mcpres_req"
	batchOrd = "mcpres_ord"
	batchRow = "mcpres_row"
)

// buildBatchPlan returns the batch form of the plan statement named with
// the checked columns cols.
func buildBatchPlan(named namedSQL, cols []column) (*batchPlan, error) {
	bp := &batchPlan{}
	for _, n := range named.Names {
		if n != "principal" {
			bp.vars = append(bp.vars, n)
		}
	}
	col := func(name string) string {
		for i, v := range bp.vars {
			if v == name {
				return batchReq + ".v" + strconv.Itoa(i)
			}
		}
		return ""
	}
	next := len(bp.vars)
	if named.paramIndex("principal") > 0 {
		next++
		bp.principal = next
	}
	next++
	bp.limit = next
	inner, err := substituteParams(named, textCast, func(name string) (string, error) {
		if name == "principal" {
			return "($" + strconv.Itoa(bp.principal) + "::text)", nil
		}
		if c := col(name); c != "" {
			return "(" + c + ")", nil
		}
		return "", errors.New("postgres: a plan statement parameter without a column: $" + name)
	})
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("SELECT " + batchReq + "." + batchOrd + ", b.* FROM unnest(")
	aliases := make([]string, 0, len(bp.vars)+1)
	for i := range bp.vars {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(i+1) + "::text[]")
		aliases = append(aliases, "v"+strconv.Itoa(i))
	}
	if len(bp.vars) == 0 {
		// A concrete URI planned several times: one request each.
		b.WriteString("array_fill(NULL::text, ARRAY[$" + strconv.Itoa(bp.limit+1) + "::int])")
		aliases = append(aliases, "mcpres_none")
	}
	aliases = append(aliases, batchOrd)
	b.WriteString(") WITH ORDINALITY AS " + batchReq + "(" + strings.Join(aliases, ", ") + ")\n")
	b.WriteString("CROSS JOIN LATERAL (SELECT " + selectList(cols) + ", row_number() OVER () AS " + batchRow + "\n")
	b.WriteString("\tFROM (" + inner + "\n) AS q LIMIT $" + strconv.Itoa(bp.limit) + ") AS b\n")
	b.WriteString("ORDER BY " + batchReq + "." + batchOrd + ", b." + batchRow)
	bp.sql = b.String()
	return bp, nil
}

// planBatch is a binding's batch plan statement, built at its first use;
// refused is set once PostgreSQL refused it (a plan statement that uses a
// variable where no column reference may stand), and the binding plans
// one request at a time from then on.
type planBatch struct {
	once    sync.Once
	bp      *batchPlan
	mu      sync.Mutex
	refused bool
}

// planBatchRows bounds the rows one batch plan statement may return: a
// batch of bundles is split so that each statement's requests, each at its
// own row limit, stay within it.
const planBatchRows = 8192

// ResolveAll plans the requests ms of the binding in one statement and one
// round trip, for [core.Resources.AuthorizeAll] (it makes the binding a
// core.Resources.AuthorizeAll's ResolveAll): plans[i] and errs[i] answer ms[i] as Resolve would.
// The plan statement runs once per request inside one statement (LATERAL
// over the requests' variables), each request bounded by MaxPlanItems (a
// binding of one item by 2 rows, enough to tell a plan of several rows,
// which fails as it does for Resolve), and one statement by planBatchRows
// rows: a batch of bundles larger than that is several statements. A plan
// statement that does not prepare in that form is planned one request at a
// time instead.
func (sb *sqlBinding) ResolveAll(ctx context.Context, ms []core.ResourceMatch) ([]core.ResourceReadPlan, []error) {
	limit := sb.src.s.maxItems + 1
	if !sb.bundle {
		limit = min(limit, 2)
	}
	per := max(1, planBatchRows/limit)
	if len(ms) <= per {
		return sb.resolveBatch(ctx, ms, limit)
	}
	plans, errs := make([]core.ResourceReadPlan, 0, len(ms)), make([]error, 0, len(ms))
	for chunk := range slices.Chunk(ms, per) {
		p, e := sb.resolveBatch(ctx, chunk, limit)
		plans, errs = append(plans, p...), append(errs, e...)
	}
	return plans, errs
}

// resolveBatch is ResolveAll for at most planBatchRows/limit requests, each
// planned with at most limit rows.
func (sb *sqlBinding) resolveBatch(ctx context.Context, ms []core.ResourceMatch, limit int) ([]core.ResourceReadPlan, []error) {
	plans, errs := make([]core.ResourceReadPlan, len(ms)), make([]error, len(ms))
	fail := func(err error) ([]core.ResourceReadPlan, []error) {
		for i := range errs {
			errs[i] = err
		}
		return plans, errs
	}
	one := func() ([]core.ResourceReadPlan, []error) {
		for i, m := range ms {
			plans[i], errs[i] = sb.Resolve(ctx, m)
		}
		return plans, errs
	}
	if len(ms) == 0 {
		return plans, errs
	}
	p, err := sb.src.serve(ctx, sb.plan)
	if err != nil {
		return fail(err)
	}
	bs := &sb.batch
	bs.once.Do(func() { bs.bp, _ = buildBatchPlan(sb.plan.named, p.cols) })
	bs.mu.Lock()
	refused := bs.refused || bs.bp == nil
	bs.mu.Unlock()
	if refused || len(ms) == 1 {
		return one()
	}
	bp := bs.bp
	args := make([]any, bp.limit, bp.limit+1)
	for k, v := range bp.vars {
		col := make([]*string, len(ms))
		for i, m := range ms {
			if s, ok := m.Var(v); ok {
				col[i] = &s
			}
		}
		args[k] = col
	}
	if bp.principal > 0 {
		pr, err := sb.src.s.principal(ctx)
		if err != nil {
			return fail(err)
		}
		args[bp.principal-1] = pr
	}
	args[bp.limit-1] = limit
	if len(bp.vars) == 0 {
		args = append(args, len(ms))
	}
	byReq := make([][]row, len(ms))
	_, err = sb.src.queryRaw(ctx, bp.sql, args, func(rows pgx.Rows) (row, error) {
		var ord int64
		var n int64
		dest := append([]any{&ord}, scanTargets(p.cols)...)
		dest = append(dest, &n)
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if ord < 1 || ord > int64(len(ms)) {
			return nil, errors.New("postgres: the batch plan statement returned a row of no request")
		}
		r := newRow(p.cols, dest[1:len(dest)-1])
		byReq[ord-1] = append(byReq[ord-1], r)
		return nil, nil
	})
	var pe *pgconn.PgError
	switch {
	case err != nil && errors.As(err, &pe) && pe.Code != "42501" && (strings.HasPrefix(pe.Code, "42") || strings.HasPrefix(pe.Code, "0A")):
		// The batch form does not prepare (a syntax or semantic error of
		// the rewritten statement): plan one at a time, now and later.
		bs.mu.Lock()
		bs.refused = true
		bs.mu.Unlock()
		return one()
	case err != nil:
		return fail(err)
	}
	for i, m := range ms {
		plans[i], errs[i] = sb.planOf(m, p, byReq[i])
	}
	return plans, errs
}
