package connerr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestCauseSaysWhyInAFewWords: the server's message and SQLSTATE, the
// network error, a timeout, else the innermost error on one line, each
// found through any wrapping.
func TestCauseSaysWhyInAFewWords(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("failed to connect to `host=db user=app`: %w", err) }
	for _, c := range []struct {
		err  error
		want string
	}{
		{wrap(&pgconn.PgError{Message: "password authentication failed", Code: "28P01"}), "password authentication failed (SQLSTATE 28P01)"},
		{wrap(&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}), "connection refused"},
		{wrap(context.DeadlineExceeded), "no answer within 10s"},
		{wrap(errors.New("tls:\n  handshake   failure")), "tls: handshake failure"},
	} {
		if got := Cause(c.err, 10*time.Second); got != c.want {
			t.Errorf("Cause(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	inner := errors.New("inner")
	if got := Innermost(fmt.Errorf("a: %w", fmt.Errorf("b: %w", inner))); got != inner {
		t.Errorf("Innermost = %v, want the innermost error", got)
	}
}
