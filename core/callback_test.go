package core

import (
	"context"
	"errors"
	"testing"
)

// hostResolver and hostReader stand for adapter types a host might write:
// a struct with pointer methods and a func type of its own.
type hostResolver struct{ plan ResourceReadPlan }

func (h *hostResolver) Resolve(context.Context, ResourceMatch) (ResourceReadPlan, error) {
	return h.plan, nil
}

type hostReaderFunc func(ctx context.Context, req ReadRequest) ([]ReadResult, error)

func (f hostReaderFunc) Read(ctx context.Context, req ReadRequest) ([]ReadResult, error) {
	return f(ctx, req)
}

type valueReader struct{}

func (valueReader) Read(_ context.Context, req ReadRequest) ([]ReadResult, error) {
	out := make([]ReadResult, len(req.Items))
	for i := range out {
		out[i].Payload = TextPayload("text/plain", "v")
	}
	return out, nil
}

func TestNewResourcesRejectsNilCallbackHeldInAnInterface(t *testing.T) {
	g := newRig(t)
	cases := []struct {
		name  string
		edit  func(*ResourceBinding)
		field string
	}{
		{"ResolverFunc(nil)", func(b *ResourceBinding) { b.Resolver = ResolverFunc(nil) }, "Resolver"},
		{"ItemReader(nil)", func(b *ResourceBinding) { b.Reader = ItemReader(nil) }, "Reader"},
		{"nil pointer Resolver", func(b *ResourceBinding) { b.Resolver = (*hostResolver)(nil) }, "Resolver"},
		{"host func type Reader", func(b *ResourceBinding) { b.Reader = hostReaderFunc(nil) }, "Reader"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok := g.binding()
			b := g.binding()
			b.Definition = ResourceDefinition{URI: "test://second", Name: "second"}
			c.edit(&b)
			_, err := NewResources([]ResourceBinding{ok, b}, g.policy())
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("NewResources accepted %s: %v", c.name, err)
			}
			if ce.Definition != 1 || ce.Name != "test://second" || ce.Path.Field != c.field {
				t.Fatalf("ConfigError names binding %d (%q) field %q; want binding 1 (%q) field %q",
					ce.Definition, ce.Name, ce.Path.Field, "test://second", c.field)
			}
		})
	}
}

func TestNewResourcesAcceptsNonNilAdapterValues(t *testing.T) {
	g := newRig(t)
	b := g.binding()
	b.Resolver = &hostResolver{}
	b.Reader = valueReader{}
	if _, err := NewResources([]ResourceBinding{b}, g.policy()); err != nil {
		t.Fatalf("a non-nil pointer and a value type were rejected: %v", err)
	}
}
