package core

import (
	"context"
	"encoding/json"
)

type claimsKey struct{}

// WithClaims returns ctx carrying claims: one JSON object of the verified
// attributes of the principal (groups, tenant, roles) that the host's
// authentication chose to pass on, such as the claims of an OAuth access
// token. Stores that can use them read them with [ContextClaims] (the
// PostgreSQL store sets them as mcp.claims beside mcp.principal). Like the
// principal, claims come only from what the host verified, never from a URI
// or a capture. A nil or empty value is carried as absent.
func WithClaims(ctx context.Context, claims json.RawMessage) context.Context {
	return context.WithValue(ctx, claimsKey{}, claims)
}

// ContextClaims returns the claims set by [WithClaims], or nil when there
// are none.
func ContextClaims(ctx context.Context) json.RawMessage {
	c, _ := ctx.Value(claimsKey{}).(json.RawMessage)
	if len(c) == 0 {
		return nil
	}
	return c
}

type scopesKey struct{}

// WithScopes returns ctx carrying the OAuth scopes that the caller's
// verified token grants. Gates that require a scope (a resources file's
// per-resource scopes) read them with [ContextScopes]; like the principal,
// scopes come only from what the host verified.
func WithScopes(ctx context.Context, scopes []string) context.Context {
	return context.WithValue(ctx, scopesKey{}, scopes)
}

// ContextScopes returns the scopes set by [WithScopes], or nil.
func ContextScopes(ctx context.Context) []string {
	s, _ := ctx.Value(scopesKey{}).([]string)
	return s
}
