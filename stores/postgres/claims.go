package postgres

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"go.phpboyscout.uk/mcp/resources/core"
)

// MaxClaimsBytes bounds the claims of a request ([core.Caller].Claims) that a
// store sets as mcp.claims.
const MaxClaimsBytes = 64 << 10

// ErrInvalidClaims is the private cause of the Unavailable error for claims
// that are not one JSON object or are over MaxClaimsBytes. Such claims
// never reach the database.
var ErrInvalidClaims = errors.New("postgres: invalid claims")

// claimsText returns the text every transaction sets as mcp.claims: the
// request's claims c ([core.Caller].Claims), one JSON object, or "{}" when
// it has none, so that a policy can always read
// current_setting('mcp.claims', true)::jsonb.
func claimsText(c json.RawMessage) (string, error) {
	if len(c) == 0 {
		return "{}", nil
	}
	if len(c) > MaxClaimsBytes {
		return "", core.NewFailure(core.FailureUnavailable, fmt.Errorf("%w: over %d bytes", ErrInvalidClaims, MaxClaimsBytes))
	}
	if t := bytes.TrimSpace(c); len(t) == 0 || t[0] != '{' || !json.Valid(t) || bytes.IndexByte(t, 0) >= 0 {
		return "", core.NewFailure(core.FailureUnavailable, fmt.Errorf("%w: not one JSON object", ErrInvalidClaims))
	}
	return string(c), nil
}
