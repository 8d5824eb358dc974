package memory_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/benchutil"
	"go.phpboyscout.uk/mcp/resources/stores/memory"
	"go.phpboyscout.uk/mcp/resources/stores/storetest"
)

// The benchmarks of issue 16 over the in-memory store: what the gateway
// itself costs per read (gateway against the store's own calls, in one
// run), and the heap a read of items far over the item limit needs.

// BenchmarkMemoryStoreRead reads one 1 KiB text item of the store:
//
//   - reader: the store's Read of a target planned once, under a read limit:
//     the storage read alone;
//   - store: Target (the plan's identity lookup) and Read, what the gateway
//     asks of the store for one read, called directly;
//   - gateway: core.Resources.Read through the store's template binding
//     under an allow-all policy; gateway minus store is the gateway's own
//     cost (selection, policy calls, the scope, admission and sizing);
//   - gateway-store-policy: the same with the store's grants as the policy
//     (each policy call looks the grant up).
func BenchmarkMemoryStoreRead(b *testing.B) {
	st := memory.New(nil)
	body := []byte(strings.Repeat("abcdefgh", 128))
	if _, err := st.Put("doc", memory.Item{MIMEType: "text/plain", Text: true, Body: body}); err != nil {
		b.Fatal(err)
	}
	st.Grant("doc", "alice", memory.Access{Read: true})
	ctx := core.WithCaller(context.Background(), core.Caller{Principal: "alice"})
	const uri = "mem://docs/doc"
	bind := st.Binding(core.ResourceDefinition{URITemplate: "mem://docs/{key}", Name: "doc"}, memory.KeyFromVar("key"))
	open := func(p core.ResourcePolicy) *core.Resources {
		r, err := core.NewResources([]core.ResourceBinding{bind}, p)
		if err != nil {
			b.Fatal(err)
		}
		return r
	}

	b.Run("reader", func(b *testing.B) {
		t, err := st.Target(ctx, uri, "doc")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		cpu := benchutil.CPU(b)
		for b.Loop() {
			if p, err := st.Read(ctx, whole(t)); err != nil || p.Len() != int64(len(body)) {
				b.Fatal(err)
			}
		}
		cpu()
	})
	b.Run("store", func(b *testing.B) {
		b.ReportAllocs()
		cpu := benchutil.CPU(b)
		for b.Loop() {
			t, err := st.Target(ctx, uri, "doc")
			if err != nil {
				b.Fatal(err)
			}
			if p, err := st.Read(ctx, whole(t)); err != nil || p.Len() != int64(len(body)) {
				b.Fatal(err)
			}
		}
		cpu()
	})
	for _, g := range []struct {
		name   string
		policy core.ResourcePolicy
	}{{"gateway", storetest.AllowAll()}, {"gateway-store-policy", st.Policy()}, {"gateway-store-policy-per-target", perTarget(st.Policy())}} {
		r := open(g.policy)
		b.Run(g.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := benchutil.CPU(b)
			for b.Loop() {
				res, err := r.Read(ctx, uri)
				if err != nil || res.Partial() {
					b.Fatal(err)
				}
			}
			cpu()
		})
	}
}

// BenchmarkMemoryStoreOverLimit reads a bundle of one small item and two
// 64 MiB items under a 1 MiB item limit: the big ones are budget_exceeded
// issues of a partial result and must cost no copy of their bodies. B/op
// (everything one read allocates, so a bound on its peak heap) and held-B
// (what its result keeps) stay in kilobytes while 128 MiB is stored.
func BenchmarkMemoryStoreOverLimit(b *testing.B) {
	const big = 64 << 20
	st := memory.New(nil)
	keys := []string{"small", "big0", "big1"}
	for _, k := range keys {
		body := bytes.Repeat([]byte{'x'}, big)
		if k == "small" {
			body = []byte("small")
		}
		if _, err := st.Put(k, memory.Item{MIMEType: "application/octet-stream", Body: body}); err != nil {
			b.Fatal(err)
		}
		st.Grant(k, "alice", memory.Access{Read: true, DiscloseURI: true})
	}
	refs := func(core.ResourceMatch) ([]memory.Ref, error) {
		rs := make([]memory.Ref, len(keys))
		for i, k := range keys {
			rs[i] = memory.Ref{URI: fmt.Sprintf("mem://item/%s", k), Key: k}
		}
		return rs, nil
	}
	r, err := core.NewResources([]core.ResourceBinding{st.Binding(core.ResourceDefinition{URI: "mem://bundle", Name: "bundle"}, refs)},
		st.Policy(), core.WithResourceLimits(core.ResourceLimits{MaxItemBytes: 1 << 20}))
	if err != nil {
		b.Fatal(err)
	}
	ctx := core.WithCaller(context.Background(), core.Caller{Principal: "alice"})
	read := func() any {
		res, err := r.Read(ctx, "mem://bundle")
		if err != nil || !res.Partial() || len(res.Items()) != 2 || len(res.Issues()) != 2 {
			b.Fatalf("read: %v", err)
		}
		return res
	}
	b.ReportAllocs()
	for b.Loop() {
		read()
	}
	b.ReportMetric(float64(2*big), "stored-over-limit-B")
	benchutil.Held(b, read)
}

// perTarget is p asked one target at a time through [core.PerTarget]: each
// Visibility and Read is a one-target pass of p's Decide.
func perTarget(p core.ResourcePolicy) core.ResourcePolicy {
	one := func(ctx context.Context, t core.ResourceTarget) (core.TargetDecision, error) {
		ds, err := p.Decide(ctx, core.PolicyPass{Stage: core.PassRecheck, Targets: []core.ResourceTarget{t}})
		if err != nil {
			return core.TargetDecision{}, err
		}
		return ds[0], nil
	}
	return core.PerTarget(core.TargetPolicy{
		Discover: p.Discover,
		Visibility: func(ctx context.Context, t core.ResourceTarget) (core.Visibility, error) {
			d, err := one(ctx, t)
			if core.KindOf(err) == core.FailureUnavailable {
				return core.Visibility{}, nil
			}
			return d.Visibility, err
		},
		Read: func(ctx context.Context, t core.ResourceTarget) error {
			switch d, err := one(ctx, t); {
			case err != nil:
				return err
			case !d.Read:
				return core.NewFailure(core.FailureUnavailable, errors.New("read denied"))
			}
			return nil
		},
	})
}
