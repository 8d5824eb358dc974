package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"go.phpboyscout.uk/mcp/resources/core"
)

// decideColumns are the columns a policy statement may return.
var decideColumns = []column{
	{"key", colAny, true}, {"visible", colBool, true}, {"read", colBool, true},
	{"discover", colBool, false}, {"disclose", colBool, false},
}

// errPolicyHidden is the private cause when the policy statement hides or
// denies a target.
var errPolicyHidden = errors.New("postgres: the policy statement does not let the principal read the item")

// Policy returns the [core.ResourcePolicy] that one statement defines: given
// $keys (text[]), the keys of any number of items planned by this source's
// bindings, and optionally $binding (the name of the definition the pass
// reads; NULL when asked about one target), $captures (the request's decoded
// captures as a JSON object, such as {"tenant": "acme"} for
// doc://tenants/%61cme/... and {} for a concrete URI: read one with
// ($captures::jsonb ->> 'tenant'); NULL when a gateway asks about one target
// outside a pass) and $principal, it returns one row per
// key it decides, with columns
//
//	key       (any type, required)  one of $keys
//	visible   (boolean, required)   the item is in the caller's selection
//	read      (boolean, required)   the caller may read the visible item
//	discover  (boolean)             false hides the item and, for the requested item, denies the whole read
//	disclose  (boolean)             issues about the item may carry its URI
//
// A key the statement returns no row for is hidden; a key with several rows
// takes the most restrictive answer. An object item is decided by the key
// of the row that references it. A target that this source did not plan
// (an object of a key family, a row of another database) is decided by its
// URI as its key, so one statement can decide a whole plan across stores;
// the requested target of a bundle is visible and readable (its items are
// decided one by one). Row-level security applies to the statement as to
// every other.
//
// Decide answers a whole plan with one statement in one round trip, before
// the body reads and again for the recheck; before the reads it needs no
// statement at all for targets whose plan statement returned the answer
// itself (the visible and read columns of [SQLBinding]). The policy's Key
// identifies it: when the gateway serves a binding of this source under
// it (core.ReadRequest.Policy), the binding's reads fold the recheck into
// their bodies statement, evaluated in the same snapshot as the bodies,
// and return its answer naming the policy (core.ReadResult.Decision), so
// that the recheck asks only about what is left (an object item); under
// any other policy they fold nothing. The fold needs a statement without
// $captures, which a reader is not given. Discover allows every definition to a caller with a valid principal. The statement
// is checked by [Source.Check] with the source's other statements. Errors
// are *core.ConfigError values.
//
// For hosts whose row-level security already decides everything, see
// [DatabaseDecides].
func (src *Source) Policy(decide string) (core.ResourcePolicy, error) {
	path := core.ConfigPath{Source: src.name, Field: "Decide"}
	fail := func(reason string, err error) error {
		return path.Reject(reason, err)
	}
	named, err := parseNamed(decide, func(n string) string {
		if n == "keys" {
			return "text[]"
		}
		return "text"
	}, func(n string) bool { return n == "keys" || n == "principal" || n == "binding" || n == "captures" },
		"a policy statement takes $keys, $binding, $captures and $principal")
	if err != nil {
		return core.ResourcePolicy{}, fail(err.Error(), err)
	}
	if named.paramIndex("keys") == 0 {
		return core.ResourcePolicy{}, fail("must use $keys: decide the keys it is given", nil)
	}
	st := &statement{kind: "decide", path: path, named: named}
	st.prepare = func(desc *pgconn.StatementDescription) (*prepared, error) {
		return prepareSelect(st, desc, decideColumns, nil, func(cols string, _ int) string {
			return "SELECT " + cols + " FROM (" + st.named.SQL + "\n) AS q"
		})
	}
	src.add(st)
	p := &sqlPolicy{src: src, st: st}
	src.mu.Lock()
	src.policies = append(src.policies, p)
	for _, sb := range src.bodied {
		src.fold(sb, p)
	}
	src.mu.Unlock()
	return core.ResourcePolicy{
		Discover: p.discover,
		Decide:   p.decide,
		Key:      func(core.ResourceDefinition) any { return p },
	}, nil
}

type sqlPolicy struct {
	src *Source
	st  *statement
}

// flags is one key's answer.
type flags struct{ discover, visible, read, disclose bool }

// decision is f as the policy's answer for an item: visible only where it
// is discoverable too.
func (f flags) decision() core.TargetDecision {
	return core.TargetDecision{Visibility: core.Visibility{Visible: f.visible && f.discover, DiscloseIssueURI: f.disclose}, Read: f.read}
}

func (p *sqlPolicy) discover(ctx context.Context, _ core.ResourceDefinition) error {
	_, err := p.src.s.principal(ctx)
	return err
}

// ask runs the statement once for keys of the definition named binding
// with the request's decoded captures ("" binds NULL to either).
func (p *sqlPolicy) ask(ctx context.Context, keys []string, binding, captures string) (map[string]flags, error) {
	prep, err := p.src.serve(ctx, p.st)
	if err != nil {
		return nil, err
	}
	given := map[string]string{}
	if binding != "" {
		given["binding"] = binding
	}
	if captures != "" {
		given["captures"] = captures
	}
	vals, err := p.src.values(ctx, p.st.named, given)
	if err != nil {
		return nil, err
	}
	if _, ok := vals["keys"]; !ok {
		vals["keys"] = keys
	}
	rows, err := p.src.query(ctx, prep, p.st.named.args(vals))
	if err != nil {
		return nil, err
	}
	out := make(map[string]flags, len(keys))
	seen := map[string]bool{}
	for _, r := range rows {
		key, ok := r.str("key")
		if !ok {
			continue
		}
		f := flags{discover: true}
		f.visible, _ = r.bool("visible")
		f.read, _ = r.bool("read")
		if d, ok := r.bool("discover"); ok {
			f.discover = d
		}
		f.disclose, _ = r.bool("disclose")
		if seen[key] {
			old := out[key]
			f = flags{discover: f.discover && old.discover, visible: f.visible && old.visible,
				read: f.read && old.read, disclose: f.disclose && old.disclose}
		}
		seen[key] = true
		out[key] = f
	}
	return out, nil
}

// keyOf returns the policy key of t: its row's key for a target of this
// source, its URI for any other; bundle is true for the requested target of
// a bundle of this source, and planned is the answer t's plan statement
// read, if it had visible and read columns.
func (p *sqlPolicy) keyOf(t core.ResourceTarget) (key string, bundle bool, planned *grantFlags) {
	r, ok := parseSQLRef(t)
	if !ok || r.Source != p.src.name {
		return t.URI(), false, nil
	}
	if r.Kind == refBundle {
		return "", true, nil
	}
	return r.Key, false, r.Grants
}

// decide answers a pass. Before the reads, a target whose plan read the
// policy's answer is decided from it, so a plan whose statements all fold
// the answer in costs no statement here; every other key, and every key of
// the recheck, is decided by the decide statement, all in one round trip.
func (p *sqlPolicy) decide(ctx context.Context, pass core.PolicyPass) ([]core.TargetDecision, error) {
	if err := p.src.s.brokenErr(); err != nil {
		return nil, err // not even from the plans' own answers while the proof is broken
	}
	useplanned := pass.Stage == core.PassBeforeReads
	if pass.Stage == core.PassRecheck {
		ctx = recheckContext(ctx)
	}
	type target struct {
		key     string
		bundle  bool
		planned *grantFlags
	}
	ts := make([]target, len(pass.Targets)) // each target's private data parsed once
	keys := make([]string, 0, len(pass.Targets))
	seen := map[string]bool{}
	for i, t := range pass.Targets {
		k, bundle, planned := p.keyOf(t)
		ts[i] = target{k, bundle, planned}
		if bundle || (useplanned && planned != nil) || seen[k] {
			continue
		}
		seen[k] = true
		keys = append(keys, k)
	}
	var answers map[string]flags
	if len(keys) > 0 {
		var err error
		captures, err := json.Marshal(pass.Captures)
		if err != nil {
			return nil, err
		}
		if answers, err = p.ask(ctx, keys, pass.Definition.Name, string(captures)); err != nil {
			return nil, err
		}
	} else if err := p.discover(ctx, pass.Definition); err != nil {
		return nil, err
	}
	out := make([]core.TargetDecision, len(pass.Targets))
	for i, t := range ts {
		if t.bundle {
			out[i] = core.TargetDecision{Visibility: core.Visibility{Visible: true}, Read: true}
			continue
		}
		f := answers[t.key]
		if useplanned && t.planned != nil {
			f = t.planned.flags()
		}
		if i == 0 && !f.discover {
			return nil, core.NewFailure(core.FailureUnavailable, fmt.Errorf("%w: not discoverable", errPolicyHidden))
		}
		out[i] = f.decision()
	}
	return out, nil
}

// DatabaseDecides returns the policy of a host whose database is the only
// gate: it lets every caller discover, see and read everything, and leaves
// access to row-level security (or the host's own predicate on
// current_setting('mcp.principal', true)) in the plan and body statements of
// its [SQLBinding] values, and to the object store's own access control for
// referenced objects.
//
// That is sound because a row the principal may not see is, to the
// statements, a row that does not exist: a plan statement that returns no
// row is unavailable, a body statement that returns no row is unavailable,
// and both answer exactly as for a key that was never stored, so a refused
// caller learns nothing a missing one would not. What the mode gives up is
// an answer before the plan: every request runs its plan statement, and
// items are never "visible but denied" (an omission the report counts),
// only present or absent.
func DatabaseDecides() core.ResourcePolicy {
	return core.ResourcePolicy{
		Discover: func(context.Context, core.ResourceDefinition) error { return nil },
		Decide: func(_ context.Context, pass core.PolicyPass) ([]core.TargetDecision, error) {
			out := make([]core.TargetDecision, len(pass.Targets))
			for i := range out {
				out[i] = core.TargetDecision{Visibility: core.Visibility{Visible: true}, Read: true}
			}
			return out, nil
		},
	}
}
