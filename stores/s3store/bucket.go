package s3store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/mediatype"
)

// Options configure [OpenBucket]. A nil *Options selects every default.
type Options struct {
	// Caller returns who is asking; it is called on every resolve and
	// read. Nil means [core.CallerFrom] (what [core.WithCaller] put into
	// the request context).
	Caller func(context.Context) (core.Caller, error)
	// Client returns the client whose credentials sign principal's HEAD,
	// listing and GET requests, so that S3 itself enforces that principal's
	// access. It must be cheap (cache clients, which are safe for
	// concurrent use) and return core.FailureUnavailable for a principal that has
	// no access at all. Nil means the client given to OpenBucket signs
	// every request, for every principal.
	Client func(ctx context.Context, principal string) (*s3.Client, error)
	// Check is an optional host check made immediately before each GET,
	// after the principal's client is known, and after each [Bucket.Head]
	// that plans a read, so that an object the check refuses is
	// unavailable while planning exactly as a missing one is (a plan that
	// saw it would tell a subscriber that it exists); return
	// core.FailureUnavailable to deny. Any other error fails the item as
	// read_failed (the plan, when Head met it).
	Check func(ctx context.Context, principal string, obj Object) error
	// MaxListKeys bounds the objects one List call returns. Zero means 100;
	// more than 1000 (one S3 listing page) is clamped to 1000.
	MaxListKeys int
	// TypeByKey types every object this bucket plans by one rule:
	// a declared type (a row's object_mime), else its key's extension,
	// else application/octet-stream, and never the Content-Type it was
	// stored with, so that a listing ([Bucket.ListingBinding], which
	// needs it) and a read of the same object always agree and no HEAD
	// is sent per listed object. Without it an object is served as
	// [ContentTypeOf] says: the stored type first.
	TypeByKey bool
}

// Bucket is one configured bucket: resolver helpers and the reader of its
// objects. A Bucket is safe for concurrent use.
type Bucket struct {
	client    *s3.Client
	name      string
	caller    func(context.Context) (core.Caller, error)
	clientFor func(ctx context.Context, principal string) (*s3.Client, error)
	check     func(ctx context.Context, principal string, obj Object) error
	maxList   int
	typeByKey bool
}

// OpenBucket returns the store of bucket, whose requests client sends
// unless opts.Client supplies a client per principal. It makes no request;
// ctx is accepted for symmetry with other stores and future use. It panics
// on a nil client (a programming error) and returns a *core.ConfigError for
// an invalid bucket name or option.
func OpenBucket(ctx context.Context, client *s3.Client, bucket string, opts *Options) (*Bucket, error) {
	if client == nil {
		panic("s3store: OpenBucket with a nil *s3.Client")
	}
	if err := checkBucket(bucket); err != nil {
		return nil, core.ConfigPath{Field: "bucket"}.Reject("bucket name "+err.Error(), nil)
	}
	b := &Bucket{client: client, name: bucket, caller: core.CallerFrom, maxList: 100}
	if opts != nil {
		if opts.Caller != nil {
			b.caller = opts.Caller
		}
		b.clientFor, b.check, b.typeByKey = opts.Client, opts.Check, opts.TypeByKey
		switch {
		case opts.MaxListKeys < 0:
			return nil, core.ConfigPath{Field: "MaxListKeys"}.Reject("must not be negative", nil)
		case opts.MaxListKeys > 1000:
			b.maxList = 1000
		case opts.MaxListKeys > 0:
			b.maxList = opts.MaxListKeys
		}
	}
	return b, nil
}

// Name returns the bucket's name.
func (b *Bucket) Name() string { return b.name }

// access returns the principal asking in ctx and the client that signs its
// requests.
func (b *Bucket) access(ctx context.Context) (string, *s3.Client, error) {
	who, err := b.caller(ctx)
	if err != nil {
		return "", nil, err
	}
	principal := who.Principal
	if b.clientFor == nil {
		return principal, b.client, nil
	}
	c, err := b.clientFor(ctx, principal)
	if err != nil {
		return "", nil, err
	}
	if c == nil {
		return "", nil, core.NewFailure(core.FailureUnavailable, errors.New("s3store: Options.Client returned no client"))
	}
	return principal, c, nil
}

// Head returns the identity of the current version of key, read with HEAD
// under the requesting principal's access: ETag, version id (in a versioned
// bucket), size and content type; never the body. A key that [CheckKey]
// refuses is a *KeyError without any request; 403 and 404 are
// core.FailureUnavailable, and so is an object that Options.Check refuses; an S3
// that is down or throttling is core.FailureOutage.
func (b *Bucket) Head(ctx context.Context, key string) (Object, error) {
	if err := CheckKey(key); err != nil {
		return Object{}, err
	}
	principal, c, err := b.access(ctx)
	if err != nil {
		return Object{}, err
	}
	obj, err := b.head(ctx, c, key)
	if err != nil {
		return Object{}, err
	}
	if b.check != nil {
		if err := b.check(ctx, principal, obj); err != nil {
			return Object{}, err
		}
	}
	return obj, nil
}

// head sends one HEAD of key with c and returns the identity of its
// current version, as [Bucket.Head] describes, without Options.Check.
func (b *Bucket) head(ctx context.Context, c *s3.Client, key string) (Object, error) {
	out, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.name), Key: aws.String(key)})
	if err != nil {
		return Object{}, classify(err)
	}
	if aws.ToBool(out.DeleteMarker) {
		return Object{}, core.NewFailure(core.FailureUnavailable, errors.New("s3store: current version is a delete marker"))
	}
	obj := Object{
		Bucket:      b.name,
		Key:         key,
		ETag:        aws.ToString(out.ETag),
		VersionID:   aws.ToString(out.VersionId),
		Size:        -1,
		ContentType: mediaType(aws.ToString(out.ContentType)),
	}
	if out.ContentLength != nil {
		obj.Size = *out.ContentLength
	}
	if obj.VersionID == "null" {
		obj.VersionID = "" // unversioned bucket: pin by ETag alone
	}
	if obj.ETag == "" {
		return Object{}, fmt.Errorf("%w: HEAD returned no ETag", errServer)
	}
	return obj, nil
}

// List returns the identities of at most Options.MaxListKeys objects whose
// keys start with prefix, in key order, from one ListObjectsV2 page under
// the requesting principal's access: ETag and size, never bodies. A listing
// reports neither version id nor content type: the objects are pinned by
// ETag, and ContentType is the type the key's extension names (see
// [ContentTypeOf]), or empty (served as application/octet-stream); with
// Options.TypeByKey, by its key alone; without a request per object. Keys that CheckKey refuses are left out.
// truncated reports that more objects exist under prefix.
func (b *Bucket) List(ctx context.Context, prefix string) (objs []Object, truncated bool, err error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, false, err
	}
	_, c, err := b.access(ctx)
	if err != nil {
		return nil, false, err
	}
	out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
		Bucket: aws.String(b.name), Prefix: aws.String(prefix), MaxKeys: aws.Int32(int32(b.maxList)),
	})
	if err != nil {
		return nil, false, classify(err)
	}
	for _, o := range out.Contents {
		key := aws.ToString(o.Key)
		if !strings.HasPrefix(key, prefix) || CheckKey(key) != nil || aws.ToString(o.ETag) == "" {
			continue
		}
		if len(objs) == b.maxList {
			return objs, true, nil
		}
		ct := mediatype.ByExtension(key)
		if b.typeByKey {
			ct = keyContentType(key, "")
		}
		obj := Object{Bucket: b.name, Key: key, ETag: aws.ToString(o.ETag), Size: -1, ContentType: ct}
		if o.Size != nil {
			obj.Size = *o.Size
		}
		objs = append(objs, obj)
	}
	return objs, aws.ToBool(out.IsTruncated), nil
}

// Read reads the object that item's target pins in exactly one GET, under
// the requesting principal's access: conditional on the planned ETag
// (If-Match) and version id, and ranged to the first item.Limit+1 bytes
// (only the first byte when the plan already knows the object is over the
// limit). The target either carries a [core.ObjectRef] (a key of this
// bucket, as a database row references it; the gateway routes such an
// item to the bucket registered with core.WithObjectSource under the
// ref's source; with neither ETag nor version id it first pins the
// current object with one HEAD, after the gateway's decision and under
// the item's deadline, and then GETs that ETag or nothing, so two
// requests, unless the ref is Unpinned, when it reads the current object
// as it is; with no MIME type it takes the key extension's, or for a ref
// that pins nothing the stored one, see [ContentTypeOf] and
// Options.TypeByKey) or comes from
// [NewObjectTarget] with this bucket's name. core.ItemReader(b.Read) is
// the bucket's core.Reader.
// The returned ETag, version id and Content-Range total are checked against
// the plan. It returns:
//
//   - a text payload for a textual MIME type (see the package doc), else a
//     blob, with the planned MIME type; an empty object is empty text or an
//     empty blob (a 416 answer to the range is an empty object);
//   - &core.TooLargeError{Size: total} when the object is over the limit, without
//     reading the rest of the body;
//   - core.FailureUnavailable for 403, 404 (to the pinning HEAD too), a missing
//     version (or one S3 cannot parse), a delete marker, or a denial by
//     Options.Check or Options.Client;
//   - an error wrapping ErrChanged when S3 answers 412 or reports another
//     identity;
//   - other errors (throttling and 5xx after the SDK's bounded retries,
//     connection failures, a short body) as they are, which the gateway
//     reports as read_failed, or timeout when the item's deadline passed.
//
// Text that is not valid UTF-8 is returned as a text payload all the same,
// so the gateway reports invalid_content rather than a retryable failure.
func (b *Bucket) Read(ctx context.Context, item core.ReadItem) (core.ResourcePayload, error) {
	obj, declared, err := b.objectOf(item.Target)
	if err != nil {
		return core.ResourcePayload{}, err
	}
	principal, c, err := b.access(ctx)
	if err != nil {
		return core.ResourcePayload{}, err
	}
	planned := obj // the identity the plan gave, which types the payload
	if ref, ok := item.Target.Object(); ok && obj.ETag == "" && obj.VersionID == "" && !ref.Unpinned {
		// A reference that pins nothing: take the current identity now,
		// after the decision, and read it or nothing.
		if obj, err = b.pin(ctx, c, obj); err != nil {
			return core.ResourcePayload{}, err
		}
	}
	if b.check != nil {
		if err := b.check(ctx, principal, obj); err != nil {
			return core.ResourcePayload{}, err
		}
	}
	limit := max(item.Limit, 0)
	in := &s3.GetObjectInput{Bucket: aws.String(obj.Bucket), Key: aws.String(obj.Key)}
	if obj.ETag != "" {
		in.IfMatch = aws.String(obj.ETag)
	}
	if obj.VersionID != "" {
		in.VersionId = aws.String(obj.VersionID)
	}
	if obj.Size > limit {
		in.Range = aws.String("bytes=0-0") // access, identity and total only
	} else {
		in.Range = aws.String("bytes=0-" + strconv.FormatInt(min(limit, math.MaxInt64-1), 10))
	}
	out, err := c.GetObject(ctx, in)
	if err != nil {
		if obj.VersionID != "" {
			err = classifyVersioned(err)
		} else {
			err = classify(err)
		}
		if errors.Is(err, errEmptyRange) {
			if obj.Size > 0 {
				return core.ResourcePayload{}, fmt.Errorf("%w: the planned object was not empty", ErrChanged)
			}
			return payload(b.contentType(planned, declared, ""), nil).WithObjectVersion(core.ObjectRef{ETag: obj.ETag, VersionID: obj.VersionID}), nil
		}
		return core.ResourcePayload{}, err
	}
	defer out.Body.Close()
	if err := sameIdentity(obj, out); err != nil {
		return core.ResourcePayload{}, err
	}
	total, err := objectTotal(out)
	if err != nil {
		return core.ResourcePayload{}, err
	}
	if obj.Size >= 0 && total >= 0 && total != obj.Size {
		return core.ResourcePayload{}, fmt.Errorf("%w: size differs from the plan", ErrChanged)
	}
	if total > limit {
		return core.ResourcePayload{}, &core.TooLargeError{Size: total}
	}
	data, err := readBody(out.Body, aws.ToInt64(out.ContentLength), out.ContentLength != nil, limit)
	if err != nil {
		return core.ResourcePayload{}, err
	}
	if total >= 0 && int64(len(data)) != total {
		return core.ResourcePayload{}, fmt.Errorf("%w: body of %d bytes for an object of %d", errServer, len(data), total)
	}
	// The version served: what S3 answered (the plan's or the pin's, which
	// sameIdentity checked, or for an unpinned ref the current one).
	served := core.ObjectRef{ETag: cmp.Or(aws.ToString(out.ETag), obj.ETag), VersionID: cmp.Or(aws.ToString(out.VersionId), obj.VersionID)}
	return payload(b.contentType(planned, declared, aws.ToString(out.ContentType)), data).WithObjectVersion(served), nil
}

// pin returns obj, a reference's object that pins no identity, pinned to
// the ETag of its current version as one HEAD with c returns it (not its
// version id, so that an object replaced before the GET is refused, not
// served from the bucket's history), with the HEAD's size where obj's is
// unknown. Its errors are [Bucket.Head]'s.
func (b *Bucket) pin(ctx context.Context, c *s3.Client, obj Object) (Object, error) {
	cur, err := b.head(ctx, c, obj.Key)
	if err != nil {
		return Object{}, err
	}
	obj.ETag = cur.ETag
	if obj.Size < 0 {
		obj.Size = cur.Size
	}
	return obj, nil
}

// objectOf returns the object t pins: from its [core.ObjectRef] (a key of
// this bucket; declared reports that the ref's MIME type, possibly empty,
// is to be resolved against the stored one) or from [NewObjectTarget]'s
// authorization data, which must name this bucket.
func (b *Bucket) objectOf(t core.ResourceTarget) (obj Object, declared bool, err error) {
	if ref, ok := t.Object(); ok {
		if err := CheckKey(ref.Key); err != nil {
			return Object{}, false, core.NewFailure(core.FailureUnavailable, err)
		}
		return Object{Bucket: b.name, Key: ref.Key, ETag: ref.ETag, VersionID: ref.VersionID, Size: ref.Size, ContentType: ref.MIMEType}, true, nil
	}
	obj, err = targetObject(t)
	if err != nil {
		return Object{}, false, err
	}
	if obj.Bucket != b.name {
		return Object{}, false, errors.New("s3store: target pins an object of another bucket")
	}
	return obj, false, nil
}

// contentType is the MIME type of the payload of obj: the planned one, or
// for an object reference the one typeOf chooses from the declared type
// and, for a reference that pins no identity (the current object), the
// stored one.
func (b *Bucket) contentType(obj Object, declared bool, stored string) string {
	if !declared {
		return obj.ContentType
	}
	if obj.ETag != "" || obj.VersionID != "" {
		stored = ""
	}
	return mediaType(b.typeOf(obj.Key, obj.ContentType, stored))
}

// payload builds text or a blob by MIME type; nil data is the empty body.
func payload(ct string, data []byte) core.ResourcePayload {
	if isText(ct) {
		return core.TextPayload(ct, string(data))
	}
	return core.BlobPayload(ct, data)
}

// sameIdentity checks the ETag and version id S3 returned against the plan.
func sameIdentity(obj Object, out *s3.GetObjectOutput) error {
	if obj.ETag != "" && out.ETag != nil && normETag(*out.ETag) != normETag(obj.ETag) {
		return fmt.Errorf("%w: ETag differs from the plan", ErrChanged)
	}
	if obj.VersionID != "" && out.VersionId != nil && *out.VersionId != obj.VersionID {
		return fmt.Errorf("%w: version id differs from the plan", ErrChanged)
	}
	return nil
}

// normETag drops a weak prefix and surrounding quotes, which servers differ
// on.
func normETag(e string) string {
	e = strings.TrimPrefix(e, "W/")
	return strings.TrimSuffix(strings.TrimPrefix(e, `"`), `"`)
}

// objectTotal returns the object's full size from Content-Range (206), or
// from Content-Length when the server ignored the range (200); -1 when
// neither says.
func objectTotal(out *s3.GetObjectOutput) (int64, error) {
	if cr := aws.ToString(out.ContentRange); cr != "" {
		total, ok := contentRangeTotal(cr)
		if !ok {
			return 0, fmt.Errorf("%w: malformed Content-Range", errServer)
		}
		return total, nil
	}
	if out.ContentLength != nil {
		return *out.ContentLength, nil
	}
	return -1, nil
}

// contentRangeTotal parses "bytes FIRST-LAST/TOTAL" or "bytes */TOTAL";
// a total of "*" is -1.
func contentRangeTotal(cr string) (int64, bool) {
	rest, ok := strings.CutPrefix(cr, "bytes ")
	if !ok {
		return 0, false
	}
	rng, total, ok := strings.Cut(rest, "/")
	if !ok || rng == "" {
		return 0, false
	}
	if total == "*" {
		return -1, true
	}
	n, err := strconv.ParseInt(total, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// readBody reads a body of at most limit bytes: exactly length bytes when
// the length is known (it is checked against limit before any allocation),
// else through a limit of limit+1 bytes.
func readBody(body io.Reader, length int64, known bool, limit int64) ([]byte, error) {
	if known {
		if length < 0 || length > limit {
			return nil, &core.TooLargeError{Size: -1}
		}
		data := make([]byte, length)
		if _, err := io.ReadFull(body, data); err != nil {
			return nil, fmt.Errorf("%w: read body: %w", errServer, err)
		}
		return data, nil
	}
	data, err := io.ReadAll(io.LimitReader(body, min(limit, math.MaxInt64-1)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read body: %w", errServer, err)
	}
	if int64(len(data)) > limit {
		return nil, &core.TooLargeError{Size: -1}
	}
	return data, nil
}
