// Package postgres exposes PostgreSQL rows as MCP resources for the gateway
// in package core, enforcing current access and stable identity in the
// storage request itself.
//
// # Transactions
//
// Every resolve, read and policy check is one read-only transaction sent as
// one [pgx.Batch], which is one round trip once the pooled connection has
// prepared the statements:
//
//	SELECT FROM (SELECT set_config('role', $1, true), set_config('mcp.principal', $2, true),
//	       set_config('mcp.claims', $3, true), set_config('statement_timeout', $4, true),
//	       set_config('transaction_read_only', 'on', true)) AS setup
//	<one parameterised statement>
//
// (the set-up returns one row of no columns, so the values it set, the
// claims among them, are not sent back)
//
// The batch is one pipeline ending in one Sync, and Postgres runs
// everything up to a Sync as one implicit transaction: the settings are
// transaction-local to it and end at the Sync (the next use of the pooled
// connection sees none of them), and the statement runs read-only. No BEGIN
// or COMMIT is sent.
//
// The role is [ReaderRole] unless [SourceOptions] say otherwise; the principal is
// the principal of what [SourceOptions].Caller returns for the request context (by default
// [core.CallerFrom]), never anything from a URI, a capture or a plan;
// mcp.claims is the request's claims ([core.Caller].Claims: one JSON object,
// such as the groups of an OAuth access token), or {} without any, so that a
// policy reads them as current_setting('mcp.claims', true)::jsonb; the
// statement timeout is the time left until the context's deadline.
// Captures, principals, ids and versions are always bind arguments: no SQL is
// built from request data, and a pool configured for the simple protocol is
// refused. A principal that [core.CheckPrincipal] refuses is refused before
// the database, as unavailable.
//
// # Reads
//
// A read's statement is pinned to the planned identity, which travels in the
// target's private authorization data: it returns the row while the
// principal can see it (row-level security) with its current version and
// content size, and the content only when the version is the planned one, the
// principal may read it and it fits its [core.ReadItem] Limit. So:
//
//   - not visible (revoked, deleted, never granted): [core.FailureUnavailable];
//   - visible with another version: [ErrChanged], which the gateway reports as
//     the retryable read_failed;
//   - larger than the limit: [*core.TooLargeError] with the stored size, and the
//     content is never transferred;
//   - a statement past its timeout: [ErrStatementTimeout], which matches
//     [context.DeadlineExceeded] (the item's timeout);
//   - a terminated backend, a lost connection or one that could not be made
//     (refused, or turned away by the server): [ErrConnection], a
//     [core.FailureOutage] (read_failed for a body; while planning or in a policy
//     check, the whole read's retryable [core.FailureOutage]); pgxpool
//     discards that connection.
//
// # The reference schema
//
// The schema of package migrations (projects, assets, grants under
// row-level security) is served by a [Source] like any other: its
// statements are the resources file migrations.ResourcesFile
// (migrations/resources.yaml, their only copy), which package config opens
// and `mcp-resources serve --postgres` serves.
//
// # Hosts with their own schema
//
// A [Source] serves a host's own tables with statements the host writes,
// under the same guarantees: a [SQLBinding] names a plan (or bundle)
// statement whose result columns, by name, give each item's key, version,
// MIME type and, optionally, a referenced object (object_key, object_etag,
// object_version_id, ...); a body statement pinned by $key and the version
// and bounded by its [core.ReadItem] Limit in the statement itself, which
// reads all the row items of a request (a bundle's bodies) in one round
// trip; and a completion statement per variable. Parameters are named ($tenant, $id, $key,
// $principal) and rewritten to positional bind arguments; no SQL is built
// from a value. [Source.Policy] is a policy of one statement that decides
// any number of keys at once (core's whole-plan Decide); its Key identifies
// it, and when the gateway names it as the policy in force
// (core.ReadRequest.Policy, core.ResourceMatch.Policy) the bindings of the
// same source fold its recheck into their bodies statement and plan inline
// content with its answer, naming it, so that a read's recheck costs no
// round trip of its own; under any other policy they offer no decision.
// [DatabaseDecides] is the mode where row-level security in the statements
// is the only gate. [Source.Check] prepares every statement against the
// database, checks its parameters, columns and types, the role and the
// login's membership of it, and reports the first mistake as one
// *core.ConfigError line; unchecked statements serve nothing.
//
// # The proof that storage enforces access
//
// [Source.Check] does not take the database's word for it: for every
// statement it runs (plan, bundle, body, decide, grant, completion) it
// finds, from the catalog, every table, view and function the statement
// reads, through views and SQL functions, and refuses a table without
// row-level security, one the role owns without FORCE ROW LEVEL SECURITY,
// one with no SELECT policy for the role, a view that runs as its owner, a
// SECURITY DEFINER function, a function whose body the catalog cannot see
// into, and a grant or binding statement whose answer cannot depend on
// the caller unless its binding is [SQLBinding].Public; SourceOptions.Exempt
// lets named objects through. [Source.Prove] runs it again while serving,
// and a source whose proof broke serves nothing until it holds again.
//
// An object a plan row references becomes a second item, a target with a
// [core.ObjectRef] (the row's object source, key, ETag, version id, size
// and MIME type) that the gateway routes to the reader registered under
// that source (package s3store's *Bucket, through core.WithObjectSource),
// pinned by the row's ETag and version id (a row with neither is pinned by
// the object source when it reads it, unless [SQLBinding].Unpinned says
// otherwise); the policy decides it by the row's key. The two packages never import each other. Each Source takes its own pool, so one host can serve several
// databases, each with its own credentials.
package postgres
