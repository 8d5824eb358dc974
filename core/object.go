package core

import (
	"fmt"
	"unicode/utf8"

	"go.phpboyscout.uk/mcp/resources/internal/mediatype"
)

// maxObjectFieldBytes bounds each text field of an [ObjectRef].
const maxObjectFieldBytes = 1024

// ObjectRef names a stored object that a plan item reads: the object
// source registered with [WithObjectSource] under Source reads it, pinned
// to ETag and VersionID when set (either may be empty). With both empty the
// source pins the object itself when it reads it, after the decision: it
// takes the current identity in one request of its own (package s3store:
// one HEAD, under the item's timeout) and reads that identity or nothing
// (If-Match), so that the bytes served are those of one object version.
// Unpinned, which the host sets only by an explicit choice (a resources
// file's unpinned: true), lets the source read the current object with no
// pin instead. MIMEType is the item's MIME type, or empty to let the
// source choose; Size is the object's size in bytes, or -1 when unknown.
type ObjectRef struct {
	Source, Key, ETag, VersionID, MIMEType string
	Size                                   int64
	Unpinned                               bool
}

// WithObject returns t with ref attached: the same URI, representation and
// authorization data (which the policy still decides on), read by the
// object source ref.Source names instead of the binding's reader. The ref
// is part of the target's identity. Source and Key are required; every
// text field is UTF-8 of at most 1 KiB, MIMEType empty or a valid media
// type, Size at least -1. A target carrying content
// ([ResourceMatch.WithContent]) cannot be given one.
func (t ResourceTarget) WithObject(ref ObjectRef) (ResourceTarget, error) {
	switch {
	case t.IsZero():
		return ResourceTarget{}, fmt.Errorf("core: object reference on a zero target")
	case t.inline != nil:
		return ResourceTarget{}, fmt.Errorf("core: a target carrying content cannot name an object")
	case ref.Source == "" || ref.Key == "":
		return ResourceTarget{}, fmt.Errorf("core: object reference needs a source and a key")
	case ref.Size < -1:
		return ResourceTarget{}, fmt.Errorf("core: object reference size must be -1 (unknown) or more")
	case ref.MIMEType != "" && !mediatype.Valid(ref.MIMEType):
		return ResourceTarget{}, fmt.Errorf("core: object reference MIME type is not a valid media type")
	}
	for _, s := range [...]string{ref.Source, ref.Key, ref.ETag, ref.VersionID, ref.MIMEType} {
		if len(s) > maxObjectFieldBytes || !utf8.ValidString(s) {
			return ResourceTarget{}, fmt.Errorf("core: object reference fields must be UTF-8 of at most %d bytes", maxObjectFieldBytes)
		}
	}
	t.obj = &ref
	return t, nil
}

// Object returns the object reference [ResourceTarget.WithObject]
// attached, if any.
func (t ResourceTarget) Object() (ObjectRef, bool) {
	if t.obj == nil {
		return ObjectRef{}, false
	}
	return *t.obj, true
}

// WithObjectSource registers r as the reader of every plan item whose
// [ObjectRef] names source name. A plan item naming a source that is not
// registered makes the plan invalid. A name registered twice, an empty
// name or a nil reader makes [NewResources] fail with a *[ConfigError].
func WithObjectSource(name string, r Reader) Option {
	return func(o *options) {
		field := "WithObjectSource(" + name + ")"
		switch {
		case o.err != nil:
			return
		case name == "":
			o.err = configErr("WithObjectSource", "the source name is required")
		case isNilCallback(r):
			o.err = configErr(field, nilCallbackReason(r))
		default:
			if _, dup := o.objects[name]; dup {
				o.err = configErr(field, "is registered twice")
				return
			}
			if o.objects == nil {
				o.objects = map[string]Reader{}
			}
			o.objects[name] = r
		}
	}
}
