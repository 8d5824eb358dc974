package main

import (
	"io"
	"net/http"

	"go.phpboyscout.uk/mcp/resources/mcpsdk/oauth"
)

// tokenTable is the --tokens file, an oauth.Tokens (its format, parsing
// and verifier are the package's, for Go hosts too).
type tokenTable struct{ *oauth.Tokens }

// parseTokens reads a tokens file. Errors name the line, never its content.
func parseTokens(r io.Reader) (*tokenTable, error) {
	t, err := oauth.ParseTokens(r)
	if err != nil {
		return nil, err
	}
	return &tokenTable{t}, nil
}

// protect returns h behind the tokens: a request without a token of the
// file is answered 401 with WWW-Authenticate: Bearer realm="mcp-resources"
// (and error="invalid_token" when it gave a bearer token).
func (t *tokenTable) protect(h http.Handler) http.Handler {
	return oauth.RequireStaticToken(t.Verify, "mcp-resources")(h)
}
