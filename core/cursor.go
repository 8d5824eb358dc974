package core

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"time"

	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

// listCursorLifetime is how long a list cursor stays valid after the page
// that issued it.
const listCursorLifetime = 10 * time.Minute

// A list cursor is 96 bytes, base64url without padding (128 characters):
//
//	offset size field
//	     0    1 format version (cursorVersion)
//	     1    1 method (listMethodResources or listMethodTemplates)
//	     2    4 key id: HMAC-SHA-256(key, "key-id\x00")[:4]
//	     6   32 registry revision
//	    38    8 position: index of the next definition to examine, in the
//	              method's listing order (big-endian uint64)
//	    46    8 expiry: Unix milliseconds (big-endian int64)
//	    54   10 scope tag: HMAC-SHA-256(key, "scope-tag\x00" || SHA-256(scope))[:10]
//	    64   32 MAC: HMAC-SHA-256(key, version || method || revision ||
//	              position || SHA-256(scope) || expiry)
//
// The MAC input has fixed-width fields only, so it is unambiguous. The scope
// enters it as the SHA-256 of the exact ScopeKey bytes, which the cursor does
// not carry: the verifier recomputes it from the request. The key id and the
// scope tag are not secret-bearing (they reveal nothing about the key or the
// scope without the key) and are deterministic, so a changed byte in them is
// refused like any other; they only let a refusal say "another key" or
// "another scope" instead of "altered", without putting an unkeyed hash of
// the scope (which may be a guessable principal id) into the cursor.
const (
	cursorVersion = 1

	cursorKeyIDBytes    = 4
	cursorScopeTagBytes = 10

	cursorOffMethod   = 1
	cursorOffKeyID    = 2
	cursorOffRevision = cursorOffKeyID + cursorKeyIDBytes
	cursorOffPosition = cursorOffRevision + sha256.Size
	cursorOffExpiry   = cursorOffPosition + 8
	cursorOffScopeTag = cursorOffExpiry + 8
	cursorOffMAC      = cursorOffScopeTag + cursorScopeTagBytes
	cursorRawBytes    = cursorOffMAC + sha256.Size

	cursorTextBytes = (cursorRawBytes*8 + 5) / 6

	// minCursorKeyBytes is the shortest signing key WithCursorKey accepts.
	minCursorKeyBytes = 32

	cursorKeyIDDomain    = "key-id\x00"
	cursorScopeTagDomain = "scope-tag\x00"
)

// listEnvelopeMaxBytes is the largest page envelope:
// {"resourceTemplates":[...],"nextCursor":"CURSOR"}. Base64url needs no
// JSON escaping.
const listEnvelopeMaxBytes = len(`{"resourceTemplates":[`) + len(`],"nextCursor":`) + cursorTextBytes + len(`""`) + len(`}`)

// The page envelope, cursor included, must fit the envelope space that
// every page budget keeps (limits.go): this fails to compile otherwise.
const _ = uint(minListEnvelopeBytes - listEnvelopeMaxBytes)

// Private causes of FailureInvalidCursor, reachable through Unwrap for logs.
var (
	errCursorTooLong   = errors.New("list cursor exceeds 4 KiB")
	errCursorMalformed = errors.New("list cursor is malformed")
	errCursorVersion   = errors.New("list cursor has an unknown format version")
	errCursorKey       = errors.New("list cursor was signed with another key")
	errCursorSignature = errors.New("list cursor signature does not verify: the cursor was altered")
	errCursorScope     = errors.New("list cursor was issued for another scope, or its scope tag was altered")
	errCursorMethod    = errors.New("list cursor was issued for another list method")
	errCursorRevision  = errors.New("list cursor was issued for another registry revision")
	errCursorExpired   = errors.New("list cursor has expired")
	errCursorPosition  = errors.New("list cursor position is out of range")
)

var cursorEncoding = base64.RawURLEncoding.Strict()

// cursorMAC returns the MAC of a cursor's fields for the given scope hash.
func (l *listing) cursorMAC(raw []byte, scope *[sha256.Size]byte) []byte {
	m := hmac.New(sha256.New, l.key)
	m.Write(raw[:cursorOffKeyID])                   // version, method
	m.Write(raw[cursorOffRevision:cursorOffExpiry]) // revision, position
	m.Write(scope[:])
	m.Write(raw[cursorOffExpiry:cursorOffScopeTag])
	return m.Sum(nil)
}

// cursorScopeTag returns the keyed scope tag of a scope hash.
func (l *listing) cursorScopeTag(scope *[sha256.Size]byte) []byte {
	m := hmac.New(sha256.New, l.key)
	m.Write([]byte(cursorScopeTagDomain))
	m.Write(scope[:])
	return m.Sum(nil)[:cursorScopeTagBytes]
}

// cursorKeyID returns the key id of key.
func cursorKeyID(key []byte) (id [cursorKeyIDBytes]byte) {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(cursorKeyIDDomain))
	copy(id[:], m.Sum(nil))
	return id
}

// encodeCursor issues a cursor for method m at position pos, bound to the
// registry revision, the scope hash and an expiry listCursorLifetime from now.
func (l *listing) encodeCursor(m listMethod, pos int, scope *[sha256.Size]byte) string {
	var raw [cursorRawBytes]byte
	raw[0] = cursorVersion
	raw[cursorOffMethod] = byte(m)
	copy(raw[cursorOffKeyID:], l.keyID[:])
	copy(raw[cursorOffRevision:], l.revision[:])
	binary.BigEndian.PutUint64(raw[cursorOffPosition:], uint64(pos))
	binary.BigEndian.PutUint64(raw[cursorOffExpiry:], uint64(l.now().Add(listCursorLifetime).UnixMilli()))
	copy(raw[cursorOffScopeTag:], l.cursorScopeTag(scope))
	copy(raw[cursorOffMAC:], l.cursorMAC(raw[:], scope))
	return cursorEncoding.EncodeToString(raw[:])
}

// decodeCursor verifies a cursor for method m, the scope hash and n
// definitions, and returns its position (0 < position < n). The error says
// why a cursor was refused; it is private.
func (l *listing) decodeCursor(s string, m listMethod, scope *[sha256.Size]byte, n int) (int, error) {
	if len(s) > wire.MaxCursorBytes {
		return 0, errCursorTooLong
	}
	if len(s) != cursorTextBytes {
		return 0, errCursorMalformed
	}
	var raw [cursorRawBytes]byte
	if k, err := cursorEncoding.Decode(raw[:], []byte(s)); err != nil || k != cursorRawBytes {
		return 0, errCursorMalformed
	}
	if raw[0] != cursorVersion {
		return 0, errCursorVersion
	}
	if subtle.ConstantTimeCompare(raw[cursorOffKeyID:cursorOffRevision], l.keyID[:]) != 1 {
		return 0, errCursorKey
	}
	tagOK := subtle.ConstantTimeCompare(raw[cursorOffScopeTag:cursorOffMAC], l.cursorScopeTag(scope)) == 1
	if !hmac.Equal(raw[cursorOffMAC:], l.cursorMAC(raw[:], scope)) {
		if !tagOK {
			return 0, errCursorScope
		}
		return 0, errCursorSignature
	}
	if !tagOK {
		// The MAC binds the scope, so the tag alone was altered.
		return 0, errCursorSignature
	}
	if listMethod(raw[cursorOffMethod]) != m {
		return 0, errCursorMethod
	}
	if subtle.ConstantTimeCompare(raw[cursorOffRevision:cursorOffPosition], l.revision[:]) != 1 {
		return 0, errCursorRevision
	}
	expiry := int64(binary.BigEndian.Uint64(raw[cursorOffExpiry:]))
	if l.now().UnixMilli() >= expiry {
		return 0, errCursorExpired
	}
	pos := binary.BigEndian.Uint64(raw[cursorOffPosition:])
	if pos == 0 || pos >= uint64(n) {
		return 0, errCursorPosition
	}
	return int(pos), nil
}
