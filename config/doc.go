// Package config loads and checks an operator's resources file: the YAML
// file that tells the reference server (mcp-resources serve --config FILE)
// which PostgreSQL databases and S3 buckets to serve, and how.
//
// The file names its sources first, then the policies and the resources
// that use them, in the manner of MCP Toolbox's tools.yaml:
//
//	version: 1
//	sources:
//	  docs:
//	    postgres:
//	      url: ${DOCS_DATABASE_URL}   # secrets only as ${ENV} references
//	      role: docs_reader           # every statement runs as this role
//	policies:
//	  members:
//	    source: docs
//	    decide: |                     # one statement for all of a plan's keys
//	      SELECT k AS key, m.user_id IS NOT NULL AS visible, ...
//	      FROM unnest($keys::text[]) AS k LEFT JOIN memberships m ON ...
//	resources:
//	  document:
//	    template: doc://tenants/{tenant}/documents/{id}
//	    source: docs
//	    policy: members
//	    plan: SELECT ... WHERE tenant_id = $tenant AND id = $id::uuid
//	    body: SELECT body FROM documents WHERE ... = $key AND ... = $version
//
// [Load] and [Parse] read a file, decode it strictly (an unknown key is an
// error at its position), expand ${NAME} references from the environment in
// the fields of type [Secret] only, and check everything that can be checked
// without a server: names, references between resources, sources and
// policies, URIs and templates by package core's own rules (a template
// family that some request could match twice is refused), SQL parameter
// names against the template's captures, S3 key patterns and their depth,
// MIME rules, listing metadata and limits. Every mistake is one [*Error]
// whose text is FILE:LINE:COL: what is wrong, on one line, without the
// value of any secret.
//
// The schema of the file is [Schema], a JSON Schema (draft 2020-12) also
// committed as config/schema.json so that editors complete and check it.
package config
