package oauth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

const testResource = "https://mcp.example.test/mcp"

// issuer is a minimal authorization server for the verifier: discovery and
// a JWKS over HTTP, with a counter of JWKS fetches and a switch that makes
// it fail.
type issuer struct {
	srv     *httptest.Server
	key     *rsa.PrivateKey
	kid     string
	fetches atomic.Int64
	down    atomic.Bool
}

func newIssuer(t testing.TB) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{key: key, kid: "k1"}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": is.url(), "jwks_uri": is.srv.URL + "/jwks",
			"authorization_endpoint": is.srv.URL + "/auth", "token_endpoint": is.srv.URL + "/token"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		if is.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
			{Key: &is.key.PublicKey, KeyID: is.kid, Algorithm: "RS256", Use: "sig"},
			// A symmetric key in the set must never verify anything.
			{Key: []byte("a-shared-secret-that-is-long-enough"), KeyID: "hmac", Algorithm: "HS256"},
		}})
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuer) url() string { return is.srv.URL + "/" }

// claims returns valid claims for principal, which tests then spoil.
func (is *issuer) claims(sub string) map[string]any {
	now := time.Now()
	return map[string]any{"iss": is.url(), "sub": sub, "aud": []string{testResource},
		"exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "nbf": now.Add(-time.Second).Unix(),
		"scp": []string{"resources:read"}, "groups": []string{"eng"}, "email": sub + "@example.test"}
}

// sign signs claims with key under kid and alg.
func sign(t testing.TB, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (is *issuer) token(t *testing.T, claims map[string]any) string {
	return sign(t, jose.RS256, is.key, is.kid, claims)
}

func newTestVerifier(t *testing.T, is *issuer, mod func(*Options)) *Verifier {
	t.Helper()
	o := &Options{Issuer: is.url(), Resource: testResource, Claims: []string{"groups", "tenant"}}
	if mod != nil {
		mod(o)
	}
	v, err := NewVerifier(o)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func b64(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestVerifyAcceptsAValidToken(t *testing.T) {
	is := newIssuer(t)
	v := newTestVerifier(t, is, nil)
	c := is.claims("alice")
	ti, err := v.Verify(context.Background(), is.token(t, c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if ti.UserID != "alice" || len(ti.Scopes) != 1 || ti.Scopes[0] != "resources:read" {
		t.Fatalf("TokenInfo = %+v", ti)
	}
	if ti.Expiration.Unix() != c["exp"].(int64) {
		t.Fatalf("Expiration = %v, want exp %d", ti.Expiration, c["exp"])
	}
	if got := string(ti.Extra[ClaimsKey].(json.RawMessage)); got != `{"groups":["eng"]}` {
		t.Fatalf("passed claims = %s: want the named claims that are present, and only them", got)
	}
	// iss and sub go to the audit events, from the first verification
	// and from the cache alike.
	for range 2 {
		if ti.Extra[IssuerKey] != is.url() || ti.Extra[SubjectKey] != "alice" {
			t.Fatalf("Extra = %v: want the token's iss and sub", ti.Extra)
		}
		if ti, err = v.Verify(context.Background(), is.token(t, c), nil); err != nil {
			t.Fatal(err)
		}
	}
}

func TestVerifyPrincipalFromTheConfiguredClaim(t *testing.T) {
	is := newIssuer(t)
	v := newTestVerifier(t, is, func(o *Options) { o.PrincipalClaim = "email" })
	ti, err := v.Verify(context.Background(), is.token(t, is.claims("alice")), nil)
	if err != nil || ti.UserID != "alice@example.test" {
		t.Fatalf("Verify = %+v, %v; want the email claim as UserID", ti, err)
	}
	c := is.claims("bob")
	delete(c, "email")
	if _, err := v.Verify(context.Background(), is.token(t, c), nil); reason(err) != ReasonPrincipal {
		t.Fatalf("a token without the principal claim: %v, want %s", err, ReasonPrincipal)
	}
}

func TestVerifyScopeClaimForms(t *testing.T) {
	is := newIssuer(t)
	v := newTestVerifier(t, is, nil)
	for name, set := range map[string]func(map[string]any){
		"scope string": func(c map[string]any) { delete(c, "scp"); c["scope"] = "resources:read other" },
		"scp string":   func(c map[string]any) { c["scp"] = "resources:read other" },
		"scp list":     func(c map[string]any) { c["scp"] = []string{"resources:read", "other"} },
	} {
		c := is.claims("alice")
		set(c)
		ti, err := v.Verify(context.Background(), is.token(t, c), nil)
		if err != nil || strings.Join(ti.Scopes, " ") != "resources:read other" {
			t.Errorf("%s: scopes %v, %v", name, ti, err)
		}
	}
}

func reason(err error) string {
	var te *TokenError
	if errors.As(err, &te) {
		return te.Reason
	}
	return ""
}

// Each refused token is refused for its own reason, with an error that
// matches auth.ErrInvalidToken (the middleware's 401) and whose text, which
// the middleware writes to the client, says nothing more than that.
func TestVerifyRefusesBadTokens(t *testing.T) {
	is := newIssuer(t)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	pubDER, _ := x509.MarshalPKIXPublicKey(&is.key.PublicKey)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	v := newTestVerifier(t, is, nil)
	spoil := func(f func(map[string]any)) map[string]any { c := is.claims("alice"); f(c); return c }
	valid := is.token(t, is.claims("alice"))
	parts := strings.Split(valid, ".")
	cases := []struct {
		name, token, reason string
	}{
		{"expired beyond the skew", is.token(t, spoil(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() })), ReasonExpired},
		{"no exp", is.token(t, spoil(func(c map[string]any) { delete(c, "exp") })), ReasonExpired},
		{"not yet valid beyond the skew", is.token(t, spoil(func(c map[string]any) { c["nbf"] = time.Now().Add(time.Minute).Unix() })), ReasonNotYet},
		{"issued in the future", is.token(t, spoil(func(c map[string]any) { c["iat"] = time.Now().Add(time.Minute).Unix() })), ReasonNotYet},
		{"wrong issuer", is.token(t, spoil(func(c map[string]any) { c["iss"] = "https://evil.example.test/" })), ReasonIssuer},
		{"issuer without its trailing slash", is.token(t, spoil(func(c map[string]any) { c["iss"] = strings.TrimSuffix(is.url(), "/") })), ReasonIssuer},
		{"wrong audience", is.token(t, spoil(func(c map[string]any) { c["aud"] = []string{"https://other.example.test/mcp"} })), ReasonAudience},
		{"no audience", is.token(t, spoil(func(c map[string]any) { delete(c, "aud") })), ReasonAudience},
		{"alg none", b64(map[string]string{"alg": "none", "kid": is.kid}) + "." + parts[1] + ".", ReasonMalformed},
		{"HMAC with the public key as secret", sign(t, jose.HS256, pubPEM, is.kid, is.claims("alice")), ReasonMalformed},
		{"HMAC with the JWKS's symmetric key", sign(t, jose.HS256, []byte("a-shared-secret-that-is-long-enough"), "hmac", is.claims("alice")), ReasonMalformed},
		{"unknown kid", sign(t, jose.RS256, other, "not-published", is.claims("alice")), ReasonKey},
		{"the issuer's kid, another key", sign(t, jose.RS256, other, is.kid, is.claims("alice")), ReasonSignature},
		{"tampered payload", parts[0] + "." + b64(spoil(func(c map[string]any) { c["sub"] = "mallory" })) + "." + parts[2], ReasonSignature},
		{"tampered signature", parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2])), ReasonSignature},
		{"not a JWT", "not-a-jwt", ReasonMalformed},
		{"over MaxTokenBytes", strings.Repeat("a", MaxTokenBytes+1), ReasonMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ti, err := v.Verify(context.Background(), tc.token, nil)
			if err == nil {
				t.Fatalf("accepted: %+v", ti)
			}
			if !errors.Is(err, auth.ErrInvalidToken) {
				t.Fatalf("error %v does not match auth.ErrInvalidToken", err)
			}
			if got := reason(err); got != tc.reason {
				t.Fatalf("reason %q, want %q (cause: %v)", got, tc.reason, errors.Unwrap(err))
			}
			if err.Error() != "invalid token" {
				t.Fatalf("client-facing text %q says more than \"invalid token\"", err.Error())
			}
		})
	}
}

func TestVerifyToleratesBoundedSkew(t *testing.T) {
	is := newIssuer(t)
	v := newTestVerifier(t, is, func(o *Options) { o.ClockSkew = time.Minute })
	c := is.claims("alice")
	c["exp"] = time.Now().Add(-30 * time.Second).Unix()
	c["nbf"] = time.Now().Add(30 * time.Second).Unix()
	if _, err := v.Verify(context.Background(), is.token(t, c), nil); err != nil {
		t.Fatalf("within the skew: %v", err)
	}
	if _, err := NewVerifier(&Options{Issuer: is.url(), Resource: testResource, ClockSkew: MaxClockSkew + time.Second}); err == nil {
		t.Fatal("a skew over MaxClockSkew was accepted")
	}
}

func TestNewVerifierRefusesSymmetricAlgorithms(t *testing.T) {
	for _, alg := range []string{"HS256", "none", "HS512"} {
		if _, err := NewVerifier(&Options{Issuer: "https://id.example.test/", Resource: testResource, Algorithms: []string{alg}}); err == nil {
			t.Errorf("algorithm %s accepted", alg)
		}
	}
}

// A stream of tokens naming random key ids must not make one JWKS fetch
// each: refreshes are rate-limited to one per MinRefresh.
func TestUnknownKeyIDsAreRateLimited(t *testing.T) {
	is := newIssuer(t)
	v := newTestVerifier(t, is, func(o *Options) { o.MinRefresh = time.Hour })
	if _, err := v.Verify(context.Background(), is.token(t, is.claims("alice")), nil); err != nil {
		t.Fatal(err)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := sign(t, jose.RS256, other, "random-"+string(rune('a'+i%26))+time.Now().String(), is.claims("alice"))
			if _, err := v.Verify(context.Background(), tok, nil); reason(err) != ReasonKey {
				t.Errorf("random kid: %v", err)
			}
		}()
	}
	wg.Wait()
	if n := is.fetches.Load(); n != 1 {
		t.Fatalf("%d JWKS fetches for 1 valid and 200 unknown-kid tokens, want 1 (refresh rate-limited)", n)
	}
}

// A key the issuer adds later is found by the refresh that an unknown kid
// triggers, once MinRefresh allows it.
func TestUnknownKeyIDRefreshesTheKeys(t *testing.T) {
	is := newIssuer(t)
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	v := newTestVerifier(t, is, func(o *Options) { o.Now = clock; o.MinRefresh = time.Minute })
	if _, err := v.Verify(context.Background(), is.token(t, is.claims("alice")), nil); err != nil {
		t.Fatal(err)
	}
	rotated, _ := rsa.GenerateKey(rand.Reader, 2048)
	is.key, is.kid = rotated, "k2" // the issuer rotates its key
	if _, err := v.Verify(context.Background(), is.token(t, is.claims("alice")), nil); reason(err) != ReasonKey {
		t.Fatalf("within MinRefresh of the last fetch: %v, want %s", err, ReasonKey)
	}
	mu.Lock()
	now = now.Add(time.Minute + time.Second)
	mu.Unlock()
	if _, err := v.Verify(context.Background(), is.token(t, is.claims("alice")), nil); err != nil {
		t.Fatalf("after MinRefresh, the rotated key: %v", err)
	}
	if n := is.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
}

// A JWKS outage fails closed: without keys nothing verifies, the error is
// not an invalid token (the middleware answers 500, not a 401 that sends
// the client to re-authenticate), and Ready says so. Keys older than
// MaxKeyAge are not used when their refresh fails.
func TestKeysOutageFailsClosed(t *testing.T) {
	is := newIssuer(t)
	is.down.Store(true)
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	v := newTestVerifier(t, is, func(o *Options) { o.Now = clock; o.MinRefresh = time.Second; o.MaxKeyAge = time.Hour })
	tok := is.token(t, is.claims("alice"))
	_, err := v.Verify(context.Background(), tok, nil)
	if !errors.Is(err, ErrKeysUnavailable) || errors.Is(err, auth.ErrInvalidToken) {
		t.Fatalf("no keys: %v, want ErrKeysUnavailable and not ErrInvalidToken", err)
	}
	if strings.Contains(err.Error(), is.srv.URL) {
		t.Fatalf("client-facing text %q names the issuer's URL", err.Error())
	}
	if v.Ready(context.Background()) == nil {
		t.Fatal("Ready with no keys")
	}
	is.down.Store(false)
	advance(2 * time.Second)
	if err := v.Ready(context.Background()); err != nil {
		t.Fatalf("Ready once the JWKS answers: %v", err)
	}
	fetches := is.fetches.Load()
	for range 10 {
		advance(2 * time.Second) // past MinRefresh each time
		if err := v.Ready(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := is.fetches.Load(); n != fetches {
		t.Fatalf("10 readiness checks with good keys made %d fetches, want none", n-fetches)
	}
	if _, err := v.Verify(context.Background(), tok, nil); err != nil {
		t.Fatalf("with keys: %v", err)
	}
	is.down.Store(true)
	advance(time.Hour + time.Second)
	if _, err := v.Verify(context.Background(), tok, nil); !errors.Is(err, ErrKeysUnavailable) {
		t.Fatalf("keys past MaxKeyAge, refresh failing: %v, want ErrKeysUnavailable", err)
	}
	if st := v.KeyStats(); st.Failures < 2 || st.Err == nil {
		t.Fatalf("KeyStats = %+v, want the failures counted and the last error kept", st)
	}
}

func TestJWKSURLSkipsDiscovery(t *testing.T) {
	is := newIssuer(t)
	v := newTestVerifier(t, is, func(o *Options) { o.Issuer = "https://elsewhere.example.test/"; o.JWKSURL = is.srv.URL + "/jwks" })
	c := is.claims("alice")
	c["iss"] = "https://elsewhere.example.test/"
	if _, err := v.Verify(context.Background(), is.token(t, c), nil); err != nil {
		t.Fatal(err)
	}
}

func TestOversizedClaimsAreRefused(t *testing.T) {
	is := newIssuer(t)
	v := newTestVerifier(t, is, nil)
	c := is.claims("alice")
	c["tenant"] = strings.Repeat("x", MaxClaimsBytes)
	if _, err := v.Verify(context.Background(), is.token(t, c), nil); reason(err) != ReasonClaims {
		t.Fatalf("%v, want %s", err, ReasonClaims)
	}
}

// signRaw signs payload as it is, bytes and all, with the issuer's key.
func (is *issuer) signRaw(t *testing.T, payload []byte) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: is.key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", is.kid))
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// A principal claim that is not a valid principal is refused, not
// rewritten: invalid UTF-8 in the payload and a lone surrogate escape are
// not turned into U+FFFD (which would make ali\xffce, ali\xfece and
// ali\uFFFDce one principal), and controls, bidi and separator characters
// and surrounding spaces are refused.
func TestVerifyRefusesInvalidPrincipals(t *testing.T) {
	is := newIssuer(t)
	v := newTestVerifier(t, is, nil)
	payload := func(sub string) []byte {
		c := is.claims("PLACEHOLDER")
		b, _ := json.Marshal(c)
		return []byte(strings.Replace(string(b), `"sub":"PLACEHOLDER"`, `"sub":"`+sub+`"`, 1))
	}
	if ti, err := v.Verify(context.Background(), is.signRaw(t, payload("alice")), nil); err != nil || ti.UserID != "alice" {
		t.Fatalf("the raw payload of a good token: %+v, %v", ti, err)
	}
	for name, sub := range map[string]string{
		"raw \\xff":          "ali\xffce",
		"raw \\xfe":          "ali\xfece",
		"U+FFFD":             "ali\uFFFDce",
		"escaped U+FFFD":     `ali\ufffdce`,
		"lone surrogate":     `ali\ud800ce`,
		"escaped NUL":        `ali\u0000ce`,
		"U+0085":             "ali\u0085ce",
		"escaped U+0085":     `ali\u0085ce`,
		"U+2028":             "ali\u2028ce",
		"U+202E":             "ali\u202Ece",
		"leading space":      " alice",
		"trailing space":     "alice ",
		"escaped ESC":        `ali\u001bce`,
		"escaped DEL (C0)":   `ali\u007fce`,
		"U+200F (RLM mark)":  "ali\u200Fce",
		"U+061C (ALM mark)":  "ali\u061Cce",
		"U+2069 (PDI)":       "ali\u2069ce",
		"escaped U+2029":     `ali\u2029ce`,
		"U+FEFF at the end":  "alice\uFEFF",
		"only white space":   "   ",
		"U+3000 (ideograph)": "\u3000alice",
	} {
		ti, err := v.Verify(context.Background(), is.signRaw(t, payload(sub)), nil)
		if reason(err) != ReasonPrincipal {
			t.Errorf("%s: %+v, %v; want refused for %s", name, ti, err, ReasonPrincipal)
		}
	}
}

// A passed claim that storage cannot hold as JSON (jsonb refuses \u0000, a
// lone surrogate, invalid UTF-8 and numbers beyond its range) gets the
// token refused for ReasonClaims, with a cause that names the claim and
// not its value; what jsonb holds passes unchanged.
func TestVerifyRefusesClaimsStorageCannotHold(t *testing.T) {
	is := newIssuer(t)
	v := newTestVerifier(t, is, nil)
	token := func(tenant string) string {
		b, _ := json.Marshal(is.claims("alice"))
		return is.signRaw(t, []byte(strings.Replace(string(b), `"sub":"alice"`, `"sub":"alice","tenant":`+tenant, 1)))
	}
	for name, tenant := range map[string]string{
		"\\u0000":                 `"ac\u0000me"`,
		"\\u0000 as a key":        `{"\u0000":1}`,
		"a lone high surrogate":   `"ac\ud800me"`,
		"a lone low surrogate":    `["\udc00"]`,
		"high then not low":       `"\ud800\u0041"`,
		"a high surrogate at end": `"\ud800"`,
		"invalid UTF-8":           "\"ac\xffme\"",
		"a number beyond numeric": `1e200000`,
		"a tiny number":           `-1E-200000`,
		"nested \\u0000":          `{"a":[{"b":"\u0000"}]}`,
	} {
		_, err := v.Verify(context.Background(), token(tenant), nil)
		if reason(err) != ReasonClaims {
			t.Errorf("%s: %v, want %s", name, err, ReasonClaims)
			continue
		}
		if cause := err.(*TokenError).cause.Error(); !strings.Contains(cause, `"tenant"`) {
			t.Errorf("%s: the cause %q does not name the claim", name, cause)
		}
		if strings.Contains(err.(*TokenError).cause.Error(), "ac") {
			t.Errorf("%s: the cause %v quotes the value", name, err.(*TokenError).cause)
		}
	}
	for name, tenant := range map[string]string{
		"a surrogate pair":      `"\ud83d\ude00"`,
		"an escaped backslash":  `"\\u0000"`,
		"U+FFFD itself":         `"\ufffd"`,
		"a large number":        `1e300`,
		"true, false and null":  `[true,false,null,"e"]`,
		"an exponent of zeroes": `1e0000000000000000000000000000000001`,
	} {
		ti, err := v.Verify(context.Background(), token(tenant), nil)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var got map[string]json.RawMessage
		json.Unmarshal(ti.Extra[ClaimsKey].(json.RawMessage), &got)
		if string(got["tenant"]) != tenant {
			t.Errorf("%s: passed %s, want %s", name, got["tenant"], tenant)
		}
	}
}

// Claims are found by name, then by path: realm_access.roles reads the
// roles member of realm_access, and a claim named with dots is read as
// named; each is passed under the name given. Audiences replace the
// resource as what aud must contain.
func TestClaimPathsAndAudiences(t *testing.T) {
	is := newIssuer(t)
	v := newTestVerifier(t, is, func(o *Options) {
		o.Claims = []string{"realm_access.roles", "https://example.test/groups", "resource_access.mcp.roles", "missing.path", "groups.x"}
		o.Audiences = []string{"api://mcp", "00000000-1111-2222-3333-444444444444"}
	})
	c := is.claims("alice")
	c["aud"] = "00000000-1111-2222-3333-444444444444"
	c["realm_access"] = map[string]any{"roles": []string{"reader"}, "other": 1}
	c["resource_access"] = map[string]any{"mcp": map[string]any{"roles": "writer"}}
	c["https://example.test/groups"] = []string{"eng"}
	ti, err := v.Verify(context.Background(), is.token(t, c), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"https://example.test/groups":["eng"],"realm_access.roles":["reader"],"resource_access.mcp.roles":"writer"}`
	if got := string(ti.Extra[ClaimsKey].(json.RawMessage)); got != want {
		t.Fatalf("passed %s, want %s", got, want)
	}
	c["aud"] = testResource // the resource is no longer an audience
	if _, err := v.Verify(context.Background(), is.token(t, c), nil); reason(err) != ReasonAudience {
		t.Fatalf("aud the resource with Audiences set: %v, want %s", err, ReasonAudience)
	}
	for _, bad := range [][]string{{"a..b"}, {".a"}, {"a."}, {""}, {"a.b.c.d.e.f.g.h.i"}} {
		if _, err := NewVerifier(&Options{Issuer: is.url(), Resource: testResource, Claims: bad}); err == nil {
			t.Errorf("claims %q accepted", bad)
		}
	}
	if _, err := NewVerifier(&Options{Issuer: is.url(), Resource: testResource, Audiences: []string{""}}); err == nil {
		t.Error("an empty audience accepted")
	}
}
