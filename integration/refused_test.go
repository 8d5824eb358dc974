package integration

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/stores/memory"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// wireSession serves res through the mcpsdk adapter, with subscriptions
// and completion, to principal over in-memory transports at protocol
// 2025-11-25 (whose resources/subscribe answers synchronously), so that a
// test sees the JSON-RPC errors exactly as a client does.
func wireSession(t *testing.T, res *core.Resources, principal string) *mcp.ClientSession {
	t.Helper()
	server, _ := liveServer(t, res, nil, nil, principal)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).
		Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// afterPlanning wraps a binding's resolver so that, once a plan of a URI
// in hooks succeeded, that URI's hook runs (once) before the gateway
// decides or reads anything: a change between plan and read. The binding's
// completion is kept.
type afterPlanning struct {
	mu    sync.Mutex
	hooks map[string]func()
}

func (a *afterPlanning) wrap(b core.ResourceBinding) core.ResourceBinding {
	inner := b.Resolver
	b.Resolver = core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
		p, err := inner.Resolve(ctx, m)
		a.mu.Lock()
		hook := a.hooks[m.URI()]
		delete(a.hooks, m.URI())
		a.mu.Unlock()
		if err == nil && hook != nil {
			hook()
		}
		return p, err
	})
	return b // b.Complete, if any, is kept
}

// refusalWorld is one store with four identities for one principal:
// "refusedread" (planned, then refused by storage before its body is
// read), "refusedplan" (refused to the principal from the start),
// "deleted" (planned, then deleted before its body is read) and "never"
// (never existed).
type refusalWorld struct {
	res      *core.Resources
	uri      func(id string) string
	complete func(id string) *mcp.CompleteParams
	hooks    *afterPlanning
	refuse   func(t *testing.T) // revokes the principal's access to refusedread
	delete   func(t *testing.T) // deletes deleted
}

var refusalIDs = []string{"refusedread", "refusedplan", "deleted", "never"}

// checkRefusalsLookMissing proves the rule of issue 29 on one store: a
// single read of each of the four identities, a subscribe to it and a
// completion of its id give byte-identical answers, the errors those of a
// missing resource (-32602 "resource unavailable", no data).
func checkRefusalsLookMissing(t *testing.T, w refusalWorld) {
	t.Helper()
	w.hooks.hooks = map[string]func(){
		w.uri("refusedread"): func() { w.refuse(t) },
		w.uri("deleted"):     func() { w.delete(t) },
	}
	cs := wireSession(t, w.res, "alice")
	ctx := t.Context()
	reads, subs, comps := map[string]string{}, map[string]string{}, map[string]string{}
	var never *jsonrpc.Error
	for _, id := range refusalIDs {
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: w.uri(id)})
		never, reads[id] = wireErr(t, err)
		// Subscribe and complete in the state the read left: refused or gone.
		_, subs[id] = wireErr(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: w.uri(id)}))
		c, err := cs.Complete(ctx, w.complete(id))
		if err != nil {
			t.Fatalf("complete %s: %v", id, err)
		}
		b, _ := json.Marshal(c.Completion)
		comps[id] = string(b)
	}
	w.hooks.mu.Lock()
	left := len(w.hooks.hooks)
	w.hooks.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d changes between plan and read never ran: the plan did not see the item", left)
	}
	want := reads["never"] // never is the error of the last read, of "never"
	if never.Message != "resource unavailable" || never.Data != nil {
		t.Fatalf("a never-existing key answers %s, want resource unavailable without data", want)
	}
	for _, id := range refusalIDs {
		if reads[id] != want {
			t.Errorf("read of %s: %s, want %s", id, reads[id], want)
		}
		if subs[id] != want {
			t.Errorf("subscribe to %s: %s, want %s", id, subs[id], want)
		}
		if comps[id] != comps["never"] {
			t.Errorf("completion of %s: %s, want %s", id, comps[id], comps["never"])
		}
	}
	t.Logf("read and subscribe: %s; completion: %s", want, comps["never"])
}

// TestRefusedPlannedDeletedAndMissingIdentitiesLookAlikeOnEveryStore is the
// table of issue 29 over the memory, PostgreSQL and S3 stores, each under a
// gateway policy that lets storage decide: an item refused at read (access
// revoked after planning), refused at plan, deleted between plan and read,
// and never created give byte-identical errors on a single read and on
// subscribe, and identical completions.
func TestRefusedPlannedDeletedAndMissingIdentitiesLookAlikeOnEveryStore(t *testing.T) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) {
		st := memory.New(nil)
		for _, id := range refusalIDs[:3] {
			if _, err := st.Put(id, memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("body of " + id)}); err != nil {
				t.Fatal(err)
			}
		}
		st.Grant("refusedread", "alice", memory.Access{Read: true})
		st.Grant("deleted", "alice", memory.Access{Read: true})
		hooks := &afterPlanning{}
		b := hooks.wrap(st.KeyBinding(core.ResourceDefinition{URITemplate: "mem://docs/{id}", Name: "doc"}, "id", ""))
		checkRefusalsLookMissing(t, refusalWorld{
			res:   gateway(t, allowAll(), core.ResourceLimits{}, b),
			uri:   func(id string) string { return "mem://docs/" + id },
			hooks: hooks,
			complete: func(id string) *mcp.CompleteParams {
				return &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "mem://docs/{id}"},
					Argument: mcp.CompleteParamsArgument{Name: "id", Value: id}}
			},
			refuse: func(*testing.T) { st.Revoke("refusedread", "alice") },
			delete: func(*testing.T) { st.Delete("deleted") },
		})
	})
	t.Run("postgres", func(t *testing.T) {
		d := newPGDB(t)
		d.project(t, "p")
		// Bodies over the 8 KiB a plan inlines, so that each is read by the
		// body statement after planning, where the refusal must show.
		pad := strings.Repeat(".", 9<<10)
		for _, id := range refusalIDs[:3] {
			d.textAsset(t, "p", id, "body of "+id+pad)
		}
		d.textAsset(t, "p", "visible", "keeps the project visible to alice")
		for _, id := range []string{"refusedread", "deleted", "visible"} {
			d.grant(t, "alice", "p", id)
		}
		st := newStore(t, newPool(t, d.url, nil), nil)
		hooks := &afterPlanning{}
		checkRefusalsLookMissing(t, refusalWorld{
			res:   pgGateway(t, []core.ResourceBinding{hooks.wrap(st.BodyBinding())}, pgAllowAll(nil)),
			uri:   func(id string) string { return "asset://project/p/asset/" + id + "/body" },
			hooks: hooks,
			complete: func(id string) *mcp.CompleteParams {
				return &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "asset://project/{project}/asset/{asset}/body"},
					Argument: mcp.CompleteParamsArgument{Name: "asset", Value: id},
					Context:  &mcp.CompleteContext{Arguments: map[string]string{"project": "p"}}}
			},
			refuse: func(t *testing.T) { d.revoke(t, "alice", "p", "refusedread") },
			delete: func(t *testing.T) { d.exec(t, `DELETE FROM mcpres.assets WHERE project_id = 'p' AND id = 'deleted'`) },
		})
	})
	t.Run("s3", func(t *testing.T) {
		env := harness.S3Users(t)
		alice := env.NewUser(t, uniqueUser(t, "alice"))
		root := s3Client(t, env, nil)
		for _, id := range refusalIDs[:3] {
			putObject(t, root, env.Bucket, "docs/"+id, "text/plain", []byte("body of "+id))
		}
		if err := setGrants(t.Context(), root, env.Bucket, map[string][]string{alice.AccessKey: {"docs/refusedread", "docs/deleted"}}); err != nil {
			t.Fatal(err)
		}
		store, err := s3store.OpenBucket(t.Context(), root, env.Bucket, &s3store.Options{
			Client: principalClients(t, nil, map[string]harness.S3Env{"alice": alice}),
		})
		if err != nil {
			t.Fatal(err)
		}
		b, err := store.Binding(core.ResourceDefinition{URITemplate: "s3obj://docs/{name}", Name: "doc"}, "docs/")
		if err != nil {
			t.Fatal(err)
		}
		hooks := &afterPlanning{}
		checkRefusalsLookMissing(t, refusalWorld{
			res:   gateway(t, allowAll(), core.ResourceLimits{}, hooks.wrap(b)),
			uri:   func(id string) string { return "s3obj://docs/" + id },
			hooks: hooks,
			complete: func(id string) *mcp.CompleteParams { // s3store offers no completion: all empty
				return &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "s3obj://docs/{name}"},
					Argument: mcp.CompleteParamsArgument{Name: "name", Value: id}}
			},
			refuse: func(t *testing.T) {
				if err := setGrants(context.Background(), root, env.Bucket, map[string][]string{alice.AccessKey: {"docs/deleted"}}); err != nil {
					t.Error(err)
				}
			},
			delete: func(t *testing.T) {
				if _, err := root.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(env.Bucket), Key: aws.String("docs/deleted")}); err != nil {
					t.Error(err)
				}
			},
		})
	})
}

// TestBundleOfOnlyRefusedItemsLooksEmptyOrUnavailableAsTheRecheckSays
// proves the contract's recheck rules for a bundle whose every item storage
// refused after planning: under a policy that lets storage decide the items
// stay visible, so the read fails exactly as a missing bundle does; under
// the store's own grants policy the recheck hides them, so the bundle is
// empty, exactly as a bundle of items that never existed.
func TestBundleOfOnlyRefusedItemsLooksEmptyOrUnavailableAsTheRecheckSays(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		ownGrant bool // the store's grants policy, else a policy that allows everything
	}{{"storage decides", false}, {"the store's grants decide", true}} {
		t.Run(c.name, func(t *testing.T) {
			st := memory.New(nil)
			for _, id := range []string{"a", "b"} {
				if _, err := st.Put(id, memory.Item{MIMEType: "text/plain", Text: true, Body: []byte(id)}); err != nil {
					t.Fatal(err)
				}
				st.Grant(id, "alice", memory.Access{Read: true})
			}
			refs := func(keys ...string) func(core.ResourceMatch) ([]memory.Ref, error) {
				return func(core.ResourceMatch) ([]memory.Ref, error) {
					var rs []memory.Ref
					for _, k := range keys {
						rs = append(rs, memory.Ref{URI: "mem://docs/" + k, Key: k})
					}
					return rs, nil
				}
			}
			hooks := &afterPlanning{hooks: map[string]func(){"mem://refused": func() {
				st.Revoke("a", "alice")
				st.Revoke("b", "alice")
			}}}
			policy := allowAll()
			if c.ownGrant {
				policy = st.Policy()
			}
			res := gateway(t, policy, core.ResourceLimits{},
				hooks.wrap(st.Binding(core.ResourceDefinition{URI: "mem://refused", Name: "refused"}, refs("a", "b"))),
				st.Binding(core.ResourceDefinition{URI: "mem://never", Name: "never"}, refs("x", "y")))
			cs := wireSession(t, res, "alice")
			refused, rerr := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "mem://refused"})
			never, nerr := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "mem://never"})
			_, missing := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "mem://nothing-here"})
			_, missingWire := wireErr(t, missing)
			switch {
			case nerr != nil || len(never.Contents) != 0:
				t.Fatalf("a bundle of items that never existed: %v, %d items; want an empty bundle", nerr, len(never.Contents))
			case !c.ownGrant:
				if _, w := wireErr(t, rerr); w != missingWire {
					t.Fatalf("refused bundle: %s, want what a missing one gets: %s", w, missingWire)
				}
			default:
				if rerr != nil || len(refused.Contents) != 0 {
					t.Fatalf("refused bundle under the grants policy: %v, %d items; want empty", rerr, len(refused.Contents))
				}
				a, _ := json.Marshal(refused)
				b, _ := json.Marshal(never)
				if string(a) != string(b) {
					t.Fatalf("refused bundle %s, never-existing bundle %s: want the same", a, b)
				}
			}
		})
	}
}

// TestS3StorePlanningDuringAnOutageIsARetryableStorageOutage stops the S3
// server under a binding that plans with a HEAD: a read then answers
// -32603 "resource storage is temporarily unavailable" with
// {"retryable":true} as data, not "resource could not be planned", so does
// a subscribe, and once the server is back the same read succeeds.
func TestS3StorePlanningDuringAnOutageIsARetryableStorageOutage(t *testing.T) {
	t.Parallel()
	srv := startVersitygw(t)
	client := s3Client(t, srv.env, nil)
	const bucket = "planning-outage"
	if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	putObject(t, client, bucket, "docs/a.txt", "text/plain", []byte("a"))
	store, err := s3store.OpenBucket(t.Context(), client, bucket, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := store.Binding(core.ResourceDefinition{URITemplate: "s3obj://docs/{name}", Name: "doc"}, "docs/")
	if err != nil {
		t.Fatal(err)
	}
	res := gateway(t, allowAll(), core.ResourceLimits{}, b)
	cs := wireSession(t, res, "host")
	const uri = "s3obj://docs/a.txt"
	if _, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri}); err != nil {
		t.Fatalf("read before the outage: %v", err)
	}

	srv.stop()
	const want = `{"code":-32603,"message":"resource storage is temporarily unavailable","data":{"retryable":true}}`
	start := time.Now()
	_, err = cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
	_, got := wireErr(t, err)
	t.Logf("the read during the outage answered after %v (the SDK's bounded retries)", time.Since(start))
	_, sub := wireErr(t, cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}))
	if got != want || sub != want {
		t.Fatalf("during the outage: read %s, subscribe %s; want %s", got, sub, want)
	}
	_, direct := res.Read(core.WithCaller(t.Context(), core.Caller{Principal: "host"}), uri)
	if core.KindOf(direct) != core.FailureOutage || !isOutageOf(direct, "s3store") {
		t.Fatalf("core's failure %v: want FailureOutage with the store's cause behind Unwrap", direct)
	}
	noPrivate(t, "S3 outage", got, srv.addr, bucket, "docs/a.txt", "connection refused", "dial")

	srv.start()
	if r, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri}); err != nil || r.Contents[0].Text != "a" {
		t.Fatalf("the retry once the server is back: %v", err)
	}
}

// isOutageOf reports whether some error in err's chain, behind the fixed
// public messages, names component.
func isOutageOf(err error, component string) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), component) {
			return true
		}
	}
	return false
}

// TestNoErrorDataCarriesAPrivateCause drives every failure that carries
// data (an outage while planning, in a policy check and in a completer;
// "no item survived" with read_failed, invalid_content and
// budget_exceeded issues; on read and, for the outages, on subscribe) with a canary in every private place (causes, the
// payload, authorization data, undisclosed item URIs) and proves that no
// JSON-RPC error a client receives holds it.
func TestNoErrorDataCarriesAPrivateCause(t *testing.T) {
	t.Parallel()
	const canary = "CANARY-7f3a"
	cause := errors.New(canary + " password=hunter2 10.9.8.7:5432")
	target := func(uri string) core.ResourceTarget {
		tg, err := core.NewResourceTarget(uri, "item", json.RawMessage(`{"secret":"`+canary+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	binding := func(uri string, resolve func() error, items map[string]func() (core.ResourcePayload, error)) core.ResourceBinding {
		return core.ResourceBinding{
			Definition: core.ResourceDefinition{URI: uri, Name: uri},
			Resolver: core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
				if err := resolve(); err != nil {
					return core.ResourceReadPlan{}, err
				}
				var ts []core.ResourceTarget
				for u := range items {
					ts = append(ts, target(u))
				}
				return core.NewResourceReadPlan(target(m.URI()), ts...)
			}),
			Reader: core.ItemReader(func(ctx context.Context, item core.ReadItem) (core.ResourcePayload, error) {
				tg := item.Target
				return items[tg.URI()]()
			}),
		}
	}
	ok := func() error { return nil }
	policy := core.PerTarget(core.TargetPolicy{
		Discover: func(context.Context, core.ResourceDefinition) error { return nil },
		Visibility: func(_ context.Context, tg core.ResourceTarget) (core.Visibility, error) {
			if tg.URI() == "canary://policy-outage" {
				return core.Visibility{}, core.NewFailure(core.FailureOutage, cause)
			}
			return core.Visibility{Visible: true, DiscloseIssueURI: strings.HasSuffix(tg.URI(), "/disclosed")}, nil
		},
		Read: func(context.Context, core.ResourceTarget) error { return nil },
	})
	res := gateway(t, policy, core.ResourceLimits{MaxItemBytes: 8},
		binding("canary://plan-outage", func() error { return core.NewFailure(core.FailureOutage, cause) }, nil),
		binding("canary://policy-outage", ok, nil),
		binding("canary://none", ok, map[string]func() (core.ResourcePayload, error){
			"canary://none/" + canary + "/read-failed": func() (core.ResourcePayload, error) { return core.ResourcePayload{}, cause },
			"canary://none/" + canary + "/outage": func() (core.ResourcePayload, error) {
				return core.ResourcePayload{}, core.NewFailure(core.FailureOutage, cause)
			},
			"canary://none/" + canary + "/invalid": func() (core.ResourcePayload, error) { return core.TextPayload("text/plain", "\xff"+canary), nil },
			"canary://none/" + canary + "/too-large": func() (core.ResourcePayload, error) {
				return core.TextPayload("text/plain", canary+canary), nil
			},
			"canary://none/disclosed": func() (core.ResourcePayload, error) { return core.ResourcePayload{}, cause },
		}),
	)
	cs := wireSession(t, res, "alice")
	var wires []string
	for _, uri := range []string{"canary://plan-outage", "canary://policy-outage", "canary://none"} {
		_, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
		je, wire := wireErr(t, err)
		if je.Data == nil {
			t.Errorf("%s: %s, want data", uri, wire)
		}
		wires = append(wires, wire)
		if uri != "canary://none" { // its items are readable until read: a subscribe is admitted
			_, wire = wireErr(t, cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}))
			wires = append(wires, wire)
		}
	}
	for _, w := range wires {
		noPrivate(t, "error", w, canary, "hunter2", "10.9.8.7", "secret")
	}
	if !strings.Contains(wires[4], `"uri":"canary://none/disclosed"`) {
		t.Errorf("the disclosed item's URI is missing from %s", wires[4])
	}
	t.Logf("%s", strings.Join(wires, "\n"))
}
