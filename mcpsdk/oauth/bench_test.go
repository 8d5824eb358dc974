package oauth

import (
	"context"
	"testing"
)

// BenchmarkVerify is the cost a verified request adds: one RS256 (2048-bit)
// signature check and the claims, with the keys cached.
func BenchmarkVerify(b *testing.B) {
	is := newIssuer(b)
	v, err := NewVerifier(&Options{Issuer: is.url(), Resource: testResource, Claims: []string{"groups"}})
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
}
