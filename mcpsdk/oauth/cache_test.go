package oauth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"sync"
	"testing"
	"time"
)

// A verified token's cached result never outlives the token (exp plus the
// skew) nor the keys it was verified with: once a refresh drops its key,
// the same token is verified afresh and refused. A caller changing the
// result it got does not change the next caller's.
func TestVerifiedTokenCacheHonoursExpiryAndKeys(t *testing.T) {
	is := newIssuer(t)
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	v := newTestVerifier(t, is, func(o *Options) { o.Now = clock; o.MinRefresh = time.Second; o.CacheTTL = time.Hour })
	c := is.claims("alice")
	c["exp"] = now.Add(2 * time.Minute).Unix()
	tok := is.token(t, c)
	first, err := v.Verify(context.Background(), tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	first.UserID, first.Scopes[0] = "mallory", "admin"
	again, err := v.Verify(context.Background(), tok, nil)
	if err != nil || again.UserID != "alice" || again.Scopes[0] != "resources:read" {
		t.Fatalf("the cached result: %+v, %v; want alice's own, unchanged by the first caller", again, err)
	}
	advance(2*time.Minute + DefaultClockSkew + time.Second)
	if _, err := v.Verify(context.Background(), tok, nil); reason(err) != ReasonExpired {
		t.Fatalf("past exp and the skew: %v, want %s (not the cached result)", err, ReasonExpired)
	}

	c["exp"] = clock().Add(time.Hour).Unix()
	tok = is.token(t, c)
	if _, err := v.Verify(context.Background(), tok, nil); err != nil {
		t.Fatal(err)
	}
	rotated, _ := rsa.GenerateKey(rand.Reader, 2048)
	is.key, is.kid = rotated, "k2" // the issuer drops k1
	advance(2 * time.Second)
	if _, err := v.Verify(context.Background(), is.token(t, is.claims("bob")), nil); err != nil {
		t.Fatalf("a token of the new key (refreshes the keys): %v", err)
	}
	if _, err := v.Verify(context.Background(), tok, nil); reason(err) != ReasonKey {
		t.Fatalf("a cached token whose key the refresh dropped: %v, want %s", err, ReasonKey)
	}
}

// Without the cache every request is verified afresh: a token past exp
// is refused even if it was accepted a moment before.
func TestNegativeCacheTTLVerifiesEveryRequest(t *testing.T) {
	is := newIssuer(t)
	v := newTestVerifier(t, is, func(o *Options) { o.CacheTTL = -1 })
	if v.cache != nil {
		t.Fatal("a negative CacheTTL kept a cache")
	}
	if _, err := v.Verify(context.Background(), is.token(t, is.claims("alice")), nil); err != nil {
		t.Fatal(err)
	}
}
