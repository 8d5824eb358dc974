package integration

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// joinRig is a reference-schema database and a bucket joined as the
// reference server joins them: the bucket is the store's object source
// (refOptions.Objects, an *s3store.Bucket).
type joinRig struct {
	d      *pgDB
	env    harness.S3Env
	client *s3.Client
	wire   *wire
	res    *core.Resources
}

func newJoinRig(t *testing.T) *joinRig {
	t.Helper()
	j := &joinRig{d: newPGDB(t), env: harness.S3(t), wire: &wire{}}
	j.client = s3Client(t, j.env, j.wire)
	bucket, err := s3store.OpenBucket(t.Context(), j.client, j.env.Bucket, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := newStore(t, newPool(t, j.d.url, nil), &refOptions{Objects: bucket})
	j.res = pgGateway(t, st.Bindings(), st.Policy(), objectsOf(bucket))
	j.d.project(t, "p")
	return j
}

// objectAsset uploads body at key and writes an asset row that references
// it by ETag and, when pinVersion is set, by version id.
func (j *joinRig) objectAsset(t *testing.T, id, key, mime string, body []byte, pinVersion bool) s3store.Object {
	t.Helper()
	obj := putObject(t, j.client, j.env.Bucket, key, mime, body)
	var version any
	if pinVersion {
		if obj.VersionID == "" {
			t.Fatalf("the harness bucket is not versioned")
		}
		version = obj.VersionID
	}
	j.d.exec(t, `INSERT INTO mcpres.assets (project_id, id, name, title, mime_type,
			object_bucket, object_key, object_etag, object_version_id, object_size)
		VALUES ('p', $1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		id, key, "Asset "+id, mime, obj.Bucket, obj.Key, obj.ETag, version, obj.Size)
	return obj
}

func (j *joinRig) overwrite(t *testing.T, key, mime string, body []byte) {
	t.Helper()
	if _, err := j.client.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(j.env.Bucket), Key: aws.String(key),
		Body: bytes.NewReader(body), ContentType: aws.String(mime)}); err != nil {
		t.Fatal(err)
	}
}

// TestJoinedAssetIsItsFieldsFromTheRowAndItsObjectFromS3 proves the join:
// an asset row that references an object is planned as two items, the
// fields as JSON from the row and the blob from S3 with one GET, and the
// object URI serves the object alone.
func TestJoinedAssetIsItsFieldsFromTheRowAndItsObjectFromS3(t *testing.T) {
	t.Parallel()
	j := newJoinRig(t)
	blob := []byte{0x00, 0xff, 0x10, 'b', 'l', 'o', 'b'}
	obj := j.objectAsset(t, "pic", "media/pic.bin", "application/octet-stream", blob, true)
	j.d.textAsset(t, "p", "note", "rows only")
	j.d.grant(t, "alice", "p", "")
	ctx := as(t.Context(), "alice")

	j.wire.reset()
	res, err := j.res.Read(ctx, "asset://project/p/asset/pic")
	if err != nil {
		t.Fatalf("read the joined asset: %v", err)
	}
	items := res.Items()
	if res.Partial() || len(items) != 2 {
		t.Fatalf("partial %v with %d items: want the fields and the object", res.Partial(), len(items))
	}
	if items[0].URI() != "asset://project/p/asset/pic" || items[0].MIMEType() != "application/json" {
		t.Fatalf("first item %s (%s): want the fields as JSON", items[0].URI(), items[0].MIMEType())
	}
	var fields struct {
		ID     string `json:"id"`
		Object struct {
			URI  string `json:"uri"`
			Size int64  `json:"size"`
		} `json:"object"`
	}
	if err := json.Unmarshal([]byte(items[0].Text()), &fields); err != nil || fields.ID != "pic" ||
		fields.Object.URI != "asset://project/p/asset/pic/object" || fields.Object.Size != int64(len(blob)) {
		t.Fatalf("fields %s (%v): want the row with its object's URI and size", items[0].Text(), err)
	}
	// Where the object is stored is storage identity, private like a
	// target's authorization data: the fields name the resource, not the key.
	for _, private := range []string{obj.ETag, obj.VersionID, obj.Bucket, `"key"`, `"etag"`} {
		if private != "" && strings.Contains(items[0].Text(), private) {
			t.Fatalf("the fields %s reveal the object's storage identity %q", items[0].Text(), private)
		}
	}
	if items[1].URI() != "asset://project/p/asset/pic/object" || !items[1].IsBlob() || !bytes.Equal(items[1].Blob(), blob) ||
		items[1].MIMEType() != "application/octet-stream" {
		t.Fatalf("second item %s blob=%v %q: want the object's bytes", items[1].URI(), items[1].IsBlob(), items[1].Blob())
	}
	if g, h := j.wire.gets.Load(), j.wire.heads.Load(); g != 1 || h != 0 {
		t.Fatalf("S3 saw %d GETs and %d HEADs: want one GET for the one object item", g, h)
	}

	one, err := j.res.Read(ctx, "asset://project/p/asset/pic/object")
	if err != nil || len(one.Items()) != 1 || !bytes.Equal(one.Items()[0].Blob(), blob) {
		t.Fatalf("the object URI: %v", err)
	}
	plain, err := j.res.Read(ctx, "asset://project/p/asset/note")
	if err != nil || len(plain.Items()) != 1 {
		t.Fatalf("an asset without an object is its fields alone: %v", err)
	}
	if _, err := j.res.Read(ctx, "asset://project/p/asset/note/object"); core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("the object of an asset without one: %v, want unavailable", err)
	}
}

// TestJoinedObjectOverwrittenInS3IsRefusedWhileTheFieldsSurvive proves that
// each item is enforced by its own storage: the object is pinned by the
// ETag the row stores, so after an overwrite S3 answers 412 (read_failed,
// retryable) and the new bytes are never served, while the fields item from
// the row is served; a row that also pins the version id keeps getting the
// version it names.
func TestJoinedObjectOverwrittenInS3IsRefusedWhileTheFieldsSurvive(t *testing.T) {
	t.Parallel()
	j := newJoinRig(t)
	j.objectAsset(t, "etag-only", "docs/etag-only.txt", "text/plain", []byte("first words"), false)
	j.objectAsset(t, "versioned", "docs/versioned.txt", "text/plain", []byte("kept words"), true)
	j.d.exec(t, `INSERT INTO mcpres.grants (principal, project_id, can_discover, can_read, disclose_issue_uri)
		VALUES ('alice', 'p', true, true, true)`)
	ctx := as(t.Context(), "alice")
	j.overwrite(t, "docs/etag-only.txt", "text/plain", []byte("SECOND WORDS"))
	j.overwrite(t, "docs/versioned.txt", "text/plain", []byte("NEWER WORDS"))

	res, err := j.res.Read(ctx, "asset://project/p/asset/etag-only")
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	got := itemTexts(res)
	if !res.Partial() || got["asset://project/p/asset/etag-only"] == "" {
		t.Fatalf("partial %v, items %v: want the fields to survive", res.Partial(), got)
	}
	codes := issueCodes(res)
	if len(codes) != 1 || codes["asset://project/p/asset/etag-only/object"] != core.IssueReadFailed || !res.Issues()[0].Retryable() {
		t.Fatalf("issues %v: want the object read_failed (S3's 412), retryable", codes)
	}
	for uri, text := range got {
		if bytes.Contains([]byte(text), []byte("SECOND")) {
			t.Fatalf("%s served the overwritten bytes", uri)
		}
	}

	res, err = j.res.Read(ctx, "asset://project/p/asset/versioned")
	if err != nil || res.Partial() {
		t.Fatalf("read the version-pinned asset: %v (partial %v)", err, res != nil && res.Partial())
	}
	if text := itemTexts(res)["asset://project/p/asset/versioned/object"]; text != "kept words" {
		t.Fatalf("the version-pinned object reads %q: want the version the row names", text)
	}
}

// TestJoinedAssetGrantRevokedInPostgresDeniesBothItems proves that both
// items are authorized by the grants table: a discover-only grant denies
// both (the read fails as unavailable, the bundle names the asset as an
// unavailable omission without reading S3), and once every grant is revoked
// both URIs are unavailable and the asset leaves the project bundle.
func TestJoinedAssetGrantRevokedInPostgresDeniesBothItems(t *testing.T) {
	t.Parallel()
	j := newJoinRig(t)
	j.objectAsset(t, "secret", "private/secret.txt", "text/plain", []byte("classified"), true)
	j.d.grant(t, "alice", "p", "secret")
	ctx := as(t.Context(), "alice")
	if res, err := j.res.Read(ctx, "asset://project/p/asset/secret"); err != nil || len(res.Items()) != 2 {
		t.Fatalf("with a read grant: %v", err)
	}

	j.d.exec(t, `UPDATE mcpres.grants SET can_read = false WHERE principal = 'alice'`)
	j.wire.reset()
	for _, uri := range []string{"asset://project/p/asset/secret", "asset://project/p/asset/secret/object"} {
		if _, err := j.res.Read(ctx, uri); core.KindOf(err) != core.FailureUnavailable {
			t.Fatalf("%s with a discover-only grant: %v, want unavailable", uri, err)
		}
	}
	if g := j.wire.gets.Load(); g != 0 {
		t.Fatalf("S3 saw %d GETs for denied items", g)
	}

	j.d.revoke(t, "alice", "p", "secret")
	for _, uri := range []string{"asset://project/p/asset/secret", "asset://project/p/asset/secret/object"} {
		if _, err := j.res.Read(ctx, uri); core.KindOf(err) != core.FailureUnavailable {
			t.Fatalf("%s after the revoke: %v, want unavailable", uri, err)
		}
	}
	if _, err := j.res.Read(as(t.Context(), "mallory"), "asset://project/p/asset/secret/object"); core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("a principal never granted: %v, want unavailable", err)
	}
}

// TestStoreWithoutObjectsServesAJoinedAssetAsItsFieldsAlone proves a store
// without refOptions.Objects (the reference server without a bucket) serves
// the same rows: an asset whose row references an object is its fields
// alone, the object URI is unavailable, and no binding is registered for
// it.
func TestStoreWithoutObjectsServesAJoinedAssetAsItsFieldsAlone(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	d.project(t, "p")
	d.exec(t, `INSERT INTO mcpres.assets (project_id, id, name, mime_type, object_bucket, object_key, object_etag, object_size)
		VALUES ('p', 'pic', 'pic.bin', 'application/octet-stream', 'bkt', 'media/pic.bin', '"e1"', 3)`)
	d.grant(t, "alice", "p", "")
	st := newStore(t, newPool(t, d.url, nil), nil)
	if n := len(st.Bindings()); n != 4 {
		t.Fatalf("%d bindings without objects, want 4 (no object binding)", n)
	}
	ctx := as(t.Context(), "alice")
	r := pgGateway(t, st.Bindings(), st.Policy())
	res, err := r.Read(ctx, "asset://project/p/asset/pic")
	if err != nil || res.Partial() || len(res.Items()) != 1 || res.Items()[0].URI() != "asset://project/p/asset/pic" {
		t.Fatalf("the asset without an object store: %v, want its fields alone", err)
	}
	if _, err := r.Read(ctx, "asset://project/p/asset/pic/object"); core.KindOf(err) != core.FailureUnavailable {
		t.Fatalf("the object URI of a store without objects: %v, want unavailable", err)
	}
}
