// Package s3store serves S3 objects as MCP resources for the gateway in
// package core.
//
// The package is named s3store, not s3, because every caller also imports
// the SDK's s3 package to build the [*s3.Client] that [OpenBucket] takes.
//
// A [Bucket] is one configured bucket. Its resolver helpers ([Bucket.Head],
// [Bucket.List]) plan objects from identity metadata only (ETag, version id,
// size, content type), never bodies; [NewObjectTarget] pins an object that a
// caller already knows (for example from a database row) as a
// [core.ResourceTarget] whose private authorization data carries that
// identity. [Bucket.Read], through [core.ItemReader], is the [core.Reader]: one GET per item, conditional
// on the planned ETag (If-Match) and version id (a [core.ObjectRef] that
// pins neither is pinned first, by one HEAD after the gateway's decision,
// unless it is Unpinned), ranged by the item's Limit,
// so that S3 itself refuses a changed or revoked object and the bytes fetched
// never exceed the limit. [Bucket.Binding] is a template binding over a
// configured key prefix; [Bucket.KeyBindings] serves nested keys under a
// prefix of literal and captured segments as a family of whole-segment
// templates, one per depth ([KeyFamily]), and either, with a [KeyGrant]
// ([KeyFamily].Grant, [Bucket.GrantedBinding]), serves only the keys the
// grant grants, deciding before any request; [Bucket.ListingBinding] lists a
// family's objects under one prefix as a bundle ([KeyListing]), gated by the
// family's grant asked once for the prefix before the LIST; [Bucket.Read]
// also reads the [core.ObjectRef] items that a database row references (a
// host registers the bucket with core.WithObjectSource under the name the
// rows' references give); and [Bucket.Check] verifies the bucket at
// start-up.
//
// A bucket opened with [Options].TypeByKey types every object it plans by
// one rule: a declared type (a row's object_mime), else
// its key's extension, never the Content-Type it was stored with, so that a
// listing (which has no type per object) and a read of the same object
// agree without a HEAD per object; otherwise the stored type comes first
// ([ContentTypeOf]).
//
// Buckets and key prefixes are the host's configuration: a template capture
// only ever becomes part of a key under the configured prefix, never a bucket
// name, and a key with an empty, "." or ".." segment, a backslash or a
// control character is refused at planning ([KeyError]), so no request can
// reach a key other than the one planned.
//
// Access is S3's: with [Options.Client] every HEAD and GET is signed with the
// credentials of the principal that [Options.Principal] returns for the
// request; [Options.Check] is an optional host check made immediately before
// each GET and after each planning HEAD, so that planning refuses what the
// read would refuse.
//
// An S3 that is down or shedding load (5xx, throttling, a request that could
// not be sent; after the SDK's bounded retries) is a [core.FailureOutage]: a read
// that meets it while planning fails with the retryable
// [core.FailureOutage], and a body read that meets it is that item's
// read_failed.
//
// [NewClient] builds an [*s3.Client] that works against AWS S3, MinIO,
// versitygw and other S3-compatible servers; the reference command and the
// integration tests use it.
package s3store
