package oauth

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"go.phpboyscout.uk/mcp/resources/core"
)

// tokenHashPrefix starts every token hash of a tokens file.
const tokenHashPrefix = "sha256:"

// Tokens is a tokens file: a table of bearer tokens of a host's own, each
// mapped to its principal, that stores no token, only its SHA-256 hash:
//
//	# principal   token hash (mcp-resources hash-token, or HashToken, prints it)
//	alice         sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824
//
// Blank lines and lines starting with # are ignored; a principal is any
// text without white space that core.CheckPrincipal accepts. It is the
// file of mcp-resources serve --tokens. [Tokens.Verify] is a go-sdk
// auth.TokenVerifier; such tokens carry no expiration, so protect a
// handler with it through [RequireStaticToken]:
//
//	tokens, err := oauth.ParseTokens(f)
//	mux.Handle("/mcp", oauth.RequireStaticToken(tokens.Verify, "my-server")(handler))
//
// A Tokens is safe for concurrent use; it does not change once parsed.
type Tokens struct{ entries []tokenEntry }

// tokenEntry is one line of a tokens file.
type tokenEntry struct {
	principal string
	hash      [sha256.Size]byte
}

// ParseTokens reads a tokens file (see [Tokens]). It refuses a line that
// is not "PRINCIPAL sha256:HEX", a principal the file cannot hold, a hash
// that appears twice, a line longer than 64 KiB and a file without
// tokens. Its errors name the line, never its content, so that no token
// hash or principal reaches a log.
func ParseTokens(r io.Reader) (*Tokens, error) {
	t := &Tokens{}
	sc := bufio.NewScanner(r)
	seen := map[[sha256.Size]byte]bool{}
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("line %d: want \"PRINCIPAL sha256:HEX\"", n)
		}
		principal, digest := fields[0], fields[1]
		if err := checkTokensPrincipal(principal); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err) // the error never quotes the principal
		}
		raw, ok := strings.CutPrefix(digest, tokenHashPrefix)
		e := tokenEntry{principal: principal}
		if b, err := hex.DecodeString(raw); !ok || err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("line %d: the token hash must be sha256: and 64 hex digits (mcp-resources hash-token prints one)", n)
		} else {
			copy(e.hash[:], b)
		}
		if seen[e.hash] {
			return nil, fmt.Errorf("line %d: the same token hash appears twice", n)
		}
		seen[e.hash] = true
		t.entries = append(t.entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the tokens file: %w", err)
	}
	if len(t.entries) == 0 {
		return nil, errors.New("no tokens in the file")
	}
	return t, nil
}

// Verify is the go-sdk auth.TokenVerifier of the file: a token of the file
// becomes its principal, as TokenInfo.UserID (the principal the mcpsdk
// adapter hands the stores), with no expiration; any other token is
// auth.ErrInvalidToken. Every entry is compared in constant time, so the
// time taken does not depend on which entry matched.
func (t *Tokens) Verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	h := sha256.Sum256([]byte(token))
	found := -1
	for i := range t.entries {
		if subtle.ConstantTimeCompare(h[:], t.entries[i].hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: t.entries[found].principal}, nil
}

// HashToken returns the tokens-file form of token's hash,
// "sha256:" and 64 hex digits.
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return tokenHashPrefix + hex.EncodeToString(h[:])
}

// TokensLine returns the tokens-file line that maps token to principal, or
// the error [ParseTokens] would give for a principal the file cannot hold
// (one core.CheckPrincipal refuses, or with white space), which never
// quotes it.
func TokensLine(principal, token string) (string, error) {
	if err := checkTokensPrincipal(principal); err != nil {
		return "", err
	}
	return principal + " " + HashToken(token), nil
}

// checkTokensPrincipal reports whether p can be a principal of a tokens
// file: one that core.CheckPrincipal accepts, without white space (which
// separates the fields of a line). The error never quotes p.
func checkTokensPrincipal(p string) error {
	if err := core.CheckPrincipal(p); err != nil {
		return err
	}
	if strings.IndexFunc(p, unicode.IsSpace) >= 0 {
		return fmt.Errorf("%w: holds white space", core.ErrInvalidPrincipal)
	}
	return nil
}
