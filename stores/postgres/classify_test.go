package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"go.phpboyscout.uk/mcp/resources/core"
)

// outcome is how the gateway would report an item whose reader returned err.
func outcome(err error) core.IssueCode {
	var tooLarge *core.TooLargeError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &tooLarge):
		return core.IssueBudgetExceeded
	case core.KindOf(err) == core.FailureUnavailable:
		return core.IssueUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		return core.IssueTimeout
	}
	return core.IssueReadFailed
}

// TestClassifyMapsServerAndDriverErrorsToGatewayOutcomes proves each class
// of pgx and server error becomes the item outcome the store documents,
// with the original error kept as the private cause.
func TestClassifyMapsServerAndDriverErrorsToGatewayOutcomes(t *testing.T) {
	pg := func(code string) error { return &pgconn.PgError{Code: code, Message: "secret detail " + code} }
	cases := []struct {
		name string
		err  error
		want core.IssueCode
		is   error
	}{
		{"pg_terminate_backend (57P01) wrapped by pgx is read_failed", fmt.Errorf("batch: %w", pg("57P01")), core.IssueReadFailed, ErrConnection},
		{"admin shutdown (57P01) text from a closed conn", fmt.Errorf("%w: %w", pgconn.ErrConnClosed, io.EOF), core.IssueReadFailed, ErrConnection},
		{"canceled context stays canceled", context.Canceled, core.IssueReadFailed, context.Canceled},
		{"deadline is the item's timeout", context.DeadlineExceeded, core.IssueTimeout, context.DeadlineExceeded},
		{"wrapped deadline is the item's timeout", fmt.Errorf("read: %w", context.DeadlineExceeded), core.IssueTimeout, context.DeadlineExceeded},
		{"statement_timeout (57014) is the item's timeout", pg("57014"), core.IssueTimeout, ErrStatementTimeout},
		{"pg_terminate_backend (57P01) is read_failed", pg("57P01"), core.IssueReadFailed, ErrConnection},
		{"crash shutdown (57P02) is read_failed", pg("57P02"), core.IssueReadFailed, ErrConnection},
		{"cannot connect now (57P03) is read_failed", pg("57P03"), core.IssueReadFailed, ErrConnection},
		{"connection failure (08006) is read_failed", pg("08006"), core.IssueReadFailed, ErrConnection},
		{"database dropped (57P04) is read_failed", pg("57P04"), core.IssueReadFailed, ErrConnection},
		{"too many connections (53300) is read_failed", pg("53300"), core.IssueReadFailed, ErrConnection},
		{"insufficient_privilege (42501) is unavailable", pg("42501"), core.IssueUnavailable, nil},
		{"another server error is read_failed", pg("22P02"), core.IssueReadFailed, nil},
		{"unexpected EOF is a lost connection", io.ErrUnexpectedEOF, core.IssueReadFailed, ErrConnection},
		{"EOF is a lost connection", fmt.Errorf("receive message failed: %w", io.EOF), core.IssueReadFailed, ErrConnection},
		{"closed network connection is a lost connection", &net.OpError{Op: "read", Err: net.ErrClosed}, core.IssueReadFailed, ErrConnection},
		{"closed pgx connection is a lost connection", pgconn.ErrConnClosed, core.IssueReadFailed, ErrConnection},
		{"connect failure is a lost connection", &pgconn.ConnectError{}, core.IssueReadFailed, ErrConnection},
		{"any other error is read_failed", errors.New("boom"), core.IssueReadFailed, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := classify(c.err)
			if got == nil {
				t.Fatal("classify returned nil for an error")
			}
			if o := outcome(got); o != c.want {
				t.Errorf("outcome = %s, want %s (error %v)", o, c.want, got)
			}
			if c.is != nil && !errors.Is(got, c.is) {
				t.Errorf("classify(%v) = %v, does not match %v", c.err, got, c.is)
			}
			// A lost connection, and only that, is an outage: a whole read
			// that meets it while planning gets the retryable
			// FailureOutage instead of an invalid plan.
			if outage := core.KindOf(got) == core.FailureOutage; outage != (c.is == ErrConnection) {
				t.Errorf("classify(%v) outage = %v, want %v", c.err, outage, c.is == ErrConnection)
			}
			if !errors.Is(got, c.err) {
				var pgErr *pgconn.PgError
				if !errors.As(got, &pgErr) || !errors.As(c.err, new(*pgconn.PgError)) {
					t.Errorf("classify dropped the cause %v", c.err)
				}
			}
		})
	}
	if classify(nil) != nil {
		t.Error("classify(nil) != nil")
	}
}

// TestClassifyAConnectionTheServerTurnsAwayIsAnOutage connects with pgx to
// a loopback server that answers each startup with the FATAL error a
// PostgreSQL server sends when it refuses a connection (a database not
// accepting connections, too many connections, a database that is gone, a
// login refused, and the privilege to connect revoked): each is an outage
// matching ErrConnection, not the plain error that made a read of a second
// database that refused connections "resource could not be planned", nor,
// for 42501, the principal's unavailability.
func TestClassifyAConnectionTheServerTurnsAwayIsAnOutage(t *testing.T) {
	for _, code := range []string{"55000", "53300", "3D000", "28000", "42501"} {
		t.Run(code, func(t *testing.T) {
			addr := refusingServer(t, code)
			_, err := pgconn.Connect(t.Context(), "postgres://reader@"+addr+"/db?sslmode=disable&connect_timeout=5")
			if err == nil {
				t.Fatal("the connection was not refused")
			}
			if _, ok := errors.AsType[*pgconn.ConnectError](err); !ok {
				t.Fatalf("pgx returned %T, want a *pgconn.ConnectError: %v", err, err)
			}
			got := classify(err)
			if core.KindOf(got) != core.FailureOutage || !errors.Is(got, ErrConnection) {
				t.Fatalf("classify(%v) = %v (kind %v), want an outage matching ErrConnection", err, got, core.KindOf(got))
			}
			if pe, ok := errors.AsType[*pgconn.PgError](got); !ok || pe.Code != code {
				t.Errorf("classify dropped the server's error %s from the chain: %v", code, got)
			}
		})
	}
}

// refusingServer listens on loopback until the test ends and answers every
// connection's startup message with a FATAL error of SQLSTATE code.
func refusingServer(t *testing.T, code string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				be := pgproto3.NewBackend(c, c)
				if _, err := be.ReceiveStartupMessage(); err != nil {
					return
				}
				be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: "refused for the test"})
				_ = be.Flush()
			}()
		}
	}()
	return ln.Addr().String()
}

// TestDecideTurnsThePinnedRowIntoAnOutcome proves the order of the checks on
// a pinned statement's row: not visible before changed, changed before too
// large, and content only for the planned version within the limit.
func TestDecideTurnsThePinnedRowIntoAnOutcome(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	cases := []struct {
		name             string
		visible, samePln bool
		size             *int64
		body             []byte
		want             core.IssueCode
		wantChanged      bool
	}{
		{"no row is unavailable even when the version differs", false, false, n(3), nil, core.IssueUnavailable, false},
		{"another version is changed", true, false, n(3), nil, core.IssueReadFailed, true},
		{"no content is unavailable", true, true, nil, nil, core.IssueUnavailable, false},
		{"over the limit is too large", true, true, n(11), nil, core.IssueBudgetExceeded, false},
		{"within the limit is content", true, true, n(3), []byte("abc"), "", false},
		{"an empty body is content", true, true, n(0), []byte{}, "", false},
		{"a size without content is an error", true, true, n(3), nil, core.IssueReadFailed, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := decide(c.visible, c.samePln, c.size, c.body, 10, "text/plain", true)
			if o := outcome(err); o != c.want {
				t.Fatalf("outcome %q, want %q (err %v)", o, c.want, err)
			}
			if errors.Is(err, ErrChanged) != c.wantChanged {
				t.Fatalf("ErrChanged = %v, want %v", errors.Is(err, ErrChanged), c.wantChanged)
			}
			if err == nil && (p.IsZero() || p.Text() != string(c.body)) {
				t.Fatalf("payload %q, want %q", p.Text(), c.body)
			}
		})
	}
}

// A check or a proof calls an error the statement's mistake only when the
// server answered the statement with it: a terminated or lost connection
// met while it ran is the database's state, which the proof tries again
// (a mistake would stop the source until the next scheduled proof).
func TestStatementErrorIsTheStatementsOwnAnswerOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		own  bool
	}{
		{"undefined table", &pgconn.PgError{Severity: "ERROR", Code: "42P01"}, true},
		{"permission denied", fmt.Errorf("prepare: %w", &pgconn.PgError{Severity: "ERROR", Code: "42501"}), true},
		{"statement timeout", &pgconn.PgError{Severity: "ERROR", Code: "57014"}, true},
		{"terminated by an administrator", &pgconn.PgError{Severity: "FATAL", Code: "57P01"}, false},
		{"too many connections", &pgconn.PgError{Severity: "FATAL", Code: "53300"}, false},
		{"connection failure", &pgconn.PgError{Severity: "FATAL", Code: "08006"}, false},
		{"connection closed", io.ErrUnexpectedEOF, false},
		{"context", context.Canceled, false},
	} {
		if got := statementError(tc.err) != nil; got != tc.own {
			t.Errorf("%s: the statement's own: %v, want %v", tc.name, got, tc.own)
		}
	}
}
