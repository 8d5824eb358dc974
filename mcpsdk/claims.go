package mcpsdk

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
)

// TokenClaimsKey is the key of auth.TokenInfo.Extra whose value, a
// json.RawMessage holding one JSON object, the adapter hands to the stores
// as the request's claims ([core.Caller].Claims) beside its principal. The
// verifier of package mcpsdk/oauth puts the claims the operator named
// there; a host with its own verifier may do the same.
const TokenClaimsKey = "mcpres.claims"

// withCaller returns ctx carrying the caller of req ([core.WithCaller]):
// the principal of [Options.Principal], with the scopes and the claims of
// req's token when it has any. It is the one place the adapter builds a
// caller; a panic of the host's function goes to the caller of withCaller
// (see safeCaller).
func (a *adapter) withCaller(ctx context.Context, req mcp.Request) context.Context {
	c := core.Caller{Principal: a.principal(ctx, req)}
	if ti := tokenInfo(req); ti != nil {
		c.Scopes = ti.Scopes
		c.Claims, _ = ti.Extra[TokenClaimsKey].(json.RawMessage)
	}
	return core.WithCaller(ctx, c)
}

// safeCaller is withCaller turning a panic of the host's function into
// ok == false.
func (a *adapter) safeCaller(ctx context.Context, req mcp.Request) (cctx context.Context, ok bool) {
	defer func() {
		if recover() != nil {
			cctx, ok = ctx, false
		}
	}()
	return a.withCaller(ctx, req), true
}
