package core

import (
	"context"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// PrincipalFunc returns the principal that the host authenticated for the
// request carried by ctx. Stores take one in their options and call it on
// every resolve and read, so that access is decided for whoever is asking
// now; they never take a principal from a URI, a capture or a plan's public
// parts. Return an [Unavailable] error when ctx carries no principal.
//
// Most hosts put the principal into the request context with [WithPrincipal]
// (the go-sdk adapter does so from the authenticated token) and use
// [ContextPrincipal], which is also what a store uses when its option is nil.
type PrincipalFunc func(ctx context.Context) (string, error)

// ErrNoPrincipal is the private cause of the [Unavailable] error that
// [ContextPrincipal] returns when ctx carries no principal.
var ErrNoPrincipal = errors.New("core: the request context carries no principal")

type principalKey struct{}

// WithPrincipal returns ctx carrying principal, the identity the host
// authenticated. An empty principal is carried as absent.
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

// ContextPrincipal is the [PrincipalFunc] that returns the principal set by
// [WithPrincipal], or an [Unavailable] error wrapping [ErrNoPrincipal] when
// there is none.
func ContextPrincipal(ctx context.Context) (string, error) {
	if p, ok := ctx.Value(principalKey{}).(string); ok && p != "" {
		return p, nil
	}
	return "", Unavailable(ErrNoPrincipal)
}

// MaxPrincipalBytes bounds a principal, in bytes of UTF-8.
const MaxPrincipalBytes = 1024

// ErrInvalidPrincipal is the cause of [CheckPrincipal]'s errors.
var ErrInvalidPrincipal = errors.New("core: invalid principal")

// CheckPrincipal reports whether p can be a principal: 1 to
// [MaxPrincipalBytes] bytes of valid UTF-8 that hold no U+FFFD (the mark
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
	case len(p) > MaxPrincipalBytes:
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidPrincipal, MaxPrincipalBytes)
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
