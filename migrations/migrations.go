// Package migrations holds the reference schema of this module as versioned
// SQL, embedded in the package, and applies it with goose.
//
// The schema lives in the PostgreSQL schema [Schema] ("mcpres"):
//
//   - projects (id, title);
//   - assets (project_id, id, version, name, title, mime_type, body,
//     body_is_text, and an optional object reference: object_bucket,
//     object_key, object_etag, object_version_id, object_size); a trigger
//     bumps version on every update;
//   - grants (principal, project_id, asset_id or NULL for the whole project,
//     can_discover, can_read, disclose_issue_uri).
//
// Row-level security on all three tables is keyed on the transaction-local
// setting mcp.principal (read as NULLIF(current_setting('mcp.principal',
// true), ”)): a principal sees its own grants, the assets it may discover or
// read, and the projects in which it may discover something. The role
// [ReaderRole] has SELECT on the tables, does not own them and cannot bypass
// row-level security; readers switch to it inside each transaction.
//
// Ids of projects and assets are 1-128 unreserved URI characters
// (A-Z a-z 0-9 . _ ~ -) that do not start with a dot.
//
// Versions are files named NNNNN_what.sql under sql/; a change to the schema
// is a new file, never an edit of an applied one. Version 2 adds change
// notifications: triggers on projects, assets and grants issue NOTIFY on the
// channel [ChangeChannel] with the changed ids as JSON, never rows or bodies
// ({"t":"a","p":PROJECT,"a":ASSET}, "t" being p, a or g for a project, an
// asset or a grant, and "a" absent for a project-wide grant), delivered when
// the writing transaction commits; this module no longer reads that
// channel, and the version stays because applied versions are never
// edited. Version 3 adds key notifications on the channel [KeyChannel] for
// the reference schema's resources file ([ResourcesFile]) and for
// stores/postgres Source.Listener: the changed item's key PROJECT/ASSET,
// PROJECT/* for every asset of a project, and "projects" for the project
// list. Version 4 adds the audit trail: the append-only table
// audit_events ([AuditTable]) that package mcpsdk/audit writes as the role
// [AuditorRole], which has INSERT on it and nothing else. Version 5 adds
// its columns removed (what a read refused and what decided it), uris and
// uris_omitted (what a subscriptions/listen watched); the audit sink
// writes them, so a database behind version 5 refuses its batches.
//
// Applying is safe to repeat and to run concurrently: goose takes a
// session-level advisory lock in the database for the whole run, and records
// applied versions in the table [VersionTable]. The reader role is created
// once per cluster; concurrent applies in different databases of one cluster
// tolerate each other's CREATE ROLE.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

const (
	// Schema is the PostgreSQL schema that holds the reference tables.
	Schema = "mcpres"
	// ReaderRole is the role that stores switch to for every read. It has
	// SELECT on the reference tables, owns none of them and has neither
	// SUPERUSER nor BYPASSRLS. The login role of a store's pool must be an
	// inheriting member of it (GRANT mcpres_reader TO app_login) or a
	// superuser.
	ReaderRole = "mcpres_reader"
	// VersionTable is the table, in the connection's current schema, where
	// goose records the applied versions.
	VersionTable = "mcpres_migrations"
	// ChangeChannel is the channel on which the schema's triggers NOTIFY
	// changed ids (version 2). Nothing in this module listens on it any
	// more: see [KeyChannel].
	ChangeChannel = "mcpres_changes"
	// KeyChannel is the channel on which the schema's triggers NOTIFY the
	// keys of changed items as a key listener reads them (version 3).
	KeyChannel = "mcpres_keys"
	// AuditTable is the audit trail's table (version 4, with the columns
	// of version 5), schema-qualified.
	AuditTable = Schema + ".audit_events"
	// AuditorRole is the role the audit sink writes as: INSERT on
	// [AuditTable], nothing else. The sink's login role must be a member
	// of it (GRANT mcpres_auditor TO audit_login) or a superuser.
	AuditorRole = "mcpres_auditor"
	// LockID is the key of the advisory lock held while migrating.
	LockID int64 = 0x6d63707265730001 // "mcpres" 0001
)

//go:embed sql/*.sql
var files embed.FS

// ResourcesFileName names [ResourcesFile] in messages: its path in the
// module.
const ResourcesFileName = "migrations/resources.yaml"

// ResourcesFile is the reference schema as a resources file (package
// config): its sources, its policy (the grants table) and its resources,
// with the reference server's settings as ${MCPRES_...} references. It is
// the only copy of the schema's SQL statements; `mcp-resources serve
// --postgres` serves it through the same path as any --config file.
//
//go:embed resources.yaml
var ResourcesFile []byte

// FS returns the embedded migration files, one goose SQL file per version.
func FS() fs.FS {
	sub, err := fs.Sub(files, "sql")
	if err != nil {
		panic(err) // the embedded directory always exists
	}
	return sub
}

// Apply brings the reference schema in db up to date and returns the
// versions it applied (none when the schema is current). It is safe to call
// again and from several processes at once: the runs serialize on an
// advisory lock, and a run that finds the schema current changes nothing.
// The connecting role must be able to create schemas in the database and,
// the first time in a cluster, roles.
func Apply(ctx context.Context, db *sql.DB) ([]int64, error) {
	if db == nil {
		return nil, errors.New("migrations: nil *sql.DB")
	}
	p, err := provider(db)
	if err != nil {
		return nil, err
	}
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrations: apply: %w", err)
	}
	applied := make([]int64, 0, len(results))
	for _, r := range results {
		applied = append(applied, r.Source.Version)
	}
	return applied, nil
}

// Version returns the newest version among the embedded migrations.
func Version() int64 {
	names, err := fs.Glob(files, "sql/*.sql")
	if err != nil || len(names) == 0 {
		panic("migrations: no embedded migrations") // fixed at build time
	}
	var newest int64
	for _, name := range names {
		digits, _, _ := strings.Cut(path.Base(name), "_")
		v, err := strconv.ParseInt(digits, 10, 64)
		if err != nil {
			panic("migrations: bad file name " + name)
		}
		newest = max(newest, v)
	}
	return newest
}

func provider(db *sql.DB) (*goose.Provider, error) {
	locker, err := lock.NewPostgresSessionLocker(
		lock.WithLockID(LockID),
		lock.WithLockTimeout(1, 600),  // retry every second, for ten minutes
		lock.WithUnlockTimeout(1, 60), // and give the lock back within a minute
	)
	if err != nil {
		return nil, fmt.Errorf("migrations: locker: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, FS(),
		goose.WithTableName(VersionTable),
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}
