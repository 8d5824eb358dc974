package integration

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// principalClients returns an Options.Client that signs each principal's
// requests with that principal's own versitygw user, and denies principals
// without one.
func principalClients(t *testing.T, w *wire, users map[string]harness.S3Env) func(context.Context, string) (*s3.Client, error) {
	clients := map[string]*s3.Client{}
	for principal, env := range users {
		clients[principal] = s3Client(t, env, w)
	}
	return func(_ context.Context, principal string) (*s3.Client, error) {
		c, ok := clients[principal]
		if !ok {
			return nil, core.NewFailure(core.FailureUnavailable, errors.New("no S3 user for this principal"))
		}
		return c, nil
	}
}

// TestS3StoreAccessIsEnforcedByS3PerPrincipal proves that S3 decides
// access with each principal's own credentials under a bucket policy: a
// principal without access gets unavailable (at planning, whose HEAD S3
// refuses), a principal the host has no credentials for gets unavailable,
// and revoking a principal's grant between plan and read makes that item
// unavailable on that very read while its sibling survives; restoring the
// grant restores the item.
func TestS3StoreAccessIsEnforcedByS3PerPrincipal(t *testing.T) {
	t.Parallel()
	env := harness.S3Users(t)
	alice := env.NewUser(t, uniqueUser(t, "alice"))
	bob := env.NewUser(t, uniqueUser(t, "bob"))
	root := s3Client(t, env, nil)
	putObject(t, root, env.Bucket, "docs/a.txt", "text/plain", []byte("a for alice"))
	putObject(t, root, env.Bucket, "docs/b.txt", "text/plain", []byte("b for alice"))
	grantBoth := map[string][]string{alice.AccessKey: {"docs/a.txt", "docs/b.txt"}}
	if err := setGrants(t.Context(), root, env.Bucket, grantBoth); err != nil {
		t.Fatalf("bucket policy: %v", err)
	}

	w := &wire{}
	store, err := s3store.OpenBucket(t.Context(), root, env.Bucket, &s3store.Options{
		Client: principalClients(t, w, map[string]harness.S3Env{"alice": alice, "bob": bob}),
	})
	if err != nil {
		t.Fatal(err)
	}
	tp := allowTargets()
	var revokeNow, revoked atomic.Bool
	tp.Read = func(ctx context.Context, tg core.ResourceTarget) error {
		if tg.URI() == "s3item://bundle/1" && revokeNow.Load() && revoked.CompareAndSwap(false, true) {
			return setGrants(ctx, root, env.Bucket, map[string][]string{alice.AccessKey: {"docs/a.txt"}})
		}
		return nil
	}
	policy := core.PerTarget(tp)
	res := gateway(t, policy, core.ResourceLimits{}, bundleBinding(store, "s3bundle://test/ab", "docs/a.txt", "docs/b.txt"))
	read := func(ctx context.Context) (*core.ResourceResult, error) { return res.Read(ctx, "s3bundle://test/ab") }

	got, err := read(core.WithCaller(t.Context(), core.Caller{Principal: "alice"}))
	if err != nil || got.Partial() || len(bodies(got)) != 2 {
		t.Fatalf("alice with both grants: %v, %v", bodies(got), err)
	}

	for name, ctx := range map[string]context.Context{
		"bob, a user without a grant":   core.WithCaller(t.Context(), core.Caller{Principal: "bob"}),
		"carol, without an S3 user":     core.WithCaller(t.Context(), core.Caller{Principal: "carol"}),
		"a request without a principal": t.Context(),
	} {
		w.reset()
		if _, err := read(ctx); core.KindOf(err) != core.FailureUnavailable {
			t.Errorf("%s: %v, want unavailable", name, err)
		}
		if w.gets.Load() != 0 {
			t.Errorf("%s: %d GETs, want none after planning was refused", name, w.gets.Load())
		}
	}

	revokeNow.Store(true)
	w.reset()
	got, err = read(core.WithCaller(t.Context(), core.Caller{Principal: "alice"}))
	if err != nil {
		t.Fatalf("alice, b revoked between plan and read: %v", err)
	}
	if !revoked.Load() {
		t.Fatal("the grant was never revoked between plan and read")
	}
	if c := codes(got); len(c) != 1 || c["s3item://bundle/1"] != core.IssueUnavailable {
		t.Fatalf("issues %v, want s3item://bundle/1 unavailable only", c)
	}
	if b := bodies(got); len(b) != 1 || b["s3item://bundle/0"] != "a for alice" {
		t.Fatalf("items %v, want a only", b)
	}
	if g, h := w.gets.Load(), w.heads.Load(); g != 2 || h != 2 {
		t.Fatalf("%d GETs and %d HEADs, want 2 and 2: the revoked item was refused by its own GET", g, h)
	}

	if err := setGrants(t.Context(), root, env.Bucket, grantBoth); err != nil {
		t.Fatal(err)
	}
	revokeNow.Store(false)
	if got, err := read(core.WithCaller(t.Context(), core.Caller{Principal: "alice"})); err != nil || got.Partial() {
		t.Fatalf("alice after the grant was restored: %v, %v", codes(got), err)
	}
}

// TestS3StoreHostCheckRunsImmediatelyBeforeTheGet proves Options.Check sees
// the principal and the planned object, and that its denial refuses the
// read exactly as a missing object is refused (unavailable, at the planning
// HEAD, so no GET is sent and a subscription could not tell it apart).
func TestS3StoreHostCheckRunsImmediatelyBeforeTheGet(t *testing.T) {
	t.Parallel()
	env := harness.S3(t)
	root := s3Client(t, env, nil)
	putObject(t, root, env.Bucket, "docs/a.txt", "text/plain", []byte("a"))
	w := &wire{}
	var seen atomic.Value
	store, err := s3store.OpenBucket(t.Context(), s3Client(t, env, w), env.Bucket, &s3store.Options{
		Check: func(ctx context.Context, principal string, obj s3store.Object) error {
			seen.Store(principal + " " + obj.Key)
			if principal == "mallory" {
				return core.NewFailure(core.FailureUnavailable, errors.New("host says no"))
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	binding, err := store.Binding(core.ResourceDefinition{URITemplate: "s3obj://docs/{name}", Name: "doc"}, "docs/")
	if err != nil {
		t.Fatal(err)
	}
	res := gateway(t, allowAll(), core.ResourceLimits{}, binding)
	if _, err := res.Read(core.WithCaller(t.Context(), core.Caller{Principal: "alice"}), "s3obj://docs/a.txt"); err != nil || seen.Load() != "alice docs/a.txt" {
		t.Fatalf("alice: %v, check saw %v", err, seen.Load())
	}
	w.reset()
	_, missing := res.Read(core.WithCaller(t.Context(), core.Caller{Principal: "mallory"}), "s3obj://docs/never.txt")
	if _, err := res.Read(core.WithCaller(t.Context(), core.Caller{Principal: "mallory"}), "s3obj://docs/a.txt"); core.KindOf(err) != core.FailureUnavailable ||
		err.Error() != missing.Error() || w.gets.Load() != 0 {
		t.Fatalf("mallory: %v after %d GETs, want what a missing object gets (%v) without a GET", err, w.gets.Load(), missing)
	}
}
