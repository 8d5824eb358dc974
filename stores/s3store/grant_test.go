package s3store

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"sync/atomic"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/storetest"
)

// countingBucket is a bucket of an unreachable server whose HTTP requests
// are counted, and refused without leaving the process.
func countingBucket(t *testing.T) (*Bucket, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	hc := &http.Client{Transport: roundTrip(func(*http.Request) (*http.Response, error) {
		n.Add(1)
		return nil, errors.New("no server here")
	})}
	c, err := NewClient(t.Context(), ClientConfig{Endpoint: "http://127.0.0.1:1", AccessKeyID: "a", SecretAccessKey: "s", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenBucket(t.Context(), c, "assets", nil)
	if err != nil {
		t.Fatal(err)
	}
	return b, &n
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestKeyGrantDecidesBeforeAnyRequest: a key family's grant sees the
// binding's name, the decoded key and the decoded captures (an encoded
// tenant arrives decoded), a key it refuses is unavailable with no request
// to S3, and a key it grants is asked of S3 (here an unreachable one).
func TestKeyGrantDecidesBeforeAnyRequest(t *testing.T) {
	b, requests := countingBucket(t)
	type asked struct {
		binding, key string
		vars         map[string]string
	}
	var got []asked
	fam := reports
	fam.Grant = func(_ context.Context, binding, key string, vars map[string]string) (bool, error) {
		got = append(got, asked{binding, key, vars})
		return key == "tenants/acme/reports/2026/q3.pdf", nil
	}
	bs, err := b.KeyBindings(fam)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := b.GrantedBinding(core.ResourceDefinition{Name: "asset", URITemplate: "asset://files/{name}"}, "public/",
		func(context.Context, string, string, map[string]string) (bool, error) { return false, nil })
	if err != nil {
		t.Fatal(err)
	}
	r, err := core.NewResources(append(bs, plain), storetest.AllowAll())
	if err != nil {
		t.Fatal(err)
	}
	ctx := core.WithCaller(t.Context(), core.Caller{Principal: "bob"})
	for _, uri := range []string{"report://tenants/globex/reports/2026/q3.pdf", "report://tenants/acme/reports/2026",
		"report://tenants/acme/reports/2026/q3.pdf/decoy", "asset://files/a.txt"} {
		_, err := r.Read(ctx, uri)
		if f, ok := errors.AsType[*core.Failure](err); !ok || f.Kind != core.FailureUnavailable {
			t.Errorf("%s: %v, want unavailable", uri, err)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d S3 requests for refused keys, want 0", n)
	}
	if _, err := r.Read(ctx, "report://tenants/%61cme/reports/2026/q3.pdf"); err == nil {
		t.Fatal("a read from an unreachable server succeeded")
	}
	if _, err := r.Read(ctx, "report://tenants/%61cme/reports/2026/q3.pdf"); requests.Load() == 0 {
		t.Fatalf("the granted key was not asked of S3: %v", err)
	}
	last := got[len(got)-1]
	want := map[string]string{"tenant": "acme", "k1": "2026", "k2": "q3.pdf"}
	if last.binding != "report" || last.key != "tenants/acme/reports/2026/q3.pdf" || !maps.Equal(last.vars, want) {
		t.Fatalf("the grant was asked %+v, want binding report, the decoded key and captures %v", last, want)
	}
}
