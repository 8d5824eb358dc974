package postgres

import (
	"context"
	"errors"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
)

// TestObjectsNeedBothTheTargetFunctionAndTheReader proves an incomplete
// join is a configuration error of NewStore, not a nil call at read time.
func TestObjectsNeedBothTheTargetFunctionAndTheReader(t *testing.T) {
	reader := core.ReaderFunc(func(context.Context, core.ResourceTarget) (core.ResourcePayload, error) {
		return core.TextPayload("text/plain", "x"), nil
	})
	target := func(uri string, a Asset) (core.ResourceTarget, error) {
		return core.NewResourceTarget(uri, "inner", nil)
	}
	for name, o := range map[string]*Objects{"no target": {Reader: reader}, "no reader": {Target: target}} {
		var ce *core.ConfigError
		if _, err := NewStore(&countingDB{}, &Options{Objects: o}); !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a *core.ConfigError", name, err)
		}
	}
}

// TestObjectTargetsCarryTheHostTargetAndOnlyAJoiningStoreReadsThem proves
// the join's plumbing without a database: the object target is a
// representation of the asset (so the grants policy can authorize it), the
// host's reader receives the host's own target unchanged, a store without
// Objects refuses such a target, and an asset without an object reference
// has no object target.
func TestObjectTargetsCarryTheHostTargetAndOnlyAJoiningStoreReadsThem(t *testing.T) {
	var got core.ResourceTarget
	joined, err := NewStore(&countingDB{}, &Options{Objects: &Objects{
		Target: func(uri string, a Asset) (core.ResourceTarget, error) {
			return core.NewResourceTarget(uri, "inner", []byte(`{"key":"`+a.Object.Key+`","mime":"`+a.MIMEType+`"}`))
		},
		Reader: core.ReaderFunc(func(ctx context.Context, t core.ResourceTarget) (core.ResourcePayload, error) {
			got = t
			return core.BlobPayload("image/png", []byte{1}), nil
		}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	a := Asset{Project: "p", ID: "a", Version: 3, MIMEType: "image/png", Object: &ObjectRef{Bucket: "b", Key: "k/1.png", ETag: `"e"`, Size: 1}}
	tgt, err := joined.ObjectTarget(a)
	if err != nil {
		t.Fatal(err)
	}
	if tgt.URI() != "asset://project/p/asset/a/object" || tgt.Representation() != ReprObject {
		t.Fatalf("object target %s (%s)", tgt.URI(), tgt.Representation())
	}
	if r, err := parseRef(tgt); err != nil || r.Project != "p" || r.Asset != "a" || r.Version != 3 {
		t.Fatalf("the object target's identity %+v (%v): want the asset's, for the grants policy", r, err)
	}
	ctx := core.WithPrincipal(t.Context(), "alice")
	if _, err := joined.Reader().Read(ctx, tgt); err != nil {
		t.Fatal(err)
	}
	if got.URI() != tgt.URI() || got.Representation() != "inner" || string(got.AuthorizationData()) != `{"key":"k/1.png","mime":"image/png"}` {
		t.Fatalf("the host reader got %s %s %s: want its own target back", got.URI(), got.Representation(), got.AuthorizationData())
	}

	rowsOnly, err := NewStore(&countingDB{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rowsOnly.Reader().Read(ctx, tgt); !errors.Is(err, ErrBadTarget) {
		t.Fatalf("a store without Objects read an object target: %v", err)
	}
	if _, err := rowsOnly.ObjectTarget(a); core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("a store without Objects planned an object: %v", err)
	}
	a.Object = nil
	if _, err := joined.ObjectTarget(a); core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("an asset without an object reference: %v, want unavailable", err)
	}
}
