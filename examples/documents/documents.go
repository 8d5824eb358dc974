// Package documents is a host for a schema that is not the library's: an
// existing database of tenants, documents and memberships (schema.sql) and
// a bucket of files, served as MCP resources with no hand-written
// resolver, reader or policy. Every statement below runs as docs_reader
// with the caller set as mcp.principal, so row-level security decides which
// documents exist for whom; a grant statement decides the bucket's reports
// by tenant membership before any request to S3. cmd/documents serves it over
// stdio or HTTP, and resources.yaml is the same host as a resources file.
package documents

import (
	"context"
	_ "embed"

	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// Schema creates the tables, the reader role and its row-level security.
//
//go:embed schema.sql
var Schema string

// Host is what the documents host serves, checked against its database
// and bucket: the bindings and the policy for core.NewResources
// ([Host.Resources] calls it), and the change sources of subscriptions.
type Host struct {
	Bindings []core.ResourceBinding
	Policy   core.ResourcePolicy
	// Changes are the change sources of subscriptions, for mcpsdk
	// Options.Sources: a listener on the channel docs_keys, on which
	// schema.sql's triggers NOTIFY a changed document's id (or * for a
	// membership), and a poller of the report objects subscribed to.
	Changes []core.ChangeSource
	files   *s3store.Bucket
}

// ObjectSource is the object source the documents' rows reference their
// files under: a gateway of a [Host]'s bindings registers the bucket's
// reader under it with core.WithObjectSource, as [Host.Resources] does.
const ObjectSource = "files"

// New returns the resources of [Open].
func New(ctx context.Context, pool *pgxpool.Pool, files *s3store.Bucket) (*core.Resources, error) {
	h, err := Open(ctx, pool, files)
	if err != nil {
		return nil, err
	}
	return h.Resources()
}

// Resources returns the gateway of h's bindings and policy, the bucket
// registered as [ObjectSource].
func (h *Host) Resources() (*core.Resources, error) {
	return core.NewResources(h.Bindings, h.Policy, core.WithObjectSource(ObjectSource, core.ItemReader(h.files.Read)))
}

// Open checks the statements against pool and the bucket, and returns
// the host: a document with its file, the file alone, a tenant's
// documents, the tenant's reports at any depth up to six, and the listing
// of a tenant's reports; completion of tenants and document ids;
// subscriptions. They are the resources of resources.yaml. Open files
// with s3store.Options{TypeByKey: true}, as a resources file does, so that
// a report's type comes from its key, as its listing's items' do.
func Open(ctx context.Context, pool *pgxpool.Pool, files *s3store.Bucket) (*Host, error) {
	h, src, err := build(pool, files)
	if err != nil {
		return nil, err
	}
	if err := src.Check(ctx); err != nil {
		return nil, err
	}
	if err := files.Check(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// build builds the host of Open, unchecked, and returns its source.
func build(pool *pgxpool.Pool, files *s3store.Bucket) (*Host, *postgres.Source, error) {
	fail := func(err error) (*Host, *postgres.Source, error) { return nil, nil, err }
	src, err := postgres.NewSource(pool, postgres.SourceOptions{Name: "docs", Role: "docs_reader",
		Objects: map[string]string{ObjectSource: files.Name()}})
	if err != nil {
		return fail(err)
	}
	document, err := src.Binding(postgres.SQLBinding{
		Definition: core.ResourceDefinition{URITemplate: "doc://tenants/{tenant}/documents/{id}", Name: "document",
			Description: "A document's body, then its file"},
		Listen: "docs_keys",
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
		Listen: "docs_keys",
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
		Listen: "docs_keys",
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
	const grantSQL = `SELECT 'tenants/' || m.tenant_id || '/reports/' AS prefix
		FROM memberships m WHERE m.user_id = $principal AND m.tenant_id = $tenant`
	grant, err := src.KeyGrant("report", grantSQL, []string{"tenant"})
	if err != nil {
		return fail(err)
	}
	family := s3store.KeyFamily{
		Definition: core.ResourceDefinition{Name: "report", Description: "A tenant's report file",
			Annotations: &core.Annotations{Audience: []string{"user", "assistant"}}},
		URI: "report://tenants/{tenant}/reports/...", Prefix: "tenants/{tenant}/reports/", MaxDepth: 6,
		Grant: grant,
	}
	reports, err := files.KeyBindings(family)
	if err != nil {
		return fail(err)
	}
	// The listing of a tenant's reports is gated as the reports are: the
	// same statement, asked once about the listed prefix.
	if family.Grant, err = src.PrefixGrant("reports", grantSQL, []string{"tenant"}); err != nil {
		return fail(err)
	}
	listing, err := files.ListingBinding(s3store.KeyListing{Family: family,
		Definition: core.ResourceDefinition{URITemplate: "report://tenants/{tenant}/reports", Name: "reports",
			Description: "A tenant's report files, one item each, as report:// reads them"}})
	if err != nil {
		return fail(err)
	}
	listener, err := src.Listener(pool.Config().ConnConfig, nil)
	if err != nil {
		return fail(err)
	}
	return &Host{Bindings: append(append([]core.ResourceBinding{document, file, tenantDocs}, reports...), listing), Policy: policy,
		Changes: []core.ChangeSource{listener, s3store.NewPoller(files, nil)}, files: files}, src, nil
}
