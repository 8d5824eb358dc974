// Package config loads and checks an operator's resources file: the YAML
// file that tells the reference server (mcp-resources serve --config FILE)
// which PostgreSQL databases and S3 buckets to serve, and how.
//
// The file names its sources first, then the policy and the resources
// that use them, in the manner of MCP Toolbox's tools.yaml:
//
//	version: 1
//	sources:
//	  docs:
//	    postgres:
//	      url: ${DOCS_DATABASE_URL}   # secrets only as ${ENV} references
//	      role: docs_reader           # every statement runs as this role
//	policy: database                  # row-level security decides; or {source, decide}
//	resources:
//	  document:
//	    template: doc://tenants/{tenant}/documents/{id}
//	    source: docs
//	    plan: SELECT d.id AS key, d.xmin AS version, d.content_type AS mime FROM documents d WHERE d.tenant_id = $tenant AND d.id::text = $id
//	    body: SELECT d.body, d.xmin AS version FROM documents d WHERE d.id::text = $key
//
// Nothing reaches storage or a caller that no statement grants: a policy
// decides the reads of its own PostgreSQL source's resources only (the
// file's, or one under the source), and every S3 resource names a grant, a
// statement that returns the keys (or key prefixes) the caller may read and
// runs before any request to S3, or says public: true:
//
//	report:
//	  template: report://tenants/{tenant}/reports/...
//	  source: files
//	  prefix: tenants/{tenant}/reports/
//	  max_depth: 6
//	  grant: {source: docs, keys: "SELECT r.key FROM reports r WHERE r.tenant_id = $tenant AND r.key = $key"}
//
// Statements name their parameters ($tenant, $key): the captures of the
// template, decoded, and per kind of statement $principal, $key, $version,
// $keys, $binding, $prefix and $limit. examples/documents/resources.yaml and
// migrations/resources.yaml are complete files.
//
// [Load] and [Parse] read a file, decode it strictly (an unknown key is an
// error at its position), expand ${NAME} references from the environment in
// the fields of type [Secret] and [Env] only, and check everything that can
// be checked without a server: names, references between resources, the
// sources and the policy, URIs and templates by package core's own rules (a
// template family that some request could match twice is refused), SQL
// parameter names against the template's captures, S3 key prefixes and
// their depth, listing metadata (media type, annotations) and limits. Every mistake is one [*Error]
// whose text is FILE:LINE:COL: what is wrong, on one line, without the
// value of any secret.
//
// The schema of the file is [Schema], a JSON Schema (draft 2020-12)
// generated from the model's fields, docs and schema tags (go generate) and
// committed as config/schema.json so that editors complete and check it.
package config
