package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/mcpsdk"
)

// The defaults of [PostgresOptions]: the table and role of the reference
// schema's version 4, with the columns version 5 adds (package
// migrations).
const (
	DefaultAuditTable  = "mcpres.audit_events"
	DefaultAuditorRole = "mcpres_auditor"
)

// PostgresOptions configures [NewPostgres].
type PostgresOptions struct {
	// Table is the schema-qualified table ([DefaultAuditTable]); Role the
	// role every write switches to with SET LOCAL ROLE
	// ([DefaultAuditorRole]), which should have INSERT on Table and
	// nothing else. The pool's login role must be a member of it.
	Table, Role string
}

// Postgres is a [Sink] that writes each batch with one COPY into the
// audit table, in a transaction of its own as the auditor role.
type Postgres struct {
	pool  *pgxpool.Pool
	table pgx.Identifier
	role  string
}

// auditColumns are the columns of the audit table that COPY fills (those
// of removed, uris and uris_omitted came with version 5).
var auditColumns = []string{"at", "duration_us", "method", "tool", "uri", "principal", "issuer", "subject",
	"session_id", "client", "transport", "revision", "trace_id", "result", "error_kind", "items", "missing", "missing_uncounted",
	"removed", "uris", "uris_omitted"}

// NewPostgres returns a sink writing through pool, which it closes on
// Close.
func NewPostgres(pool *pgxpool.Pool, opts PostgresOptions) (*Postgres, error) {
	if pool == nil {
		return nil, errors.New("audit: NewPostgres with a nil pool")
	}
	if opts.Table == "" {
		opts.Table = DefaultAuditTable
	}
	if opts.Role == "" {
		opts.Role = DefaultAuditorRole
	}
	parts := strings.Split(opts.Table, ".")
	if len(parts) > 2 || slices.Contains(parts, "") {
		return nil, fmt.Errorf("audit: table %q is not [schema.]name", opts.Table)
	}
	return &Postgres{pool: pool, table: pgx.Identifier(parts), role: opts.Role}, nil
}

// nullable returns nil for "", so that an absent field is NULL.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// ErrTable is wrapped by [Postgres.Check]'s errors that say the database
// is not as the sink writes it (no table, a missing column, no role or no
// privilege), apart from the database being out of reach.
var ErrTable = errors.New("audit: the audit table is not as the sink writes it")

// Check asks PostgreSQL whether the sink can write: the table exists with
// every column Write fills, the role may INSERT into it, and the pool's
// login may switch to the role. Its error names what is missing, so that
// a server started against a table without a migration says so at start
// instead of failing every batch.
func (p *Postgres) Check(ctx context.Context) error {
	table := strings.Join(p.table, ".")
	var exists, role, insert, member bool
	var missing []string
	err := p.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL,
		EXISTS (SELECT FROM pg_roles WHERE rolname = $2),
		CASE WHEN EXISTS (SELECT FROM pg_roles WHERE rolname = $2)
			THEN coalesce(has_table_privilege($2, to_regclass($1), 'INSERT'), false) ELSE false END,
		CASE WHEN EXISTS (SELECT FROM pg_roles WHERE rolname = $2)
			THEN pg_has_role(current_user, $2, 'MEMBER') ELSE false END,
		coalesce((SELECT array_agg(c ORDER BY c) FROM unnest($3::text[]) c
			WHERE NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = to_regclass($1)
				AND a.attname = c AND a.attnum > 0 AND NOT a.attisdropped)), '{}')`,
		p.table.Sanitize(), p.role, auditColumns).Scan(&exists, &role, &insert, &member, &missing)
	switch {
	case err != nil:
		return pgFailure("check", err)
	case !exists:
		return fmt.Errorf("%w: no table %s: apply the migrations (mcp-resources migrate)", ErrTable, table)
	case len(missing) > 0:
		return fmt.Errorf("%w: table %s has no column %s: apply the migrations (mcp-resources migrate)", ErrTable, table, strings.Join(missing, ", "))
	case !role:
		return fmt.Errorf("%w: no role %s: apply the migrations (mcp-resources migrate)", ErrTable, p.role)
	case !insert:
		return fmt.Errorf("%w: role %s may not INSERT into %s", ErrTable, p.role, table)
	case !member:
		return fmt.Errorf("%w: the login is not a member of role %s", ErrTable, p.role)
	}
	return nil
}

// Write implements [Sink]: one transaction, SET LOCAL ROLE, one COPY.
func (p *Postgres) Write(ctx context.Context, batch []*mcpsdk.AuditEvent) error {
	rows := make([][]any, len(batch))
	for i, e := range batch {
		items := e.Items
		if items == nil {
			items = []mcpsdk.AuditItem{}
		}
		ib, err := json.Marshal(items)
		if err != nil {
			return fmt.Errorf("audit: encode items: %w", err)
		}
		var missing any
		if len(e.Missing) > 0 {
			mb, err := json.Marshal(e.Missing)
			if err != nil {
				return fmt.Errorf("audit: encode missing: %w", err)
			}
			missing = string(mb)
		}
		removed := e.Removed
		if removed == nil {
			removed = []mcpsdk.AuditRemoved{} // NULL is a row written without the column
		}
		rb, err := json.Marshal(removed)
		if err != nil {
			return fmt.Errorf("audit: encode removed: %w", err)
		}
		var uris any
		if len(e.URIs) > 0 {
			ub, err := json.Marshal(e.URIs)
			if err != nil {
				return fmt.Errorf("audit: encode uris: %w", err)
			}
			uris = string(ub)
		}
		rows[i] = []any{e.Time, e.Duration.Microseconds(), e.Method, nullable(e.Tool), nullable(e.URI), nullable(e.Principal),
			nullable(e.Issuer), nullable(e.Subject), nullable(e.Session), nullable(e.Client), nullable(e.Transport),
			e.Revision, nullable(e.TraceID), e.Result, nullable(e.ErrorKind), string(ib), missing, int32(e.MissingUncounted),
			string(rb), uris, int32(e.URIsOmitted)}
	}
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return pgFailure("begin", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit a no-op
	if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+pgx.Identifier{p.role}.Sanitize()); err != nil {
		return pgFailure("set role", err)
	}
	n, err := tx.CopyFrom(ctx, p.table, auditColumns, pgx.CopyFromRows(rows))
	if err != nil {
		return pgFailure("copy", err)
	}
	if n != int64(len(rows)) {
		return fmt.Errorf("audit: copy wrote %d of %d rows", n, len(rows))
	}
	if err := tx.Commit(ctx); err != nil {
		return pgFailure("commit", err)
	}
	return nil
}

// pgFailure is the error of a failed step: for a PostgreSQL error its
// SQLSTATE only, since the server's message may quote a row's values (a
// URI, a principal) and the error reaches the log.
func pgFailure(step string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return fmt.Errorf("audit: %s: SQLSTATE %s", step, pe.Code)
	}
	return fmt.Errorf("audit: %s: %w", step, err)
}

// Close implements [Sink]: it closes the pool.
func (p *Postgres) Close() error {
	p.pool.Close()
	return nil
}
