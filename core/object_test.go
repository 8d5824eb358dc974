package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// objectRig reads a bundle whose items alternate between the binding's
// reader and object sources, by the plan items given.
func objectRead(t *testing.T, items []ResourceTarget, opts ...Option) (*ResourceResult, error) {
	t.Helper()
	binding := ResourceBinding{
		Definition: ResourceDefinition{URI: bundleURI, Name: "bundle"},
		Resolver: ResolverFunc(func(context.Context, ResourceMatch) (ResourceReadPlan, error) {
			req, _ := NewResourceTarget(bundleURI, "bundle", nil)
			return NewResourceReadPlan(req, items...)
		}),
		Reader: ItemReader(func(_ context.Context, it ReadItem) (ResourcePayload, error) {
			if _, ok := it.Target.Object(); ok {
				return ResourcePayload{}, errors.New("the binding's reader was asked for an object item")
			}
			return TextPayload("text/plain", "row "+it.Target.URI()), nil
		}),
	}
	policy := ResourcePolicy{
		Discover: func(context.Context, ResourceDefinition) error { return nil },
		Decide: func(_ context.Context, p PolicyPass) ([]TargetDecision, error) {
			ds := make([]TargetDecision, len(p.Targets))
			for i := range ds {
				ds[i] = TargetDecision{Visibility: Visibility{Visible: true, DiscloseIssueURI: true}, Read: true}
			}
			return ds, nil
		},
	}
	r, err := NewResources([]ResourceBinding{binding}, policy, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r.Read(context.Background(), bundleURI)
}

func objectItem(t *testing.T, uri, source, key string) ResourceTarget {
	t.Helper()
	tg, err := NewResourceTarget(uri, "object", []byte(`{"row":"r1"}`))
	if err != nil {
		t.Fatal(err)
	}
	tg, err = tg.WithObject(ObjectRef{Source: source, Key: key, ETag: `"e"`, Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func TestObjectItemsAreReadByTheSourceTheyName(t *testing.T) {
	row, _ := NewResourceTarget("test://row/1", "row", nil)
	var requests [][]string
	files := hostReaderFunc(func(_ context.Context, req ReadRequest) ([]ReadResult, error) {
		var keys []string
		out := make([]ReadResult, len(req.Items))
		for k, it := range req.Items {
			ref, ok := it.Target.Object()
			if !ok {
				return nil, errors.New("an item without an object reference")
			}
			keys = append(keys, ref.Key)
			out[k] = ReadResult{Payload: TextPayload("text/plain", "object "+ref.Key)}
		}
		requests = append(requests, keys)
		return out, nil
	})
	var other []string
	archive := ItemReader(func(_ context.Context, it ReadItem) (ResourcePayload, error) {
		ref, _ := it.Target.Object()
		other = append(other, ref.Key)
		return TextPayload("text/plain", "archived "+ref.Key), nil
	})
	items := []ResourceTarget{
		objectItem(t, "test://o/a", "files", "a"),
		objectItem(t, "test://o/b", "files", "b"),
		row,
		objectItem(t, "test://o/c", "archive", "c"),
		objectItem(t, "test://o/d", "files", "d"),
	}
	res, err := objectRead(t, items, WithObjectSource("files", files), WithObjectSource("archive", archive))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range res.Items() {
		got = append(got, it.Text())
	}
	want := []string{"object a", "object b", "row test://row/1", "archived c", "object d"}
	if !slices.Equal(got, want) {
		t.Fatalf("items = %q, want %q", got, want)
	}
	// Consecutive items of one batch source are one request; another
	// reader in between splits the run.
	if fmt.Sprint(requests) != "[[a b] [d]]" || fmt.Sprint(other) != "[c]" {
		t.Fatalf("files requests %v, archive reads %v", requests, other)
	}
}

func TestAnObjectItemOfAnUnregisteredSourceIsAnInvalidPlan(t *testing.T) {
	_, err := objectRead(t, []ResourceTarget{objectItem(t, "test://o/a", "nowhere", "a")},
		WithObjectSource("files", ItemReader(func(context.Context, ReadItem) (ResourcePayload, error) {
			t.Fatal("read")
			return ResourcePayload{}, nil
		})))
	wantKind(t, err, FailureInvalidPlan)
}

func TestWithObjectSourceRejectsBadRegistrations(t *testing.T) {
	ok := ItemReader(func(context.Context, ReadItem) (ResourcePayload, error) { return ResourcePayload{}, nil })
	for name, opts := range map[string][]Option{
		"empty name": {WithObjectSource("", ok)},
		"nil reader": {WithObjectSource("files", nil)},
		"nil func":   {WithObjectSource("files", ItemReader(nil))},
		"twice":      {WithObjectSource("files", ok), WithObjectSource("files", ok)},
	} {
		var ce *ConfigError
		if _, err := NewResources(nil, objectPolicy(), opts...); !errors.As(err, &ce) || !strings.Contains(ce.Path.Field, "WithObjectSource") {
			t.Errorf("%s: %v, want a ConfigError naming WithObjectSource", name, err)
		}
	}
}

func objectPolicy() ResourcePolicy {
	return ResourcePolicy{
		Discover: func(context.Context, ResourceDefinition) error { return nil },
		Decide:   func(context.Context, PolicyPass) ([]TargetDecision, error) { return nil, nil },
	}
}

func TestWithObjectChecksTheReferenceAndJoinsTheIdentity(t *testing.T) {
	base, _ := NewResourceTarget("test://o/a", "object", []byte(`{"row":1}`))
	good := ObjectRef{Source: "files", Key: "a", ETag: `"e"`, VersionID: "v", MIMEType: "text/plain", Size: 3}
	for name, ref := range map[string]ObjectRef{
		"no source":     {Key: "a", Size: -1},
		"no key":        {Source: "files", Size: -1},
		"size below -1": {Source: "files", Key: "a", Size: -2},
		"bad MIME type": {Source: "files", Key: "a", MIMEType: "not a type", Size: -1},
		"long key":      {Source: "files", Key: strings.Repeat("k", 1025), Size: -1},
		"bad UTF-8":     {Source: "files", Key: "\xff", Size: -1},
	} {
		if _, err := base.WithObject(ref); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := (ResourceTarget{}).WithObject(good); err == nil {
		t.Error("a zero target took an object reference")
	}
	tg, err := base.WithObject(good)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := tg.Object(); !ok || got != good {
		t.Fatalf("Object() = %+v, %v", got, ok)
	}
	if _, ok := base.Object(); ok {
		t.Fatal("WithObject changed the target it was called on")
	}
	if tg.URI() != base.URI() || tg.Representation() != base.Representation() || string(tg.AuthorizationData()) != `{"row":1}` {
		t.Fatal("WithObject changed the URI, representation or authorization data")
	}
	other := good
	other.ETag = `"f"`
	tg2, _ := base.WithObject(other)
	if sameTarget(tg, base) || sameTarget(tg, tg2) || !sameTarget(tg, tg) {
		t.Fatal("the object reference is not part of the target's identity")
	}
}
