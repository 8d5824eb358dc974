package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"

	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

// Caller is who a request comes from, as the host authenticated it: the
// shape of the go-sdk's auth.TokenInfo, with the principal for its UserID
// and the claims the host chose to pass on for its Extra. Stores and
// policies take it from the request context ([CallerFrom]) on every resolve
// and read, so that access is decided for whoever is asking now; they never
// take any of it from a URI, a capture or a plan's public parts.
type Caller struct {
	// Principal is the identity the host authenticated; "" is none.
	Principal string
	// Scopes are the OAuth scopes the caller's verified token grants.
	// Gates that require a scope (a resources file's per-resource scopes)
	// read them.
	Scopes []string
	// Claims is one JSON object of the verified attributes of the
	// principal (groups, tenant, roles), such as the claims of an OAuth
	// access token, or nil. The PostgreSQL store sets it as mcp.claims
	// beside mcp.principal.
	Claims json.RawMessage
}

// errNoPrincipal is the private cause of the [FailureUnavailable] error that
// [CallerFrom] returns when ctx carries no principal.
var errNoPrincipal = errors.New("core: the request context carries no principal")

type callerKey struct{}

// WithCaller returns ctx carrying c, the caller the host authenticated (the
// go-sdk adapter sets it from the verified token). An empty Principal is
// carried as absent.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller set by [WithCaller]; stores call it on
// every resolve and read unless their options supply a function of the
// same signature (which returns a [FailureUnavailable] error when ctx carries no
// principal). When that caller has no principal, or there is none, it
// returns what there is (its scopes and claims) with a [FailureUnavailable] error
// whose private cause says so.
func CallerFrom(ctx context.Context) (Caller, error) {
	c, _ := ctx.Value(callerKey{}).(Caller)
	if len(c.Claims) == 0 {
		c.Claims = nil
	}
	if c.Principal == "" {
		return c, NewFailure(FailureUnavailable, errNoPrincipal)
	}
	return c, nil
}

// ErrInvalidPrincipal is the cause of [CheckPrincipal]'s errors.
var ErrInvalidPrincipal = errors.New("core: invalid principal")

// CheckPrincipal reports whether p can be a principal: 1 to 1024
// bytes of valid UTF-8 that hold no U+FFFD (the mark
// of a byte replaced by a decoder: ali\xffce, ali\xfece and ali\uFFFDce
// must never become one principal), no control character (C0, DEL, C1
// such as U+0085), no format character (bidirectional controls such as
// U+202E, zero-width characters, U+FEFF), no line or paragraph separator
// (U+2028, U+2029), no noncharacter, and neither starts nor ends with
// white space. Hosts check a principal where it enters (a tokens file, a
// token's claim, a flag) and refuse it, never rewrite it. The error wraps
// [ErrInvalidPrincipal] and never quotes p.
func CheckPrincipal(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty", ErrInvalidPrincipal)
	case len(p) > wire.MaxPrincipalBytes:
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidPrincipal, wire.MaxPrincipalBytes)
	case !utf8.ValidString(p):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidPrincipal)
	}
	for _, r := range p {
		switch {
		case r == utf8.RuneError:
			return fmt.Errorf("%w: holds U+FFFD, the replacement character", ErrInvalidPrincipal)
		case unicode.Is(unicode.Cc, r):
			return fmt.Errorf("%w: holds the control character U+%04X", ErrInvalidPrincipal, r)
		case unicode.Is(unicode.Cf, r):
			return fmt.Errorf("%w: holds the format character U+%04X", ErrInvalidPrincipal, r)
		case unicode.In(r, unicode.Zl, unicode.Zp):
			return fmt.Errorf("%w: holds the separator U+%04X", ErrInvalidPrincipal, r)
		case (r >= 0xFDD0 && r <= 0xFDEF) || r&0xFFFE == 0xFFFE:
			return fmt.Errorf("%w: holds the noncharacter U+%04X", ErrInvalidPrincipal, r)
		}
	}
	first, _ := utf8.DecodeRuneInString(p)
	last, _ := utf8.DecodeLastRuneInString(p)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return fmt.Errorf("%w: starts or ends with white space", ErrInvalidPrincipal)
	}
	return nil
}
