package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// maxRepresentationBytes bounds a representation label.
const maxRepresentationBytes = 256

// ResourceTarget is one immutable identity that the gateway passes, unchanged,
// to policy and storage: the canonical wire URI, the representation (part of
// the host's policy and storage identity) and optional private authorization
// JSON that never reaches a client. The zero value is invalid; build one with
// [NewResourceTarget].
type ResourceTarget struct {
	uri   string
	repr  string
	authz []byte
	obj   *ObjectRef // set by WithObject; never modified
	// version is set by WithVersion, for audit records only.
	version string
	// inline is set by WithContent; never modified, never part of the
	// identity.
	inline *inline
}

// NewResourceTarget validates and copies a target. uri must be a valid
// absolute URI outside the reserved mcp-warning scheme; representation is a
// non-empty UTF-8 label of at most 256 bytes; authorizationData is nil or a
// JSON value of at most 64 KiB, kept private. The request's MaxURIBytes is
// checked by the gateway when the plan is used.
func NewResourceTarget(uri, representation string, authorizationData json.RawMessage) (ResourceTarget, error) {
	if err := checkURI(uri, maxURIHardLimit); err != nil {
		return ResourceTarget{}, fmt.Errorf("core: target URI: %w", err)
	}
	if representation == "" || len(representation) > maxRepresentationBytes || !utf8.ValidString(representation) {
		return ResourceTarget{}, fmt.Errorf("core: target representation must be 1-%d bytes of UTF-8", maxRepresentationBytes)
	}
	t := ResourceTarget{uri: uri, repr: representation}
	if authorizationData != nil {
		if len(authorizationData) > maxAuthorizationBytes {
			return ResourceTarget{}, fmt.Errorf("core: authorization data exceeds %d bytes", maxAuthorizationBytes)
		}
		if !json.Valid(authorizationData) {
			return ResourceTarget{}, fmt.Errorf("core: authorization data is not valid JSON")
		}
		t.authz = bytes.Clone(authorizationData)
	}
	return t, nil
}

// URI returns the target's canonical wire URI.
func (t ResourceTarget) URI() string { return t.uri }

// Representation returns the target's representation label.
func (t ResourceTarget) Representation() string { return t.repr }

// AuthorizationData returns a copy of the private authorization JSON, or nil.
func (t ResourceTarget) AuthorizationData() json.RawMessage { return bytes.Clone(t.authz) }

// WithVersion returns t labelled with the version storage planned it at
// (a row's version column, say), which an audit record names beside the
// item; the gateway decides and reads nothing by it. v is UTF-8 of at most
// 1 KiB.
func (t ResourceTarget) WithVersion(v string) (ResourceTarget, error) {
	if t.IsZero() {
		return ResourceTarget{}, fmt.Errorf("core: version on a zero target")
	}
	if len(v) > maxObjectFieldBytes || !utf8.ValidString(v) {
		return ResourceTarget{}, fmt.Errorf("core: target version must be UTF-8 of at most %d bytes", maxObjectFieldBytes)
	}
	t.version = v
	return t, nil
}

// Version returns the version [ResourceTarget.WithVersion] set, or "".
func (t ResourceTarget) Version() string { return t.version }

// IsZero reports whether t was not built by [NewResourceTarget].
func (t ResourceTarget) IsZero() bool { return t.uri == "" }
