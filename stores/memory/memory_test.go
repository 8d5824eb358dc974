package memory_test

import (
	"context"
	"errors"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/memory"
)

func put(t *testing.T, st *memory.Store, key, body string, grants map[string]memory.Access) {
	t.Helper()
	if _, err := st.Put(key, memory.Item{MIMEType: "text/plain", Text: true, Body: []byte(body)}); err != nil {
		t.Fatal(err)
	}
	for p, a := range grants {
		st.Grant(key, p, a)
	}
}

func as(p string) context.Context {
	return core.WithCaller(context.Background(), core.Caller{Principal: p})
}

func TestPutRejectsTextThatIsNotUTF8AndBadMIMETypes(t *testing.T) {
	st := memory.New(nil)
	for name, it := range map[string]memory.Item{
		"invalid UTF-8 text": {MIMEType: "text/plain", Text: true, Body: []byte{0xff, 0xfe}},
		"empty MIME type":    {MIMEType: "", Body: []byte("x")},
		"MIME without slash": {MIMEType: "text", Body: []byte("x")},
		"MIME with newline":  {MIMEType: "text/plain\n", Body: []byte("x")},
	} {
		if _, err := st.Put("k", it); err == nil {
			t.Errorf("%s: Put accepted it", name)
		}
	}
	if _, err := st.Put("k", memory.Item{MIMEType: "application/octet-stream", Body: []byte{0xff}}); err != nil {
		t.Errorf("binary with invalid UTF-8 must be accepted: %v", err)
	}
}

// A key deleted and put again, even with the same bytes, is a new version:
// a plan of the old item must not read the new one.
func TestVersionIsNeverReusedAfterDelete(t *testing.T) {
	st := memory.New(nil)
	put(t, st, "k", "same", map[string]memory.Access{"alice": {Read: true}})
	target, err := st.Target(as("alice"), "mem://k", "k")
	if err != nil {
		t.Fatal(err)
	}
	st.Delete("k")
	put(t, st, "k", "same", map[string]memory.Access{"alice": {Read: true}})
	if _, err := st.Read(as("alice"), whole(target)); !errors.Is(err, memory.ErrChanged) {
		t.Fatalf("read of a replaced item: %v, want ErrChanged", err)
	}
}

func TestPutKeepsGrantsOfAnExistingKey(t *testing.T) {
	st := memory.New(nil)
	put(t, st, "k", "one", map[string]memory.Access{"alice": {Read: true}})
	put(t, st, "k", "two", nil)
	target, err := st.Target(as("alice"), "mem://k", "k")
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.Read(as("alice"), whole(target))
	if err != nil || p.Text() != "two" {
		t.Fatalf("got %q, %v; want the new version under the kept grant", p.Text(), err)
	}
}

func TestNoPrincipalIsUnavailable(t *testing.T) {
	st := memory.New(nil)
	put(t, st, "k", "body", map[string]memory.Access{"alice": {Read: true}})
	target, err := st.Target(as("alice"), "mem://k", "k")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := st.Target(ctx, "mem://k", "k"); core.KindOf(err) != core.FailureUnavailable {
		t.Errorf("Target without a principal: %v", err)
	}
	if _, err := st.Read(ctx, whole(target)); core.KindOf(err) != core.FailureUnavailable || !errors.Is(err, noPrincipal()) {
		t.Errorf("Read without a principal: %v", err)
	}
	if err := st.Policy().Discover(ctx, core.ResourceDefinition{}); core.KindOf(err) != core.FailureUnavailable {
		t.Errorf("Discover without a principal: %v", err)
	}
}

func TestPrincipalComesFromTheHostFunction(t *testing.T) {
	type key struct{}
	st := memory.New(&memory.Options{Caller: func(ctx context.Context) (core.Caller, error) {
		if p, ok := ctx.Value(key{}).(string); ok {
			return core.Caller{Principal: p}, nil
		}
		return core.Caller{}, core.NewFailure(core.FailureUnavailable, errors.New("no session"))
	}})
	put(t, st, "k", "body", map[string]memory.Access{"alice": {Read: true}})
	ctx := context.WithValue(context.Background(), key{}, "alice")
	target, err := st.Target(ctx, "mem://k", "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Read(ctx, whole(target)); err != nil {
		t.Fatalf("read as the host's principal: %v", err)
	}
	if _, err := st.Read(as("alice"), whole(target)); core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("core.WithCaller must not count when the host supplies its own function: %v", err)
	}
}

func TestReadRefusesATargetItDidNotPlan(t *testing.T) {
	st := memory.New(nil)
	for _, authz := range []string{"", `{"store":"other","key":"k","version":1}`, `[1]`} {
		var raw []byte
		if authz != "" {
			raw = []byte(authz)
		}
		target, err := core.NewResourceTarget("mem://k", "item", raw)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Read(as("alice"), whole(target)); !errors.Is(err, memory.ErrNotPlanned) {
			t.Errorf("authz %q: %v, want ErrNotPlanned", authz, err)
		}
	}
}

// The grants policy through a gateway: no grant hides an item, a grant
// without Read leaves it visible but unavailable, DiscloseURI names it.
// TestPolicyFollowsGrantsThroughTheGateway reads through the store's policy
// with Decide (one call per pass) and without it (per-target callbacks).
func TestPolicyFollowsGrantsThroughTheGateway(t *testing.T) {
	for _, batch := range []bool{true, false} {
		policy := func(st *memory.Store) core.ResourcePolicy {
			if !batch {
				return perTarget(st.Policy())
			}
			return st.Policy()
		}
		t.Run(map[bool]string{true: "decide", false: "per-target"}[batch], func(t *testing.T) { testPolicyFollowsGrants(t, policy) })
	}
}

func testPolicyFollowsGrants(t *testing.T, policy func(*memory.Store) core.ResourcePolicy) {
	st := memory.New(nil)
	put(t, st, "open", "open body", map[string]memory.Access{"alice": {Read: true}})
	put(t, st, "seen", "seen body", map[string]memory.Access{"alice": {DiscloseURI: true}})
	put(t, st, "hidden", "hidden body", map[string]memory.Access{"bob": {Read: true}})
	put(t, st, "quiet", "quiet body", map[string]memory.Access{"alice": {}})
	bundle := st.Binding(core.ResourceDefinition{URI: "mem://bundle", Name: "bundle"}, func(core.ResourceMatch) ([]memory.Ref, error) {
		return []memory.Ref{{"mem://open", "open"}, {"mem://seen", "seen"}, {"mem://hidden", "hidden"}, {"mem://quiet", "quiet"}, {"mem://missing", "missing"}}, nil
	})
	single := st.Binding(core.ResourceDefinition{URITemplate: "mem://one/{key}", Name: "one"}, memory.KeyFromVar("key"))
	res, err := core.NewResources([]core.ResourceBinding{bundle, single}, policy(st))
	if err != nil {
		t.Fatal(err)
	}

	got, err := res.Read(as("alice"), "mem://bundle")
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, it := range got.Items() {
		uris = append(uris, it.URI())
	}
	if !got.Partial() || len(uris) != 2 || uris[1] != "mem://open" {
		t.Fatalf("items %q partial=%v; want the warning then mem://open", uris, got.Partial())
	}
	issues := got.Issues()
	if len(issues) != 2 || issues[0].Code() != core.IssueUnavailable || issues[0].ResourceURI() != "mem://seen" ||
		issues[1].Code() != core.IssueUnavailable || issues[1].ResourceURI() != "" {
		t.Fatalf("issues %+v; want unavailable for seen (disclosed) and quiet (not disclosed), nothing for hidden or missing", issues)
	}

	for _, uri := range []string{"mem://one/hidden", "mem://one/missing", "mem://one/seen"} {
		if _, err := res.Read(as("alice"), uri); core.KindOf(err) != core.FailureUnavailable || err.Error() != "resource unavailable" {
			t.Errorf("%s: %v, want the one public unavailable failure", uri, err)
		}
	}
	if got, err := res.Read(as("bob"), "mem://one/hidden"); err != nil || got.Items()[0].Text() != "hidden body" {
		t.Errorf("bob reading his item: %v", err)
	}
}

// Revoking a grant takes effect on the very next read of a plan made before.
func TestRevokeTakesEffectOnTheNextRead(t *testing.T) {
	st := memory.New(nil)
	put(t, st, "k", "body", map[string]memory.Access{"alice": {Read: true}})
	target, err := st.Target(as("alice"), "mem://k", "k")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		st.Revoke("k", "alice")
		if _, err := st.Read(as("alice"), whole(target)); core.KindOf(err) != core.FailureUnavailable {
			t.Fatalf("cycle %d: read after revoke: %v", i, err)
		}
		st.Grant("k", "alice", memory.Access{Read: true})
		if _, err := st.Read(as("alice"), whole(target)); err != nil {
			t.Fatalf("cycle %d: read after grant: %v", i, err)
		}
	}
}

func TestKeyFromVarNeedsTheVariable(t *testing.T) {
	st := memory.New(nil)
	put(t, st, "k", "body", map[string]memory.Access{"alice": {Read: true}})
	b := st.Binding(core.ResourceDefinition{URITemplate: "mem://x/{id}", Name: "x"}, memory.KeyFromVar("key"))
	res, err := core.NewResources([]core.ResourceBinding{b}, st.Policy())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Read(as("alice"), "mem://x/k"); core.KindOf(err) != core.FailureInvalidPlan {
		t.Fatalf("a template without the key variable: %v, want an invalid plan", err)
	}
}

func TestBodyReadsCountsReadsOnly(t *testing.T) {
	st := memory.New(nil)
	put(t, st, "k", "body", map[string]memory.Access{"alice": {Read: true}})
	target, _ := st.Target(as("alice"), "mem://k", "k")
	st.Target(as("alice"), "mem://k", "k")
	if n := st.BodyReads(); n != 0 {
		t.Fatalf("planning counted %d body reads", n)
	}
	st.Read(as("alice"), whole(target))
	st.Read(as("bob"), whole(target)) // denied: no body handed out
	if n := st.BodyReads(); n != 1 {
		t.Fatalf("BodyReads %d, want 1", n)
	}
}

// TestDecideAnswersEachTargetAsVisibilityAndRead: for every kind of
// target (granted, disclosed, ungranted, another principal's, missing, not
// the store's) Decide's answer is what Visibility and Read say of it, in
// pass order; without a principal the whole pass is Unavailable.
func TestDecideAnswersEachTarget(t *testing.T) {
	st := memory.New(nil)
	put(t, st, "open", "b", map[string]memory.Access{"alice": {Read: true, DiscloseURI: true}})
	put(t, st, "seen", "b", map[string]memory.Access{"alice": {DiscloseURI: true}})
	put(t, st, "quiet", "b", map[string]memory.Access{"alice": {}})
	put(t, st, "bobs", "b", map[string]memory.Access{"bob": {Read: true}})
	put(t, st, "gone", "b", map[string]memory.Access{"alice": {Read: true}})
	var targets []core.ResourceTarget
	for _, k := range []string{"open", "seen", "quiet", "bobs", "gone"} {
		st.Grant(k, "planner", memory.Access{})
		tg, err := st.Target(as("planner"), "mem://"+k, k)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, tg)
	}
	st.Delete("gone")
	foreign, _ := core.NewResourceTarget("mem://bundle", "bundle", nil)
	targets = append(targets, foreign)
	p := st.Policy()
	ctx := as("alice")
	ds, err := p.Decide(ctx, core.PolicyPass{Stage: core.PassRecheck, Targets: targets})
	if err != nil || len(ds) != len(targets) {
		t.Fatalf("Decide: %d decisions, %v", len(ds), err)
	}
	want := []core.TargetDecision{
		{Visibility: core.Visibility{Visible: true, DiscloseIssueURI: true}, Read: true},
		{Visibility: core.Visibility{Visible: true, DiscloseIssueURI: true}},
		{Visibility: core.Visibility{Visible: true}},
		{}, {},
		{Visibility: core.Visibility{Visible: true}, Read: true},
	}
	for i, tg := range targets {
		got := ds[i]
		got.Read = got.Visible && got.Read
		if got != want[i] {
			t.Errorf("%s: Decide %+v, want %+v", tg.URI(), ds[i], want[i])
		}
	}
	if _, err := p.Decide(context.Background(), core.PolicyPass{Stage: core.PassBeforeReads, Targets: targets}); core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("no principal: %v, want Unavailable", err)
	}
}

// whole asks for target with the default item limit.
func whole(target core.ResourceTarget) core.ReadItem {
	return core.ReadItem{Target: target, Limit: core.DefaultResourceLimits().MaxItemBytes}
}

// noPrincipal is the private cause of the error core.CallerFrom returns for
// a context that carries no principal.
func noPrincipal() error {
	_, err := core.CallerFrom(context.Background())
	return errors.Unwrap(err)
}
