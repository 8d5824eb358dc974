package oauth

import (
	"context"
	"testing"
	"time"
)

// BenchmarkVerify is the cost a verified request adds: one RS256 (2048-bit)
// signature check and the claims with the keys cached ("uncached"), or,
// for a token already verified, the cache lookup ("cached").
func BenchmarkVerify(b *testing.B) {
	is := newIssuer(b)
	for _, mode := range []struct {
		name string
		ttl  time.Duration
	}{{"uncached", -1}, {"cached", 0}} {
		b.Run(mode.name, func(b *testing.B) {
			v, err := NewVerifier(&Options{Issuer: is.url(), Resource: testResource, Claims: []string{"groups"}, CacheTTL: mode.ttl})
			if err != nil {
				b.Fatal(err)
			}
			tok := sign(b, "RS256", is.key, is.kid, is.claims("alice"))
			if _, err := v.Verify(context.Background(), tok, nil); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(context.Background(), tok, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
