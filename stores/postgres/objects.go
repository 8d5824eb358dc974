package postgres

import (
	"context"
	"encoding/json"
	"errors"

	"go.phpboyscout.uk/mcp/resources/core"
)

// ObjectTemplate is one asset's referenced object, read from the object
// store through [Options].Objects (representation "object"). It exists only
// when the store joins objects.
const ObjectTemplate = "asset://project/{project}/asset/{asset}/object"

// ReprObject is the representation of an asset's referenced object.
const ReprObject = "object"

// Objects joins the reference schema's assets with the objects their rows
// reference (object_bucket, object_key, object_etag, object_version_id,
// object_size), without this package knowing the object store: the host
// supplies how a row's reference becomes a target, and the reader of such
// targets. Package s3store provides both (s3store.NewObjectTarget and
// (*s3store.Bucket).Read); the reference command wires them so:
//
//	opts.Objects = &postgres.Objects{
//		Target: func(uri string, a postgres.Asset) (core.ResourceTarget, error) {
//			return s3store.NewObjectTarget(uri, s3store.Object{Bucket: a.Object.Bucket, Key: a.Object.Key,
//				ETag: a.Object.ETag, VersionID: a.Object.VersionID, Size: a.Object.Size, ContentType: a.MIMEType})
//		},
//		Reader: bucket, // *s3store.Bucket
//	}
//
// With Objects set, an asset whose row references an object is served as:
//
//	asset://project/{project}/asset/{asset}          the joined bundle: its fields, then its object
//	asset://project/{project}/asset/{asset}/object   its object alone ([ObjectTemplate])
//
// Each item is enforced by its own storage. The fields come from the row,
// read under row-level security and pinned to the row's version, as without
// Objects. The object is pinned by the ETag and version id stored in the
// row, so the object store itself refuses an object overwritten after the
// row was written (for S3, a 412 that the gateway reports as read_failed),
// while the fields item survives. Both items are authorized by
// [Store.Policy] as representations of the asset, so a grant revoked in
// PostgreSQL hides or denies both.
type Objects struct {
	// Target returns the target that Reader reads for the object that
	// a.Object references, with uri as the target's URI. a.Object is never
	// nil; a.MIMEType is the asset's MIME type, which is the object's too.
	// Return an Unavailable error (core.Unavailable) for a reference the
	// host does not serve (another bucket, no ETag or version id to pin):
	// the joined bundle then holds the fields alone and the object URI is
	// unavailable. Any other error fails the plan.
	Target func(uri string, a Asset) (core.ResourceTarget, error)
	// Reader reads the targets that Target returns. It must enforce the
	// identity the target pins.
	Reader core.Reader
}

func (o *Objects) check() error {
	switch {
	case o.Target == nil:
		return core.NewConfigError("Options.Objects.Target", "is nil", nil)
	case o.Reader == nil:
		return core.NewConfigError("Options.Objects.Reader", "is nil", nil)
	}
	return nil
}

// objectRef carries the object store's own target inside the store's
// private authorization data: its representation and authorization data.
type objectRef struct {
	Repr string          `json:"r"`
	Data json.RawMessage `json:"d,omitempty"`
}

// errNoObject is the private cause for an asset without an object
// reference, or a store that does not join objects.
var errNoObject = errors.New("postgres: the asset references no object the store serves")

// ObjectURI returns the canonical URI of a's object representation.
func (a Asset) ObjectURI() string { return a.FieldsURI() + "/object" }

// ObjectTarget returns the target of the object that a references, pinned
// by the row's ETag and version id (through [Objects].Target) and planned
// as a representation of a, so that [Store.Policy] authorizes it with the
// asset's grants. It returns an Unavailable error when a references no
// object or the store has no [Options].Objects.
func (s *Store) ObjectTarget(a Asset) (core.ResourceTarget, error) {
	if s.objects == nil || a.Object == nil {
		return core.ResourceTarget{}, core.Unavailable(errNoObject)
	}
	inner, err := s.objects.Target(a.ObjectURI(), a)
	if err != nil {
		return core.ResourceTarget{}, err
	}
	if inner.IsZero() {
		return core.ResourceTarget{}, errors.New("postgres: Objects.Target returned a zero target")
	}
	return newTarget(a.ObjectURI(), ref{Kind: ReprObject, Project: a.Project, Asset: a.ID, Version: a.Version,
		Object: &objectRef{Repr: inner.Representation(), Data: inner.AuthorizationData()}})
}

// ObjectBinding returns the binding of [ObjectTemplate]: one asset's object,
// planned from its row and read by [Objects].Reader. An asset without an
// object reference is unavailable. It needs [Options].Objects; without it
// every read is unavailable.
func (s *Store) ObjectBinding() core.ResourceBinding {
	return core.ResourceBinding{
		Definition: core.ResourceDefinition{URITemplate: ObjectTemplate, Name: "asset-object",
			Title: "Asset object", Description: "The object an asset references, pinned by the version its row records"},
		Resolver: s.assetResolver(ReprObject),
		Reader:   s.Reader(),
	}
}

// readObject reads an object target through the host's reader, with the
// object store's own target unwrapped from t.
func (s *Store) readObject(ctx context.Context, t core.ResourceTarget, r ref) (core.ResourcePayload, error) {
	if s.objects == nil || r.Object == nil {
		return core.ResourcePayload{}, ErrBadTarget
	}
	inner, err := core.NewResourceTarget(t.URI(), r.Object.Repr, r.Object.Data)
	if err != nil {
		return core.ResourcePayload{}, ErrBadTarget
	}
	return s.objects.Reader.Read(ctx, inner)
}
