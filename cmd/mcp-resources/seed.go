package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/internal/connerr"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// seedCmd loads the demo dataset into PostgreSQL and the bucket.
type seedCmd struct {
	Storage storageFlags `embed:""`
}

// The seed dataset: two projects, assets with inline text and binary
// bodies, an empty one, assets that reference objects in the bucket, and
// grants for two principals so that the same asset reads differently:
//
//   - alice may discover and read everything (project grants on both);
//   - bob has asset grants in handbook only: welcome, logo, empty and
//     architecture he may read; salaries he may see but not read (it is an
//     unavailable omission of his handbook bundle, and reading it fails);
//     intro-video is hidden from him, and the launch project does not exist
//     for him.
const (
	seedAlice = "alice"
	seedBob   = "bob"
)

type seedObject struct {
	key  string
	body []byte
}

type seedAsset struct {
	project, id, name, title, mime string
	body                           []byte // nil: no inline body
	text                           bool
	object                         *seedObject
}

type seedGrant struct {
	principal, project, asset string // asset "": the whole project
	discover, read, disclose  bool
}

var seedProjects = [][2]string{{"handbook", "Team handbook"}, {"launch", "Product launch"}}

const seedArchitectureSVG = `<svg xmlns="http://www.w3.org/2000/svg" width="240" height="80" viewBox="0 0 240 80">
  <rect x="4" y="20" width="90" height="40" rx="6" fill="#dde"/><text x="14" y="45">PostgreSQL</text>
  <rect x="146" y="20" width="90" height="40" rx="6" fill="#ded"/><text x="176" y="45">S3</text>
  <path d="M94 40h52" stroke="#333"/>
</svg>
`

// seedBytes returns n deterministic bytes: binary content that is the
// same on every run, so the seed stays idempotent.
func seedBytes(label string, n int) []byte {
	out := make([]byte, 0, n+sha256.Size)
	block := sha256.Sum256([]byte(label))
	for len(out) < n {
		out = append(out, block[:]...)
		block = sha256.Sum256(block[:])
	}
	return out[:n]
}

func seedAssets() []seedAsset {
	return []seedAsset{
		{project: "handbook", id: "welcome", name: "welcome.md", title: "Welcome", mime: "text/markdown", text: true,
			body: []byte("# Welcome\n\nThis handbook is served from PostgreSQL rows and S3 objects.\n")},
		{project: "handbook", id: "logo", name: "logo.png", title: "Logo", mime: "image/png", body: demoPNG},
		{project: "handbook", id: "empty", name: "empty.txt", title: "An empty page", mime: "text/plain", text: true, body: []byte{}},
		{project: "handbook", id: "architecture", name: "architecture.svg", title: "Architecture diagram", mime: "image/svg+xml",
			object: &seedObject{key: "seed/handbook/architecture.svg", body: []byte(seedArchitectureSVG)}},
		{project: "handbook", id: "salaries", name: "salaries.csv", title: "Salaries", mime: "text/csv", text: true,
			body: []byte("name,salary\nalice,100\nbob,90\n")},
		{project: "handbook", id: "intro-video", name: "intro.bin", title: "Introduction video", mime: "application/octet-stream",
			object: &seedObject{key: "seed/handbook/intro.bin", body: seedBytes("intro-video", 4096)}},
		{project: "launch", id: "plan", name: "plan.txt", title: "Launch plan", mime: "text/plain", text: true,
			body: []byte("1. Build it.\n2. Seed it.\n3. Serve it.\n")},
		{project: "launch", id: "budget", name: "budget.csv", title: "Budget", mime: "text/csv",
			object: &seedObject{key: "seed/launch/budget.csv", body: []byte("item,cost\nservers,1200\ncoffee,300\n")}},
		{project: "launch", id: "press-kit", name: "press-kit.bin", title: "Press kit", mime: "application/octet-stream",
			object: &seedObject{key: "seed/launch/press-kit.bin", body: seedBytes("press-kit", 2048)}},
	}
}

var seedGrants = []seedGrant{
	{seedAlice, "handbook", "", true, true, true},
	{seedAlice, "launch", "", true, true, true},
	{seedBob, "handbook", "welcome", true, true, true},
	{seedBob, "handbook", "logo", true, true, true},
	{seedBob, "handbook", "empty", true, true, true},
	{seedBob, "handbook", "architecture", true, true, true},
	{seedBob, "handbook", "salaries", true, false, true},
}

// seedChecksumMeta is the user metadata under which seed records the
// SHA-256 of what it uploaded, to recognise its own objects on a rerun.
const seedChecksumMeta = "mcpres-seed-sha256"

// Run loads the dataset. It is idempotent: objects already in the bucket
// with the same content are kept (same ETag and version id), and rows are
// only written when they differ, so a second run changes nothing (asset
// versions included).
func (c *seedCmd) Run(ctx context.Context, e *env) error {
	f := &c.Storage
	if err := f.checkCombination(); err != nil {
		return err
	}
	if f.Postgres == "" || f.Bucket == "" {
		return errors.New("seed needs --postgres and --bucket (MCPRES_DATABASE_URL, MCPRES_BUCKET): the dataset has rows and objects")
	}
	pool, err := f.openPool(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := checkSchema(ctx, pool, false); err != nil {
		return err
	}
	client, err := s3store.NewClient(ctx, s3store.ClientConfig{Endpoint: f.Endpoint, Region: f.Region,
		UsePathStyle: f.Path, AccessKeyID: f.Access, SecretAccessKey: f.Secret}, s3store.WithTracing(tracerProvider()))
	if err != nil {
		return fmt.Errorf("S3 client: %w", err)
	}
	if err := headBucket(ctx, client, f.Bucket); errors.Is(err, errNoBucket) {
		if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(f.Bucket)}); err != nil {
			return fmt.Errorf("creating bucket %s: %w", f.Bucket, connerr.Innermost(err))
		}
		e.log.Info("created the bucket (without versioning: rows pin objects by ETag)", "bucket", f.Bucket)
	} else if err != nil {
		return err
	}

	assets := seedAssets()
	refs := map[string]objectIdentity{}
	uploaded := 0
	for _, a := range assets {
		if a.object == nil {
			continue
		}
		ref, fresh, err := putSeedObject(ctx, client, f.Bucket, a.object, a.mime)
		if err != nil {
			return err
		}
		if fresh {
			uploaded++
		}
		refs[a.project+"/"+a.id] = ref
	}

	changed, err := writeSeedRows(ctx, pool, f.Bucket, assets, refs)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "seeded %d projects, %d assets and %d grants (%d rows written); objects: %d uploaded, %d already there\n",
		len(seedProjects), len(assets), len(seedGrants), changed, uploaded, len(refs)-uploaded)
	fmt.Fprintf(e.stdout, "principals: %s reads everything; %s reads part of handbook and sees salaries without reading it\n", seedAlice, seedBob)
	return nil
}

// objectIdentity is what S3 reported for an uploaded object.
type objectIdentity struct {
	etag, versionID string
	size            int64
}

// putSeedObject uploads o unless the bucket already holds it with the same
// content (recognised by the checksum seed records in the object's user
// metadata), and returns the identity of the current version.
func putSeedObject(ctx context.Context, client *s3.Client, bucket string, o *seedObject, mime string) (objectIdentity, bool, error) {
	sum := sha256.Sum256(o.body)
	want := hex.EncodeToString(sum[:])
	head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(o.key)})
	if err == nil && head.Metadata[seedChecksumMeta] == want && aws.ToInt64(head.ContentLength) == int64(len(o.body)) &&
		aws.ToString(head.ContentType) == mime {
		return objectIdentity{etag: aws.ToString(head.ETag), versionID: aws.ToString(head.VersionId), size: int64(len(o.body))}, false, nil
	}
	out, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(o.key),
		Body: bytes.NewReader(o.body), ContentType: aws.String(mime), Metadata: map[string]string{seedChecksumMeta: want}})
	if err != nil {
		return objectIdentity{}, false, fmt.Errorf("uploading %s: %w", o.key, connerr.Innermost(err))
	}
	return objectIdentity{etag: aws.ToString(out.ETag), versionID: aws.ToString(out.VersionId), size: int64(len(o.body))}, true, nil
}

// Upserts that write only what differs: the asset trigger bumps the
// version on every UPDATE, so an unchanged row must not be updated.
const (
	sqlSeedProject = `INSERT INTO mcpres.projects (id, title) VALUES ($1, $2)
ON CONFLICT (id) DO UPDATE SET title = EXCLUDED.title WHERE projects.title IS DISTINCT FROM EXCLUDED.title`
	sqlSeedAsset = `INSERT INTO mcpres.assets (project_id, id, name, title, mime_type, body, body_is_text,
	object_bucket, object_key, object_etag, object_version_id, object_size)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (project_id, id) DO UPDATE SET name = EXCLUDED.name, title = EXCLUDED.title, mime_type = EXCLUDED.mime_type,
	body = EXCLUDED.body, body_is_text = EXCLUDED.body_is_text, object_bucket = EXCLUDED.object_bucket,
	object_key = EXCLUDED.object_key, object_etag = EXCLUDED.object_etag,
	object_version_id = EXCLUDED.object_version_id, object_size = EXCLUDED.object_size
WHERE (assets.name, assets.title, assets.mime_type, assets.body, assets.body_is_text, assets.object_bucket,
	assets.object_key, assets.object_etag, assets.object_version_id, assets.object_size)
	IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.title, EXCLUDED.mime_type, EXCLUDED.body, EXCLUDED.body_is_text,
	EXCLUDED.object_bucket, EXCLUDED.object_key, EXCLUDED.object_etag, EXCLUDED.object_version_id, EXCLUDED.object_size)`
	sqlSeedGrant = `INSERT INTO mcpres.grants (principal, project_id, asset_id, can_discover, can_read, disclose_issue_uri)
VALUES ($1, $2, NULLIF($3, ''), $4, $5, $6)
ON CONFLICT (principal, project_id, asset_id) DO UPDATE SET can_discover = EXCLUDED.can_discover,
	can_read = EXCLUDED.can_read, disclose_issue_uri = EXCLUDED.disclose_issue_uri
WHERE (grants.can_discover, grants.can_read, grants.disclose_issue_uri)
	IS DISTINCT FROM (EXCLUDED.can_discover, EXCLUDED.can_read, EXCLUDED.disclose_issue_uri)`
)

// writeSeedRows upserts the projects, assets and grants in one transaction
// and returns how many rows it inserted or updated.
func writeSeedRows(ctx context.Context, pool interface {
	Begin(context.Context) (pgx.Tx, error)
}, bucket string, assets []seedAsset, refs map[string]objectIdentity) (int64, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("seed: %w", connerr.Innermost(err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var changed int64
	exec := func(sql string, args ...any) error {
		tag, err := tx.Exec(ctx, sql, args...)
		if err != nil {
			return fmt.Errorf("seed: %w", connerr.Innermost(err))
		}
		changed += tag.RowsAffected()
		return nil
	}
	for _, p := range seedProjects {
		if err := exec(sqlSeedProject, p[0], p[1]); err != nil {
			return 0, err
		}
	}
	for _, a := range assets {
		var objBucket, objKey, etag, versionID *string
		var size *int64
		if a.object != nil {
			ref := refs[a.project+"/"+a.id]
			objBucket, objKey, etag, size = &bucket, &a.object.key, &ref.etag, &ref.size
			if ref.versionID != "" {
				versionID = &ref.versionID
			}
		}
		if err := exec(sqlSeedAsset, a.project, a.id, a.name, a.title, a.mime, a.body, a.text,
			objBucket, objKey, etag, versionID, size); err != nil {
			return 0, err
		}
	}
	for _, g := range seedGrants {
		if err := exec(sqlSeedGrant, g.principal, g.project, g.asset, g.discover, g.read, g.disclose); err != nil {
			return 0, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("seed: %w", connerr.Innermost(err))
	}
	return changed, nil
}
