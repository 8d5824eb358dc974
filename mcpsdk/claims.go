package mcpsdk

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
)

// TokenClaimsKey is the key of auth.TokenInfo.Extra whose value, a
// json.RawMessage holding one JSON object, the adapter hands to the stores
// as the request's claims ([core.WithClaims]) beside its principal. The
// verifier of package mcpsdk/oauth puts the claims the operator named
// there; a host with its own verifier may do the same.
const TokenClaimsKey = "mcpres.claims"

// withTokenClaims returns ctx carrying the claims ([core.WithClaims]) and
// the scopes ([core.WithScopes]) of req's token, when it has any.
func withTokenClaims(ctx context.Context, req mcp.Request) context.Context {
	ti := tokenInfo(req)
	if ti == nil {
		return ctx
	}
	if len(ti.Scopes) > 0 {
		ctx = core.WithScopes(ctx, ti.Scopes)
	}
	if c, ok := ti.Extra[TokenClaimsKey].(json.RawMessage); ok && len(c) > 0 {
		return core.WithClaims(ctx, c)
	}
	return ctx
}
