package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"go.phpboyscout.uk/mcp/resources/core"
)

// classify maps an error of pgx or the server to what the gateway branches
// on:
//
//   - context cancellation and deadlines keep their context error;
//   - query_canceled (57014), which a statement_timeout raises, matches
//     ErrStatementTimeout and context.DeadlineExceeded: the item's timeout;
//   - insufficient_privilege (42501) is core.FailureUnavailable: the principal's
//     role may not see the item;
//   - a connection that could not be made ([pgconn.ConnectError]: refused,
//     unreachable, or turned away by the server for any reason, such as a
//     database not accepting connections (55000), too many connections
//     (53300), a database that no longer exists (3D000) or a login the
//     server refuses), operator intervention (class 57 but query_canceled:
//     admin_shutdown 57P01 from pg_terminate_backend, crash_shutdown
//     57P02, cannot_connect_now 57P03, database_dropped 57P04), a server
//     out of resources (class 53), connection exceptions (class 08) and a
//     lost connection (EOF, a closed connection, a network error) are
//     core.FailureOutage and match ErrConnection: the statement did not run, and
//     the gateway reports them as FailureOutage (retryable) while planning
//     or deciding, and as the item's read_failed while reading a body. A
//     server error met while connecting is the database's refusal of the
//     connection, never the principal's or the statement's: it is an
//     outage before it is anything else;
//   - anything else stays a plain error: read_failed, or FailureInvalidPlan
//     while planning.
//
// The server's message stays in the chain as the private cause.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("postgres: %w", err)
	}
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		return core.NewFailure(core.FailureOutage, fmt.Errorf("%w: %w", ErrConnection, err))
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "57014":
			return fmt.Errorf("%w (%w): %w", ErrStatementTimeout, context.DeadlineExceeded, err)
		case pgErr.Code == "42501":
			return core.NewFailure(core.FailureUnavailable, fmt.Errorf("postgres: insufficient privilege: %w", err))
		case strings.HasPrefix(pgErr.Code, "57"), strings.HasPrefix(pgErr.Code, "53"), strings.HasPrefix(pgErr.Code, "08"):
			return core.NewFailure(core.FailureOutage, fmt.Errorf("%w: %w", ErrConnection, err))
		}
		return fmt.Errorf("postgres: %w", err)
	}
	if pgconn.Timeout(err) {
		return fmt.Errorf("postgres: %w: %w", context.DeadlineExceeded, err)
	}
	var netErr net.Error
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.As(err, &netErr) || errors.Is(err, pgconn.ErrConnClosed) {
		return core.NewFailure(core.FailureOutage, fmt.Errorf("%w: %w", ErrConnection, err))
	}
	return fmt.Errorf("postgres: %w", err)
}

// statementError returns the server's error when err is its answer to the
// statement sent (a *pgconn.PgError the statement caused), or nil when err
// says nothing of the statement: a lost or terminated connection, operator
// intervention, a server out of resources (what classify calls an outage),
// or no server error at all. A check or a proof reports only the first as
// the statement's mistake; the rest is the database's state, and it is
// tried again.
func statementError(err error) *pgconn.PgError {
	pe, ok := errors.AsType[*pgconn.PgError](err)
	if !ok || errors.Is(classify(err), ErrConnection) {
		return nil
	}
	return pe
}
