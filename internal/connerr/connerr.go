// Package connerr says in a few words why a connection to a store failed,
// for the one-line configuration errors of the command and of package
// config.
package connerr

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Cause says why err, from connecting with a deadline of timeout, happened:
// the PostgreSQL server's own message and SQLSTATE (a wrong password, a
// missing database), the network error, or a timeout; else the innermost
// error's text on one line. pgx's own text repeats the address for every
// attempt. The result may still hold what the driver quoted: callers that
// know secrets remove them.
func Cause(err error, timeout time.Duration) string {
	var pe *pgconn.PgError
	var ne *net.OpError
	switch {
	case errors.As(err, &pe):
		return pe.Message + " (SQLSTATE " + pe.Code + ")"
	case errors.As(err, &ne):
		return ne.Err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer within " + timeout.String()
	}
	return strings.Join(strings.Fields(Innermost(err).Error()), " ")
}

// Innermost returns the innermost error of err's chain, which for pgx and
// the AWS SDK is the one that says what went wrong without repeating the
// connection string.
func Innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
