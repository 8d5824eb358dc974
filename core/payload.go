package core

import (
	"bytes"
	"unicode/utf8"

	"go.phpboyscout.uk/mcp/resources/internal/mediatype"
)

// ResourcePayload is the body a [Reader] returns for one target: text or a
// blob, with its own MIME type. Explicit empty text and empty blobs are
// valid; the zero value is not. The gateway binds the payload to its
// authorized target, so a payload carries no URI.
type ResourcePayload struct {
	mimeType string
	text     string
	blob     []byte
	kind     payloadKind
	served   *ObjectRef // WithObjectVersion
}

// WithObjectVersion returns p recording that it was served from the stored
// object version whose ETag and, in a versioned bucket, version id ref
// holds (its other fields may be empty). It is for audit records (an
// object read unpinned, or pinned by the source as it read, is served at a
// version its plan does not name): the gateway passes it to observers
// ([Phase].Served); the client never sees it.
func (p ResourcePayload) WithObjectVersion(ref ObjectRef) ResourcePayload {
	p.served = &ref
	return p
}

// ObjectVersion returns the object version [ResourcePayload.WithObjectVersion]
// recorded, or the zero [ObjectRef].
func (p ResourcePayload) ObjectVersion() ObjectRef {
	if p.served == nil {
		return ObjectRef{}
	}
	return *p.served
}

type payloadKind uint8

const (
	payloadNone payloadKind = iota
	payloadText
	payloadBlob
)

// TextPayload returns a text payload. text must be valid UTF-8 and mimeType
// a valid media type, or the gateway reports the item as invalid_content.
func TextPayload(mimeType, text string) ResourcePayload {
	return ResourcePayload{mimeType: mimeType, text: text, kind: payloadText}
}

// BlobPayload returns a binary payload holding a copy of data (nil is an
// explicit empty blob).
func BlobPayload(mimeType string, data []byte) ResourcePayload {
	b := bytes.Clone(data)
	if b == nil {
		b = []byte{}
	}
	return ResourcePayload{mimeType: mimeType, blob: b, kind: payloadBlob}
}

// MIMEType returns the payload's MIME type.
func (p ResourcePayload) MIMEType() string { return p.mimeType }

// IsBlob reports whether the payload is binary.
func (p ResourcePayload) IsBlob() bool { return p.kind == payloadBlob }

// IsZero reports whether p was not built by [TextPayload] or [BlobPayload].
func (p ResourcePayload) IsZero() bool { return p.kind == payloadNone }

// Text returns the text of a text payload.
func (p ResourcePayload) Text() string { return p.text }

// Blob returns a copy of the bytes of a blob payload.
func (p ResourcePayload) Blob() []byte { return bytes.Clone(p.blob) }

// Len returns the decoded payload size in bytes.
func (p ResourcePayload) Len() int64 {
	if p.kind == payloadBlob {
		return int64(len(p.blob))
	}
	return int64(len(p.text))
}

// valid reports whether the payload keeps the construction rules.
func (p ResourcePayload) valid() bool {
	if p.kind == payloadNone || !mediatype.Valid(p.mimeType) {
		return false
	}
	return p.kind == payloadBlob || utf8.ValidString(p.text)
}
