package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/core"
)

// grantAggregates are the policy's flags over the principal's own grants g
// that cover one key: visible (discover or read), read, disclose. The plan
// statements and the policy's own statement use these same expressions.
const grantAggregates = `coalesce(bool_or(g.can_discover OR g.can_read), false),
	coalesce(bool_or(g.can_read), false),
	coalesce(bool_or(g.disclose_issue_uri), false)`

// grantsCovering restricts g to the principal's grants on project P or,
// when asset A is not NULL, on asset A of it (P and A are SQL expressions).
func grantsCovering(p, a string) string {
	return `g.principal = mcpres.current_principal() AND g.project_id = ` + p +
		` AND (` + a + ` IS NULL OR g.asset_id IS NULL OR g.asset_id = ` + a + `)`
}

// sqlGrantPass answers a whole policy pass in one statement: the flags of
// every key (project $1[i], asset $2[i] or NULL for the project itself),
// in key order, one row per key.
var sqlGrantPass = `SELECT ` + grantAggregates + `
FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k(project, asset, i)
LEFT JOIN mcpres.grants g ON ` + grantsCovering("k.project", "k.asset") + `
GROUP BY k.i ORDER BY k.i`

// grantFlags are what the policy decides from: whether the principal's
// grants that cover a key let it discover (visible) or read it, and
// whether they disclose its URI in issues.
type grantFlags struct {
	Visible  bool `json:"v,omitempty"`
	Read     bool `json:"r,omitempty"`
	Disclose bool `json:"d,omitempty"`
}

// errGrantRows is the cause when the grants statement returns another
// number of rows than it was given keys.
var errGrantRows = errors.New("postgres: the grants statement returned a row per key")

// grantKey is what a grant covers: a project (isAsset false) or an asset of
// it.
type grantKey struct {
	project string
	asset   string
	isAsset bool
}

// decision is the policy's answer for a target of kind kind whose key has
// flags f: a project bundle may be read whenever it is visible.
func (f grantFlags) decision(kind string) core.TargetDecision {
	read := f.Read
	if kind == ReprProject {
		read = f.Visible
	}
	return core.TargetDecision{Visibility: core.Visibility{Visible: f.Visible, DiscloseIssueURI: f.Disclose}, Read: read}
}

// everything is the index's answer: visible, readable and disclosed to any
// caller with a valid principal.
var everything = core.TargetDecision{Visibility: core.Visibility{Visible: true, DiscloseIssueURI: true}, Read: true}

// queryGrants returns the flags of every key, in order, in one round trip.
func (s *Store) queryGrants(ctx context.Context, keys []grantKey) ([]grantFlags, error) {
	projects := make([]string, len(keys))
	assets := make([]*string, len(keys))
	for i := range keys {
		projects[i] = keys[i].project
		if keys[i].isAsset {
			assets[i] = &keys[i].asset
		}
	}
	out := make([]grantFlags, 0, len(keys))
	err := s.s.query(ctx, sqlGrantPass, []any{projects, assets}, func(rows pgx.Rows) error {
		var f grantFlags
		if err := rows.Scan(&f.Visible, &f.Read, &f.Disclose); err != nil {
			return err
		}
		out = append(out, f)
		return nil
	})
	if err == nil && len(out) != len(keys) {
		err = errGrantRows
	}
	return out, err
}

// Policy returns a core.ResourcePolicy backed by the grants table of the
// reference schema, for hosts that keep grants in PostgreSQL.
//
//   - Discover allows every definition to a caller with a valid principal,
//     without a round trip.
//   - Visibility: the index is visible; a project bundle is visible when
//     some grant of the caller in the project lets it discover or read; an
//     asset's fields, body and object are visible when a grant on the asset
//     or its project lets it discover or read, and issues disclose the URI
//     when such a grant sets disclose_issue_uri.
//   - Read: the index and a visible project bundle may be read; an asset's
//     representations (fields, body, joined object) need a grant with
//     can_read.
//   - Decide answers a whole pass by the same rules: the decision before the
//     reads from the grant flags that the store's own plan statements read
//     in the planning transaction and carried in each target's private
//     authorization data (no round trip when every target has them), the
//     recheck in one statement for all targets, whatever their number, after
//     checking the principal as Discover does.
//
// Visibility and Read are one read-only transaction each as the principal
// of ctx. Targets this store did not plan are hidden. The readers enforce
// the same grants again in their own statements, so a grant revoked after
// these checks still withholds the content. A joined object is read by the
// object store, which enforces its pinned identity and its own access; its
// grant is checked here, before and again after the reads.
func (s *Store) Policy() core.ResourcePolicy {
	one := func(ctx context.Context, t core.ResourceTarget) (core.TargetDecision, error) {
		ds, err := s.decide(ctx, []core.ResourceTarget{t}, false)
		if err != nil {
			return core.TargetDecision{}, err
		}
		return ds[0], nil
	}
	return core.ResourcePolicy{
		Discover: func(ctx context.Context, d core.ResourceDescription) error {
			_, err := s.principal(ctx)
			return err
		},
		Visibility: func(ctx context.Context, t core.ResourceTarget) (core.Visibility, error) {
			d, err := one(ctx, t)
			if core.KindOf(err) == core.FailureUnavailable {
				return core.Visibility{}, nil
			}
			return d.Visibility, err
		},
		Read: func(ctx context.Context, t core.ResourceTarget) error {
			d, err := one(ctx, t)
			if err == nil && !d.Read {
				err = core.Unavailable(ErrNotVisible)
			}
			return err
		},
		Decide: func(ctx context.Context, pass core.PolicyPass) ([]core.TargetDecision, error) {
			if _, err := s.principal(ctx); err != nil {
				return nil, err
			}
			return s.decide(ctx, pass.Targets, pass.Stage == core.PassBeforeReads)
		},
	}
}

// decide decides targets in order. With planned, a target that carries the
// grant flags of its plan is decided from them; every other target of the
// store is decided from the grants read now, all in one statement (none
// when no target needs it). Targets the store did not plan are hidden.
func (s *Store) decide(ctx context.Context, targets []core.ResourceTarget, planned bool) ([]core.TargetDecision, error) {
	ds := make([]core.TargetDecision, len(targets))
	var keys []grantKey
	var kinds []string
	at := make([]int, len(targets)) // index into keys, or -1: decided
	seen := map[grantKey]int{}
	for i, t := range targets {
		at[i] = -1
		r, err := parseRef(t)
		switch {
		case err != nil:
			continue // not the store's: hidden
		case r.Kind == ReprIndex:
			if _, err := s.principal(ctx); err != nil {
				return nil, err
			}
			ds[i] = everything
			continue
		case planned && r.Grants != nil:
			ds[i] = r.Grants.decision(r.Kind)
			continue
		}
		k := grantKey{project: r.Project, asset: r.Asset, isAsset: r.Kind != ReprProject}
		if !k.isAsset {
			k.asset = ""
		}
		j, ok := seen[k]
		if !ok {
			j = len(keys)
			seen[k] = j
			keys = append(keys, k)
		}
		at[i] = j
		kinds = append(kinds, r.Kind)
	}
	if len(keys) == 0 {
		return ds, nil
	}
	flags, err := s.queryGrants(ctx, keys)
	if err != nil {
		return nil, err
	}
	n := 0
	for i := range targets {
		if at[i] >= 0 {
			ds[i] = flags[at[i]].decision(kinds[n])
			n++
		}
	}
	return ds, nil
}

// principal returns the valid principal of ctx, or an Unavailable error.
func (s *Store) principal(ctx context.Context) (string, error) {
	p, err := s.s.principal(ctx)
	if err != nil {
		return "", err
	}
	if err := CheckPrincipal(p); err != nil {
		return "", core.Unavailable(err)
	}
	return p, nil
}
