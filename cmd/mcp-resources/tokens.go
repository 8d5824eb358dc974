package main

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/mcpsdk/oauth"
)

// A tokens file maps bearer tokens to principals without storing a token:
//
//	# principal   token hash (mcp-resources hash-token prints it)
//	alice         sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824
//
// Blank lines and lines starting with # are ignored. A principal is any
// text without spaces that core.CheckPrincipal accepts.
const tokenHashPrefix = "sha256:"

// tokenEntry is one line of a tokens file.
type tokenEntry struct {
	principal string
	hash      [sha256.Size]byte
}

// tokenTable verifies bearer tokens against the hashes of a tokens file.
type tokenTable struct{ entries []tokenEntry }

// parseTokens reads a tokens file. Errors name the line, never its content.
func parseTokens(r io.Reader) (*tokenTable, error) {
	t := &tokenTable{}
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
		if err := checkFilePrincipal(principal); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err) // the error never quotes the principal
		}
		raw, ok := strings.CutPrefix(digest, tokenHashPrefix)
		var e tokenEntry
		if b, err := hex.DecodeString(raw); !ok || err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("line %d: the token hash must be sha256: and 64 hex digits (mcp-resources hash-token prints one)", n)
		} else {
			copy(e.hash[:], b)
		}
		if seen[e.hash] {
			return nil, fmt.Errorf("line %d: the same token hash appears twice", n)
		}
		seen[e.hash] = true
		e.principal = principal
		t.entries = append(t.entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(t.entries) == 0 {
		return nil, fmt.Errorf("no tokens in the file")
	}
	return t, nil
}

// principal returns the principal of token. Every entry is compared, in
// constant time, so the time taken does not depend on which entry matched.
func (t *tokenTable) principal(token string) (string, bool) {
	h := sha256.Sum256([]byte(token))
	found := -1
	for i := range t.entries {
		if subtle.ConstantTimeCompare(h[:], t.entries[i].hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return t.entries[found].principal, true
}

// protect returns h behind the tokens: a request without a token of the
// file is answered 401 with WWW-Authenticate: Bearer realm="mcp-resources"
// (and error="invalid_token" when it gave a bearer token).
func (t *tokenTable) protect(h http.Handler) http.Handler {
	return oauth.RequireStaticToken(t.verify, "mcp-resources")(h)
}

// hashToken returns the tokens-file form of a token's hash.
func hashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return tokenHashPrefix + hex.EncodeToString(h[:])
}

// checkFilePrincipal reports whether p can be a principal of a tokens file:
// one that core.CheckPrincipal accepts, without white space (which
// separates the fields of a line). The error never quotes p.
func checkFilePrincipal(p string) error {
	if err := core.CheckPrincipal(p); err != nil {
		return err
	}
	if strings.IndexFunc(p, unicode.IsSpace) >= 0 {
		return fmt.Errorf("%w: holds white space", core.ErrInvalidPrincipal)
	}
	return nil
}
