// Package documents is a host for a schema that is not the library's: an
// existing database of tenants, documents and memberships (schema.sql) and
// a bucket of files, served as MCP resources with no hand-written
// resolver, reader or policy. Every statement below runs as docs_reader
// with the caller set as mcp.principal, so row-level security decides which
// documents exist for whom; a grant statement decides the bucket's reports
// by tenant membership before any request to S3. cmd/documents serves it over stdio.
package documents

import (
	"context"
	_ "embed"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// Schema creates the tables, the reader role and its row-level security.
//
//go:embed schema.sql
var Schema string

// New checks the statements against db and the bucket, and returns the
// resources: a document with its file, a tenant's documents, and the
// tenant's reports at any depth up to six.
func New(ctx context.Context, db postgres.DB, files *s3store.Bucket) (*core.Resources, error) {
	bindings, policy, err := Definitions(ctx, db, files)
	if err != nil {
		return nil, err
	}
	return core.NewResources(bindings, policy, core.WithObjectSource(ObjectSource, core.ItemReader(files.Read)))
}

// ObjectSource is the object source the documents' rows reference their
// files under: a gateway of [Definitions] registers the bucket's reader
// under it with core.WithObjectSource, as New does.
const ObjectSource = "files"

// Definitions returns the bindings and the policy that New serves, checked.
func Definitions(ctx context.Context, db postgres.DB, files *s3store.Bucket) ([]core.ResourceBinding, core.ResourcePolicy, error) {
	fail := func(err error) ([]core.ResourceBinding, core.ResourcePolicy, error) {
		return nil, core.ResourcePolicy{}, err
	}
	src, err := postgres.NewSource(db, postgres.SourceOptions{Name: "docs", Role: "docs_reader",
		Objects: map[string]string{ObjectSource: files.Name()}})
	if err != nil {
		return fail(err)
	}
	document, err := src.Binding(postgres.SQLBinding{
		Definition: core.ResourceDefinition{URITemplate: "doc://tenants/{tenant}/documents/{id}", Name: "document",
			Description: "A document's body, then its file"},
		Plan: `SELECT d.id AS key, d.xmin AS version, d.content_type AS mime, d.title, octet_length(d.body) AS size,
			d.s3_key AS object_key, d.s3_etag AS object_etag, true AS visible, true AS read, true AS disclose
			FROM documents d WHERE d.tenant_id = $tenant AND d.id::text = $id`,
		Body:         `SELECT d.body, d.xmin AS version FROM documents d WHERE d.id::text = $key`,
		ObjectSource: ObjectSource,
		Complete: map[string]string{
			"tenant": `SELECT m.tenant_id AS value FROM memberships m WHERE starts_with(m.tenant_id, $prefix) ORDER BY 1`,
			"id": `SELECT d.id::text AS value FROM documents d
				WHERE d.tenant_id = $tenant AND starts_with(d.id::text, $prefix) ORDER BY 1`,
		},
	})
	if err != nil {
		return fail(err)
	}
	file, err := src.Binding(postgres.SQLBinding{
		Definition: core.ResourceDefinition{URITemplate: "doc://tenants/{tenant}/documents/{id}/object", Name: "document-file",
			Description: "A document's file alone"},
		Plan: `SELECT d.id AS key, d.xmin AS version, d.content_type AS mime, d.s3_key AS object_key, d.s3_etag AS object_etag,
			true AS visible, true AS read, true AS disclose FROM documents d WHERE d.tenant_id = $tenant AND d.id::text = $id`,
		ObjectSource: ObjectSource,
	})
	if err != nil {
		return fail(err)
	}
	tenantDocs, err := src.Binding(postgres.SQLBinding{
		Definition: core.ResourceDefinition{URITemplate: "doc://tenants/{tenant}/documents", Name: "tenant-documents",
			Description: "A tenant's latest documents"},
		Bundle: `SELECT d.id AS key, d.xmin AS version, d.content_type AS mime, d.title, d.tenant_id, d.id,
			true AS visible, true AS read, true AS disclose FROM documents d WHERE d.tenant_id = $tenant ORDER BY d.updated_at DESC, d.id LIMIT 100`,
		ItemURI: "doc://tenants/{tenant_id}/documents/{id}",
		Body:    `SELECT d.body, d.xmin AS version FROM documents d WHERE d.id::text = $key`,
	})
	if err != nil {
		return fail(err)
	}
	// Documents and their files are gated by row-level security in the
	// plan, and rechecked after the reads under the same; reports by their
	// grant, which passes here.
	policy, err := src.Policy(`SELECT k.key, r.ok AS visible, r.ok AS read, r.ok AS disclose
		FROM unnest($keys) AS k(key) CROSS JOIN LATERAL (SELECT starts_with(k.key, 'report://') OR EXISTS (
			SELECT 1 FROM documents d WHERE d.id::text = k.key AND ($captures IS NULL OR d.tenant_id = ($captures::jsonb ->> 'tenant'))) AS ok) r`)
	if err != nil {
		return fail(err)
	}
	// A report is granted, before any request to S3, to the members of the
	// tenant its URI's decoded {tenant} names.
	grant, err := src.KeyGrant("report", `SELECT 'tenants/' || m.tenant_id || '/reports/' AS prefix
		FROM memberships m WHERE m.user_id = $principal AND m.tenant_id = $tenant`, []string{"tenant"})
	if err != nil {
		return fail(err)
	}
	reports, err := files.KeyBindings(s3store.KeyFamily{
		Definition: core.ResourceDefinition{Name: "report", Description: "A tenant's report file"},
		URI:        "report://tenants/{tenant}/reports/...", Prefix: "tenants/{tenant}/reports/", MaxDepth: 6,
		Grant: grant,
	})
	if err != nil {
		return fail(err)
	}
	if err := src.Check(ctx); err != nil {
		return fail(err)
	}
	if err := files.Check(ctx); err != nil {
		return fail(err)
	}
	return append([]core.ResourceBinding{document, file, tenantDocs}, reports...), policy, nil
}
