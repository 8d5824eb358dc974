package integration

import (
	"context"
	"slices"
	"sync"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
)

// TestPGStoreDecisionOfAnotherPolicyIsRefused proves, with real
// PostgreSQL, that the gateway rechecks by the policy in force, never by
// the store's: the reference grants policy allows alice both bodies of a
// bundle the store reads in one bodies statement, while the host serves
// the bundle under its own policy, which revokes b at the recheck. Served
// as a host would (the store told the host policy's key, or none), the
// store folds no recheck; and with a reader wired wrong (told the grants
// policy's key, so that it folds that policy's recheck into its bodies
// statement and offers its answers), the gateway drops those answers.
// Either way b is revoked and the host policy is asked about it.
func TestPGStoreDecisionOfAnotherPolicyIsRefused(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	d.project(t, "p")
	for _, id := range []string{"a", "b"} {
		d.textAsset(t, "p", id, "body of "+id)
	}
	d.exec(t, `INSERT INTO mcpres.grants (principal, project_id, asset_id, can_discover, can_read, disclose_issue_uri) VALUES
		('alice', 'p', 'a', true, true, true), ('alice', 'p', 'b', true, true, true)`)
	bodies, grants := bodiesBundle(t, newPool(t, d.url, nil), true)
	grantsKey := grants.Key(bodies.Definition)
	for name, c := range map[string]struct {
		key   any  // the host policy's Key; nil: none
		wrong bool // the reader is told the grants policy's key
	}{
		"a host policy without a key":             {},
		"a host policy with its own key":          {key: "host"},
		"a reader told the store's policy":        {wrong: true},
		"a keyed host, a reader told the store's": {key: "host", wrong: true},
	} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var asked []string // the items the host policy's recheck asked about
			host := core.ResourcePolicy{
				Discover: grants.Discover,
				Decide: func(ctx context.Context, pass core.PolicyPass) ([]core.TargetDecision, error) {
					ds, err := grants.Decide(ctx, pass)
					if err != nil || pass.Stage != core.PassRecheck {
						return ds, err
					}
					for i, tg := range pass.Targets[1:] {
						mu.Lock()
						asked = append(asked, tg.URI())
						mu.Unlock()
						if tg.URI() == "asset://project/p/asset/b/body" {
							ds[i+1].Read = false // revoked by the policy in force
						}
					}
					return ds, nil
				},
			}
			if c.key != nil {
				host.Key = func(core.ResourceDefinition) any { return c.key }
			}
			b := bodies
			var offered int // decisions the store offered, naming the grants policy
			if c.wrong {
				next := bodies.Reader // a native batch reader: the wrapper sees each batch whole
				b.Reader = readerFunc(func(ctx context.Context, req core.ReadRequest) ([]core.ReadResult, error) {
					req.Policy = grantsKey
					out, err := next.Read(ctx, req)
					for _, o := range out {
						if o.Decision != nil && o.Decision.Policy == grantsKey && o.Decision.Read {
							offered++
						}
					}
					return out, err
				})
			}
			r := pgGateway(t, []core.ResourceBinding{b}, host)
			res, err := r.Read(as(t.Context(), "alice"), "body://project/p")
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			items := itemTexts(res)
			if _, ok := items["asset://project/p/asset/b/body"]; ok || items["asset://project/p/asset/a/body"] != "body of a" || !res.Partial() {
				t.Fatalf("items %v partial %v: want a, and b revoked by the policy in force", items, res.Partial())
			}
			if is := res.Issues(); len(is) != 1 || is[0].Code() != core.IssueUnavailable || is[0].ResourceURI() != "asset://project/p/asset/b/body" {
				t.Fatalf("issues %+v: want b revoked", is)
			}
			if want := []string{"asset://project/p/asset/a/body", "asset://project/p/asset/b/body"}; !slices.Equal(asked, want) {
				t.Fatalf("the host policy's recheck asked about %v, want %v", asked, want)
			}
			if c.wrong && offered != 2 {
				t.Fatalf("the store offered %d readable decisions naming its policy, want 2 (the refusal is untested)", offered)
			}
		})
	}
}

// readerFunc is a func as a core.Reader.
type readerFunc func(ctx context.Context, req core.ReadRequest) ([]core.ReadResult, error)

// Read calls f.
func (f readerFunc) Read(ctx context.Context, req core.ReadRequest) ([]core.ReadResult, error) {
	return f(ctx, req)
}
