package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.phpboyscout.uk/mcp/resources/core"
)

// MaxClaimsBytes bounds the claims of a request ([core.WithClaims]) that a
// store sets as mcp.claims.
const MaxClaimsBytes = 64 << 10

// ErrInvalidClaims is the private cause of the Unavailable error for claims
// that are not one JSON object or are over MaxClaimsBytes. Such claims
// never reach the database.
var ErrInvalidClaims = errors.New("postgres: invalid claims")

// contextClaims returns the text every transaction sets as mcp.claims: the
// request's claims ([core.ContextClaims]), one JSON object, or "{}" when it
// has none, so that a policy can always read
// current_setting('mcp.claims', true)::jsonb.
func contextClaims(ctx context.Context) (string, error) {
	c := core.ContextClaims(ctx)
	if c == nil {
		return "{}", nil
	}
	if len(c) > MaxClaimsBytes {
		return "", core.Unavailable(fmt.Errorf("%w: over %d bytes", ErrInvalidClaims, MaxClaimsBytes))
	}
	if t := bytes.TrimSpace(c); len(t) == 0 || t[0] != '{' || !json.Valid(t) || bytes.IndexByte(t, 0) >= 0 {
		return "", core.Unavailable(fmt.Errorf("%w: not one JSON object", ErrInvalidClaims))
	}
	return string(c), nil
}
