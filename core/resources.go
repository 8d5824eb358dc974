package core

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"time"
	"unicode/utf8"

	"go.phpboyscout.uk/mcp/resources/internal/mediatype"
)

// Resources is the gateway: an immutable set of bindings and a policy. It
// selects, authorizes, admits and reports; it owns no listener, background
// worker or application job. A Resources value is safe for concurrent use.
type Resources struct {
	defs    []*definition
	sel     *selector
	policy  ResourcePolicy
	limits  ResourceLimits
	list    listing
	objects map[string]Reader // object sources by name
}

// definition is the validated, immutable internal form of a binding.
type definition struct {
	index    int
	desc     ResourceDefinition // owned copy
	extras   []byte             // encodeExtras(desc)
	resolver Resolver
	reader   Reader
	complete func(context.Context, CompletionRequest) (Completion, error) // nil: no completion
	// policy is the key of the policy that answers its passes
	// ([ResourcePolicy].Key); nil: storage decisions are dropped.
	policy any
}

// description returns a copy that owns its metadata.
func (d *definition) description() ResourceDefinition {
	c := d.desc
	c.Meta = bytes.Clone(d.desc.Meta)
	cloneDefinitionExtras(&c)
	return c
}

// Option configures [NewResources].
type Option func(*options)

type options struct {
	limits    ResourceLimits
	cursorKey []byte
	objects   map[string]Reader // WithObjectSource
	now       func() time.Time
	err       error
}

// WithResourceLimits overrides limits; zero fields keep their defaults and
// negative fields make [NewResources] fail.
func WithResourceLimits(l ResourceLimits) Option {
	return func(o *options) { o.limits = l }
}

// NewResources validates and copies bindings and policy. Every policy
// callback and both callbacks of every binding are required: a nil
// interface, and an interface holding a nil func or nil pointer (such as
// ResolverFunc(nil)), are rejected with a *[ConfigError] naming the binding
// and the field. Definitions must be valid and distinct. Errors are
// *ConfigError.
func NewResources(bindings []ResourceBinding, policy ResourcePolicy, opts ...Option) (*Resources, error) {
	o := options{now: time.Now}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.err != nil {
		return nil, o.err
	}
	limits, err := o.limits.resolve()
	if err != nil {
		return nil, err
	}
	switch {
	case policy.Discover == nil:
		return nil, configErr("ResourcePolicy.Discover", "callback is required")
	case policy.missing != "":
		return nil, configErr(policy.missing, "callback is required")
	case policy.Decide == nil:
		return nil, configErr("ResourcePolicy.Decide", "callback is required")
	}
	defs := make([]*definition, len(bindings))
	for i, b := range bindings {
		d, err := newDefinition(i, b, limits)
		if err != nil {
			return nil, err
		}
		if policy.Key != nil {
			if d.policy = policy.Key(d.description()); d.policy != nil && !reflect.ValueOf(d.policy).Comparable() {
				return nil, configErr("ResourcePolicy.Key", "returned a key that is not comparable")
			}
		}
		defs[i] = d
	}
	sel, err := newSelector(defs, limits.MaxURIBytes)
	if err != nil {
		return nil, err
	}
	r := &Resources{defs: defs, sel: sel, policy: policy, limits: limits, objects: o.objects}
	if err := r.list.init(defs, o.cursorKey, o.now); err != nil {
		return nil, err
	}
	return r, nil
}

// Limits returns the effective limits, defaults filled in.
func (r *Resources) Limits() ResourceLimits { return r.limits }

func newDefinition(i int, b ResourceBinding, limits ResourceLimits) (*definition, error) {
	d := b.Definition
	fail := func(field, reason string) error { return definitionError(i, d, field, reason, nil) }
	switch {
	case isNilCallback(b.Resolver):
		return nil, fail("Resolver", nilCallbackReason(b.Resolver))
	case isNilCallback(b.Reader):
		return nil, fail("Reader", nilCallbackReason(b.Reader))
	case (d.URI == "") == (d.URITemplate == ""):
		return nil, fail("URI", "exactly one of URI and URITemplate must be set")
	case d.Name == "":
		return nil, fail("Name", "is required")
	}
	for _, f := range [...]struct{ field, s string }{{"Name", d.Name}, {"Title", d.Title}, {"Description", d.Description}} {
		if !utf8.ValidString(f.s) {
			return nil, fail(f.field, "must be valid UTF-8")
		}
	}
	if d.MIMEType != "" && !mediatype.Valid(d.MIMEType) {
		return nil, fail("MIMEType", "is not a valid media type")
	}
	if d.Meta != nil {
		if len(d.Meta) > maxMetaBytes {
			return nil, fail("Meta", "exceeds 64 KiB")
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(d.Meta, &obj); err != nil || obj == nil {
			return nil, fail("Meta", "must be a JSON object")
		}
		if err := checkMetaText(d.Meta); err != nil {
			return nil, fail("Meta", err.Error())
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, d.Meta); err != nil {
			return nil, fail("Meta", "must be a JSON object")
		}
		d.Meta = buf.Bytes()
	}
	if field, reason := checkDefinitionExtras(&d); field != "" {
		return nil, fail(field, reason)
	}
	cloneDefinitionExtras(&d)
	if d.URI != "" {
		if err := checkURI(d.URI, limits.MaxURIBytes); err != nil {
			return nil, definitionError(i, d, "URI", err.Error(), err)
		}
	}
	if n := definitionSize(d); n > maxDefinitionBytes {
		return nil, fail("Definition", "encoded definition exceeds 64 KiB")
	}
	return &definition{index: i, desc: d, extras: encodeExtras(d), resolver: b.Resolver, reader: b.Reader, complete: b.Complete}, nil
}

// definitionSize is the encoded JSON size of a definition as listed.
func definitionSize(d ResourceDefinition) int {
	var s sizer
	s.lit(`{"name":`)
	s.str(d.Name)
	if d.URI != "" {
		s.lit(`,"uri":`)
		s.str(d.URI)
	} else {
		s.lit(`,"uriTemplate":`)
		s.str(d.URITemplate)
	}
	if d.Title != "" {
		s.lit(`,"title":`)
		s.str(d.Title)
	}
	if d.Description != "" {
		s.lit(`,"description":`)
		s.str(d.Description)
	}
	if d.MIMEType != "" {
		s.lit(`,"mimeType":`)
		s.str(d.MIMEType)
	}
	sizeExtras(&s, d)
	if d.Meta != nil {
		s.lit(`,"_meta":`)
		s.n += len(d.Meta)
	}
	s.lit(`}`)
	return s.n
}
