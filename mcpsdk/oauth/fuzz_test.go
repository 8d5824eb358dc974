package oauth

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"go.phpboyscout.uk/mcp/resources/core"
)

// FuzzVerify feeds arbitrary bearer tokens, seeded with a valid one and
// spoiled forms of it, to a verifier with keys: it never panics, a refusal
// always matches auth.ErrInvalidToken with the fixed text, and an accepted
// token always names the issuer's principal (only the valid seed can be
// accepted: nothing else is signed by the key).
func FuzzVerify(f *testing.F) {
	is := newIssuer(f)
	v, err := NewVerifier(&Options{Issuer: is.url(), Resource: testResource, Claims: []string{"groups"}})
	if err != nil {
		f.Fatal(err)
	}
	valid := sign(f, "RS256", is.key, is.kid, is.claims("alice"))
	parts := strings.Split(valid, ".")
	for _, s := range []string{valid, parts[0] + "." + parts[1] + ".", parts[0] + ".." + parts[2], "", ".", "..", "a.b.c",
		b64(map[string]string{"alg": "none"}) + "." + parts[1] + ".", b64(map[string]any{"alg": "RS256", "kid": 7}) + "." + parts[1] + "." + parts[2],
		b64(map[string]string{"alg": "RS256", "crit": "exp"}) + "." + parts[1] + "." + parts[2]} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		ti, err := v.Verify(context.Background(), token, nil)
		if err != nil {
			if !errors.Is(err, auth.ErrInvalidToken) || err.Error() != "invalid token" {
				t.Fatalf("refusal %v: want auth.ErrInvalidToken with the fixed text", err)
			}
			return
		}
		if ti.UserID != "alice" || token != valid {
			t.Fatalf("accepted a token that is not the signed one: %q -> %+v", token, ti)
		}
	})
}

// FuzzParseKeySet feeds arbitrary JWKS documents to the key set parser: it
// never panics and keeps only public asymmetric keys.
func FuzzParseKeySet(f *testing.F) {
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"h"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"RSA","kid":"r","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw","e":"AQAB"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","use":"enc"}]}`))
	f.Add([]byte(`{"keys":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		keys, err := parseKeySet(body)
		if err != nil {
			if !errors.Is(err, ErrKeysUnavailable) {
				t.Fatalf("error %v does not match ErrKeysUnavailable", err)
			}
			return
		}
		if len(keys) == 0 || len(keys) > maxKeys {
			t.Fatalf("%d keys without an error", len(keys))
		}
		for kid, k := range keys {
			switch k.Key.(type) {
			case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
			default:
				t.Fatalf("key %q is a %T: only public asymmetric keys may be kept", kid, k.Key)
			}
			if k.KeyID != kid || (k.Use != "" && k.Use != "sig") {
				t.Fatalf("key %q kept with id %q, use %q", kid, k.KeyID, k.Use)
			}
		}
	})
}

// FuzzStorable: storable never panics, and a JSON value it accepts holds
// valid UTF-8 and, decoded, no NUL.
func FuzzStorable(f *testing.F) {
	for _, s := range []string{`"a"`, `"\u0000"`, `"\ud800"`, `"\ud83d\ude00"`, `1e200000`, `[true,{"e":1E+5}]`, `"\\u0000"`, "\"\xff\"", `"\ud800\u`, `"\`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if storable(raw) != nil || !json.Valid(raw) {
			return
		}
		if !utf8.Valid(raw) {
			t.Fatalf("accepted invalid UTF-8 %q", raw)
		}
		var v any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber() // a number beyond float64 is still JSON
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if hasNUL(v) {
			t.Fatalf("accepted %q, which decodes to a NUL", raw)
		}
	})
}

// hasNUL reports whether a decoded JSON value holds a NUL in a string or
// an object key.
func hasNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, 0)
	case []any:
		for _, e := range v {
			if hasNUL(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.ContainsRune(k, 0) || hasNUL(e) {
				return true
			}
		}
	}
	return false
}

// bodyTransport answers every request with HTTP 200 and body.
type bodyTransport struct{ body []byte }

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(b.body)), Request: r}, nil
}

// FuzzIntrospectionAnswer feeds arbitrary introspection answers to a
// verifier: it never panics; a failure is a refusal (a *TokenError
// matching auth.ErrInvalidToken) or fails closed (not an invalid token);
// an accepted token has a valid principal, an exp in the future, and the
// answer said active true.
func FuzzIntrospectionAnswer(f *testing.F) {
	exp := time.Now().Add(time.Hour).Unix()
	for _, s := range []string{
		fmt.Sprintf(`{"active":true,"sub":"alice","aud":%q,"exp":%d,"scope":"a b","ext":{"groups":["eng"]}}`, testResource, exp),
		fmt.Sprintf(`{"active":true,"sub":"alice","aud":[%q],"exp":%d,"token_use":"refresh_token"}`, testResource, exp),
		`{"active":false}`, `{"active":"true"}`, `[]`, `null`, `{"active":true,"sub":"\ud800"}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		v, err := NewVerifier(&Options{Issuer: testIssuerURL, Resource: testResource, Claims: []string{"ext.groups"}, CacheTTL: -1,
			Introspection: &Introspection{URL: "https://id.example.test/introspect", ClientID: "c", ClientSecret: "s"},
			HTTPClient:    &http.Client{Transport: bodyTransport{body: body}}})
		if err != nil {
			t.Fatal(err)
		}
		ti, err := v.Verify(context.Background(), "opaque", nil)
		if err != nil {
			var te *TokenError
			if errors.As(err, &te) != errors.Is(err, auth.ErrInvalidToken) {
				t.Fatalf("error %v: a refusal must be a TokenError, and only a refusal", err)
			}
			return
		}
		var a struct {
			Active bool `json:"active"`
		}
		if json.Unmarshal(body, &a) != nil || !a.Active {
			t.Fatalf("accepted an answer without active true: %s", body)
		}
		if core.CheckPrincipal(ti.UserID) != nil || !ti.Expiration.After(time.Now().Add(-DefaultClockSkew)) {
			t.Fatalf("accepted %+v", ti)
		}
	})
}
