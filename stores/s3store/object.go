package s3store

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/mediatype"
)

// objectRepresentation is the representation of every target this package
// builds: the object's bytes, as text or a blob by its MIME type.
const objectRepresentation = "s3-object"

// maxKeyBytes is the longest object key S3 accepts, in bytes.
const maxKeyBytes = 1024

// Object is the identity of one object version as a plan pins it. It is
// identity metadata only: never a body.
type Object struct {
	// Bucket is the bucket's name.
	Bucket string `json:"bucket"`
	// Key is the object key, byte for byte.
	Key string `json:"key"`
	// ETag is the entity tag as S3 reports it (quotes included, or not);
	// the read is conditional on it (If-Match). Empty means the read is not
	// pinned to an ETag, which needs a VersionID instead.
	ETag string `json:"etag,omitempty"`
	// VersionID pins a version in a versioned bucket; empty means the
	// current version, pinned by ETag alone.
	VersionID string `json:"versionId,omitempty"`
	// Size is the object's size in bytes, or -1 when unknown. A known size
	// must match what S3 reports at read time.
	Size int64 `json:"size"`
	// ContentType is the object's MIME type; it decides whether the item is
	// text or a blob. Empty means application/octet-stream.
	ContentType string `json:"contentType,omitempty"`
}

// The key rules, each a [KeyError]'s description. Keys are refused when
// some S3-compatible server might map them to another key (path
// normalization, backslash separators) or cannot represent them faithfully.
const (
	keyEmpty        = "key is empty"
	keyTooLong      = "key exceeds 1024 bytes" // maxKeyBytes
	keyInvalidUTF8  = "key is not valid UTF-8"
	keyControl      = "key holds a control character" // an ASCII one, NUL and DEL included
	keyBackslash    = "key holds a backslash"
	keyEmptySegment = "key has an empty segment" // it starts or ends with '/' or holds "//"
	keyDotSegment   = `key has a "." or ".." segment`
)

// KeyError reports an object key, or a key prefix, that the store refuses.
// It never quotes the key, which may be hostile or private.
type KeyError struct {
	reason string // the rule that was broken, one of the key rules
}

// Error describes the broken rule without quoting the key.
func (e *KeyError) Error() string { return "s3store: " + e.reason }

// CheckKey reports whether key is one the store plans and reads: 1 to
// 1024 bytes of UTF-8 without control characters or backslashes,
// whose '/'-separated segments are neither empty nor "." nor "..". It
// returns a *KeyError otherwise.
func CheckKey(key string) error {
	switch {
	case key == "":
		return &KeyError{keyEmpty}
	case len(key) > maxKeyBytes:
		return &KeyError{keyTooLong}
	case !utf8.ValidString(key):
		return &KeyError{keyInvalidUTF8}
	}
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case c < 0x20 || c == 0x7f:
			return &KeyError{keyControl}
		case c == '\\':
			return &KeyError{keyBackslash}
		}
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch seg {
		case "":
			return &KeyError{keyEmptySegment}
		case ".", "..":
			return &KeyError{keyDotSegment}
		}
	}
	return nil
}

// checkPrefix accepts "" or a key-like prefix that ends with '/'.
func checkPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if !strings.HasSuffix(prefix, "/") {
		return &KeyError{keyEmptySegment}
	}
	return CheckKey(strings.TrimSuffix(prefix, "/"))
}

// checkBucket accepts S3's bucket naming rules: 3 to 63 lowercase letters,
// digits, '.' and '-', starting and ending with a letter or digit.
func checkBucket(name string) error {
	if len(name) < 3 || len(name) > 63 {
		return errors.New("must be 3 to 63 characters")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && c != '.' && c != '-' || (i == 0 || i == len(name)-1) && !alnum {
			return errors.New("must be lowercase letters, digits, '.' and '-', starting and ending with a letter or digit")
		}
	}
	if strings.Contains(name, "..") {
		return errors.New("must not hold two periods in a row")
	}
	return nil
}

// checkObject validates an identity before it is planned or read.
func checkObject(o Object) error {
	if err := checkBucket(o.Bucket); err != nil {
		return fmt.Errorf("s3store: bucket name %w", err)
	}
	if err := CheckKey(o.Key); err != nil {
		return err
	}
	if o.ETag == "" && o.VersionID == "" {
		return errors.New("s3store: an object identity needs an ETag or a version id")
	}
	if o.Size < -1 {
		return errors.New("s3store: object size must be -1 (unknown) or more")
	}
	if !utf8.ValidString(o.ETag) || !utf8.ValidString(o.VersionID) || !utf8.ValidString(o.ContentType) {
		return errors.New("s3store: object identity is not valid UTF-8")
	}
	return nil
}

// NewObjectTarget returns the target that pins obj for uri: a target of
// representation "s3-object" whose private authorization data carries obj (never
// shown to a client) and that [Bucket.Read] reads. Use it to plan an object
// whose identity the caller already has, such as a database row that
// references it by bucket, key, ETag and version id; a binding that joins
// rows and objects plans each object this way.
//
// obj needs a valid bucket name, a key that [CheckKey] accepts, and an ETag
// or a VersionID (or both); Size is -1 when unknown. An unusable
// ContentType is replaced by application/octet-stream.
func NewObjectTarget(uri string, obj Object) (core.ResourceTarget, error) {
	if err := checkObject(obj); err != nil {
		return core.ResourceTarget{}, err
	}
	obj.ContentType = mediaType(obj.ContentType)
	authz, err := json.Marshal(obj)
	if err != nil {
		return core.ResourceTarget{}, fmt.Errorf("s3store: encode object identity: %w", err)
	}
	return core.NewResourceTarget(uri, objectRepresentation, authz)
}

// errNotObjectTarget is the cause when a target was not built by
// NewObjectTarget.
var errNotObjectTarget = errors.New("s3store: target was not built by NewObjectTarget")

// targetObject recovers the identity that NewObjectTarget put into t.
func targetObject(t core.ResourceTarget) (Object, error) {
	if t.Representation() != objectRepresentation {
		return Object{}, errNotObjectTarget
	}
	raw := t.AuthorizationData()
	if raw == nil {
		return Object{}, errNotObjectTarget
	}
	var o Object
	if err := json.Unmarshal(raw, &o); err != nil {
		return Object{}, fmt.Errorf("%w: %v", errNotObjectTarget, err)
	}
	if err := checkObject(o); err != nil {
		return Object{}, err
	}
	return o, nil
}

// octetStream is the MIME type of an object without a usable one.
const octetStream = "application/octet-stream"

// mediaType returns ct when it is a usable MIME type, else octetStream.
func mediaType(ct string) string {
	if ct == "" || len(ct) > 255 {
		return octetStream
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !strings.Contains(mt, "/") {
		return octetStream
	}
	return ct
}

// isText reports whether objects of MIME type ct are served as text: text/*,
// JSON, XML, YAML, JavaScript and the +json/+xml/+yaml structured suffixes,
// unless a charset parameter names something other than UTF-8 (or its
// subset US-ASCII), in which case the bytes are served as a blob.
func isText(ct string) bool { return mediatype.IsText(ct) }
