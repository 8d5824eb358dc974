package s3store

import (
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
)

// FuzzObjectTarget proves hostile identities never panic: NewObjectTarget
// accepts only identities whose key CheckKey accepts, and what it accepts
// the reader recovers exactly; arbitrary authorization JSON is either a
// valid identity or refused.
func FuzzObjectTarget(f *testing.F) {
	f.Add("assets", "docs/a b.txt", `"etag"`, "v1", int64(3), "text/plain", []byte(`{"bucket":"assets","key":"k","etag":"e","size":1}`))
	f.Add("assets", "docs/../x", "", "", int64(-1), "", []byte(`{"key":"../x"}`))
	f.Add("a", "\x00", "\xff", "v", int64(-5), "text/plain; charset=\xff", []byte(`[]`))
	f.Fuzz(func(t *testing.T, bucket, key, etag, version string, size int64, ct string, raw []byte) {
		obj := Object{Bucket: bucket, Key: key, ETag: etag, VersionID: version, Size: size, ContentType: ct}
		tg, err := NewObjectTarget("asset://x/1", obj)
		if err == nil {
			if CheckKey(key) != nil {
				t.Fatalf("accepted a key CheckKey refuses: %q", key)
			}
			got, err := targetObject(tg)
			if err != nil {
				t.Fatalf("cannot read back an accepted identity: %v", err)
			}
			obj.ContentType = mediaType(ct)
			if got != obj {
				t.Fatalf("identity changed: %+v != %+v", got, obj)
			}
			isText(got.ContentType)
		}
		if hand, err := core.NewResourceTarget("asset://x/1", objectRepresentation, raw); err == nil {
			if got, err := targetObject(hand); err == nil && CheckKey(got.Key) != nil {
				t.Fatalf("recovered a key CheckKey refuses: %q", got.Key)
			}
		}
		contentRangeTotal(string(raw))
	})
}
