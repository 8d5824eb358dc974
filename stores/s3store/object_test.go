package s3store

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"go.phpboyscout.uk/mcp/resources/core"
)

// TestCheckKeyRefusesKeysAServerCouldMapElsewhere proves the key rules:
// keys that path normalization or a backslash separator could turn into
// another key are refused with their reason; hostile-looking but exact keys
// are accepted.
func TestCheckKeyRefusesKeysAServerCouldMapElsewhere(t *testing.T) {
	refused := []struct {
		key  string
		want string
	}{
		{"", keyEmpty},
		{strings.Repeat("a", maxKeyBytes+1), keyTooLong},
		{"a\xffb", keyInvalidUTF8},
		{"a\x00b", keyControl},
		{"a\nb", keyControl},
		{"a\x7fb", keyControl},
		{`a\..\b`, keyBackslash},
		{"/a", keyEmptySegment},
		{"a/", keyEmptySegment},
		{"a//b", keyEmptySegment},
		{"..", keyDotSegment},
		{"a/../b", keyDotSegment},
		{"a/./b", keyDotSegment},
		{"../secret", keyDotSegment},
		{"docs/..", keyDotSegment},
	}
	for _, tt := range refused {
		err := CheckKey(tt.key)
		var ke *KeyError
		if !errors.As(err, &ke) || ke.reason != tt.want {
			t.Errorf("CheckKey(%q) = %v, want reason %v", tt.key, err, tt.want)
			continue
		}
		if len(tt.key) > 3 && strings.Contains(err.Error(), tt.key) {
			t.Errorf("KeyError text %q quotes the key", err.Error())
		}
	}
	for _, key := range []string{"a b.txt", "résumé/ü 名前", "100%", "a+b", "what?", "#frag", "...", "a..b", "..a", "a.", "%2F", "%2e%2e", strings.Repeat("a", maxKeyBytes)} {
		if err := CheckKey(key); err != nil {
			t.Errorf("CheckKey(%q) = %v, want nil", key, err)
		}
	}
}

// TestContentRangeTotalParsesOnlyWellFormedHeaders proves the total comes
// from a well-formed Content-Range and anything else is refused.
func TestContentRangeTotalParsesOnlyWellFormedHeaders(t *testing.T) {
	good := map[string]int64{"bytes 0-1048576/67108864": 67108864, "bytes 0-0/1": 1, "bytes */0": 0, "bytes 0-9/*": -1}
	for in, want := range good {
		if got, ok := contentRangeTotal(in); !ok || got != want {
			t.Errorf("contentRangeTotal(%q) = %d, %v; want %d, true", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "bytes", "bytes 0-9", "items 0-9/10", "bytes 0-9/-1", "bytes 0-9/x", "bytes /10", "bytes 0-9/99999999999999999999"} {
		if _, ok := contentRangeTotal(in); ok {
			t.Errorf("contentRangeTotal(%q) accepted a malformed header", in)
		}
	}
}

// TestIsTextDecidesByMIMETypeAndCharset proves text or blob follows the
// planned MIME type, and a non-UTF-8 charset makes the bytes a blob.
func TestIsTextDecidesByMIMETypeAndCharset(t *testing.T) {
	for ct, want := range map[string]bool{
		"text/plain": true, "text/markdown; charset=utf-8": true, "text/csv; charset=US-ASCII": true,
		"application/json": true, "application/vnd.api+json": true, "image/svg+xml": true,
		"text/plain; charset=iso-8859-1": false, "application/octet-stream": false, "image/png": false,
		"application/pdf": false, "": false, "not a type": false,
	} {
		if got := isText(ct); got != want {
			t.Errorf("isText(%q) = %v, want %v", ct, got, want)
		}
	}
}

// TestObjectTargetKeepsTheIdentityPrivate proves NewObjectTarget carries
// the identity only in the private authorization data, that the reader
// recovers it exactly, and that unusable identities are refused.
func TestObjectTargetKeepsTheIdentityPrivate(t *testing.T) {
	obj := Object{Bucket: "assets", Key: "a b/ü%+?#.txt", ETag: `"abc"`, VersionID: "v1", Size: 12, ContentType: "text/plain"}
	tg, err := NewObjectTarget("asset://x/1", obj)
	if err != nil {
		t.Fatal(err)
	}
	if tg.URI() != "asset://x/1" || tg.Representation() != objectRepresentation {
		t.Fatalf("target %q/%q", tg.URI(), tg.Representation())
	}
	if strings.Contains(tg.URI(), "abc") {
		t.Fatal("the ETag leaked into the URI")
	}
	got, err := targetObject(tg)
	if err != nil || got != obj {
		t.Fatalf("targetObject = %+v, %v; want %+v", got, err, obj)
	}

	odd := obj
	odd.ContentType = "nonsense"
	tg, _ = NewObjectTarget("asset://x/1", odd)
	if got, _ := targetObject(tg); got.ContentType != octetStream {
		t.Errorf("unusable content type became %q, want %q", got.ContentType, octetStream)
	}

	bad := []Object{
		{Bucket: "Assets", Key: "k", ETag: "e", Size: -1},
		{Bucket: "ab", Key: "k", ETag: "e", Size: -1},
		{Bucket: "assets", Key: "a/../b", ETag: "e", Size: -1},
		{Bucket: "assets", Key: "k", Size: -1},
		{Bucket: "assets", Key: "k", ETag: "e", Size: -2},
	}
	for _, o := range bad {
		if _, err := NewObjectTarget("asset://x/1", o); err == nil {
			t.Errorf("NewObjectTarget(%+v) accepted an unusable identity", o)
		}
	}

	plain, _ := core.NewResourceTarget("asset://x/1", objectRepresentation, []byte(`{"bucket":"assets","key":"../x","etag":"e","size":1}`))
	if _, err := targetObject(plain); err == nil {
		t.Error("targetObject accepted a hand-made target with a dot-segment key")
	}
}

// TestReadRefusesTargetsItDidNotPlanWithoutARequest proves a target of
// another representation or another bucket fails before any request: the
// client here points at a closed port, so a request would be a
// different error.
func TestReadRefusesTargetsItDidNotPlanWithoutARequest(t *testing.T) {
	c, err := NewClient(t.Context(), ClientConfig{Endpoint: "http://127.0.0.1:1", UsePathStyle: true, AccessKeyID: "a", SecretAccessKey: "s", RetryMaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenBucket(t.Context(), c, "assets", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := core.WithCaller(context.Background(), core.Caller{Principal: "alice"})
	other, _ := core.NewResourceTarget("asset://x/1", "row", nil)
	if _, err := b.Read(ctx, whole(other)); !errors.Is(err, errNotObjectTarget) {
		t.Errorf("foreign representation: %v", err)
	}
	foreign, _ := NewObjectTarget("asset://x/1", Object{Bucket: "elsewhere", Key: "k", ETag: "e", Size: -1})
	if _, err := b.Read(ctx, whole(foreign)); err == nil || errors.Is(err, errServer) {
		t.Errorf("foreign bucket: %v", err)
	}
	mine, _ := NewObjectTarget("asset://x/1", Object{Bucket: "assets", Key: "k", ETag: "e", Size: -1})
	if _, err := b.Read(context.Background(), whole(mine)); core.KindOf(err) != core.FailureUnavailable {
		t.Errorf("no principal: %v, want unavailable", err)
	}
}

// TestReadBodyNeverAllocatesPastTheLimit proves a claimed length over the
// limit is refused before allocation and an unknown length is read through
// limit+1 bytes.
func TestReadBodyNeverAllocatesPastTheLimit(t *testing.T) {
	if _, err := readBody(bytes.NewReader(nil), 1<<40, true, 10); !isTooLarge(err) {
		t.Errorf("claimed 1 TiB: %v, want TooLarge", err)
	}
	if _, err := readBody(strings.NewReader(strings.Repeat("x", 11)), 0, false, 10); !isTooLarge(err) {
		t.Errorf("unknown length over the limit: %v, want TooLarge", err)
	}
	if b, err := readBody(strings.NewReader("0123456789"), 0, false, 10); err != nil || string(b) != "0123456789" {
		t.Errorf("unknown length at the limit: %q, %v", b, err)
	}
	if _, err := readBody(strings.NewReader("short"), 10, true, 10); !errors.Is(err, errServer) {
		t.Errorf("short body: %v, want a retryable error", err)
	}
}

func isTooLarge(err error) bool {
	var tl *core.TooLargeError
	return errors.As(err, &tl)
}

// TestNewClientRefusesUnusableConfiguration proves configuration mistakes
// are typed errors naming the field.
func TestNewClientRefusesUnusableConfiguration(t *testing.T) {
	for name, cfg := range map[string]ClientConfig{
		"endpoint without scheme": {Endpoint: "127.0.0.1:9000", AccessKeyID: "a", SecretAccessKey: "s"},
		"endpoint with userinfo":  {Endpoint: "http://u:p@127.0.0.1:9000", AccessKeyID: "a", SecretAccessKey: "s"},
		"half credentials":        {Endpoint: "http://127.0.0.1:9000", AccessKeyID: "a"},
		"negative retries":        {Endpoint: "http://127.0.0.1:9000", AccessKeyID: "a", SecretAccessKey: "s", RetryMaxAttempts: -1},
		"static without region":   {AccessKeyID: "a", SecretAccessKey: "s"},
	} {
		var ce *core.ConfigError
		if _, err := NewClient(t.Context(), cfg); !errors.As(err, &ce) {
			t.Errorf("%s: %v, want *core.ConfigError", name, err)
		}
	}
	c, err := NewClient(t.Context(), ClientConfig{Endpoint: "http://127.0.0.1:9000", UsePathStyle: true, AccessKeyID: "a", SecretAccessKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	o := c.Options()
	if !o.UsePathStyle || o.Region != defaultRegion || o.RequestChecksumCalculation != aws.RequestChecksumCalculationWhenRequired || o.ResponseChecksumValidation != aws.ResponseChecksumValidationWhenRequired || !o.DisableLogOutputChecksumValidationSkipped {
		t.Errorf("client options not set for S3-compatible servers: %+v", o)
	}
}

// whole asks for target with the default item limit.
func whole(target core.ResourceTarget) core.ReadItem {
	return core.ReadItem{Target: target, Limit: core.DefaultResourceLimits().MaxItemBytes}
}

// TestObjectRefTargetsReadAKeyOfTheBucket: an item with a core.ObjectRef
// is the ref's key in the bucket that reads it, pinned as the ref says; a
// key CheckKey refuses is unavailable; without a MIME type the key
// extension's is chosen, and the stored one only for an unpinned ref.
func TestObjectRefTargetsReadAKeyOfTheBucket(t *testing.T) {
	b := &Bucket{name: "docs"}
	base, err := core.NewResourceTarget("doc://1/object", "object", []byte(`{"row":"1"}`))
	if err != nil {
		t.Fatal(err)
	}
	ref := core.ObjectRef{Source: "files", Key: "a/b.md", ETag: `"e"`, VersionID: "v1", Size: 7}
	tg, err := base.WithObject(ref)
	if err != nil {
		t.Fatal(err)
	}
	obj, declared, err := b.objectOf(tg)
	if err != nil || !declared {
		t.Fatalf("objectOf: %v, declared %v", err, declared)
	}
	if want := (Object{Bucket: "docs", Key: "a/b.md", ETag: `"e"`, VersionID: "v1", Size: 7}); obj != want {
		t.Fatalf("object %+v, want %+v", obj, want)
	}
	if got := b.contentType(obj, declared, "text/x-stored"); got != "text/markdown; charset=utf-8" {
		t.Errorf("pinned ref: content type %q, want the key extension's", got)
	}
	current := Object{Bucket: "docs", Key: "a/b.md", Size: -1}
	if got := b.contentType(current, true, "text/x-stored"); got != "text/x-stored" {
		t.Errorf("unpinned ref: content type %q, want the stored one", got)
	}
	bad, _ := base.WithObject(core.ObjectRef{Source: "files", Key: "a//b", Size: -1})
	if _, _, err := b.objectOf(bad); core.KindOf(err) != core.FailureUnavailable {
		t.Errorf("a refused key: %v, want unavailable", err)
	}
	// A target of another bucket (NewObjectTarget) is still refused.
	other, _ := NewObjectTarget("doc://2", Object{Bucket: "elsewhere", Key: "k", ETag: `"e"`, Size: 1})
	if _, _, err := b.objectOf(other); err == nil {
		t.Error("another bucket's object target was accepted")
	}
}
