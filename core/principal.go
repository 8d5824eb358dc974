package core

import (
	"context"
	"errors"
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
