// Package oauth makes an MCP server an OAuth 2.1 resource server, as the MCP
// authorization specification asks of an HTTP server: it verifies access
// tokens that are JWTs signed by the organisation's authorization server,
// or any token by asking that server (RFC 7662 introspection,
// [Options].Introspection) ([Verifier]), and protects a streamable HTTP handler with the go-sdk's
// auth.RequireBearerToken while serving RFC 9728 protected resource
// metadata ([ResourceServer]).
//
// A host that serves an mcpsdk adapter over HTTP needs three values: the
// issuer, the server's canonical resource URI (the audience its tokens must
// name) and the scopes it requires:
//
//	v, err := oauth.NewVerifier(&oauth.Options{Issuer: "https://id.example.com/", Resource: "https://mcp.example.com/mcp"})
//	rs, err := oauth.NewResourceServer(v.Verify, &oauth.ResourceOptions{
//		Resource: "https://mcp.example.com/mcp", AuthorizationServers: []string{"https://id.example.com/"}, Scopes: []string{"resources:read"}})
//	rs.Register(mux)                        // the metadata documents
//	mux.Handle("/mcp", rs.Protect(handler)) // 401 and 403 with WWW-Authenticate
//
// The verified principal is the token's UserID, which the adapter's default
// Principal function and the SDK's session binding use; the claims the
// operator names ([Options].Claims) travel as JSON in TokenInfo.Extra under
// [ClaimsKey] (the same key as mcpsdk.TokenClaimsKey), and the adapter hands them to the stores
// ([core.Caller].Claims).
package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

// Defaults and bounds of [Options].
const (
	// DefaultClockSkew is the tolerance on exp, nbf and iat when
	// Options.ClockSkew is zero.
	DefaultClockSkew = 30 * time.Second
	// MaxClockSkew bounds Options.ClockSkew.
	MaxClockSkew = 5 * time.Minute
	// DefaultMinRefresh is the least time between two fetches of the
	// issuer's keys when Options.MinRefresh is zero. It is also the longest
	// a token signed with a newly published key is refused: whatever tokens
	// naming unknown key ids arrive, the first token naming a key that was
	// published at least this long ago finds the keys refreshable.
	DefaultMinRefresh = 5 * time.Second
	// DefaultMaxKeyAge is how long fetched keys are used before they must
	// be fetched again, when Options.MaxKeyAge is zero.
	DefaultMaxKeyAge = time.Hour
	// DefaultPrincipalClaim is the claim that names the principal when
	// Options.PrincipalClaim is empty.
	DefaultPrincipalClaim = "sub"
	// MaxTokenBytes bounds a bearer token; a longer one is refused unread.
	MaxTokenBytes = 16 << 10
	// MaxClaimsBytes bounds the JSON of the claims passed to storage.
	MaxClaimsBytes = 8 << 10
	// MaxPrincipalBytes bounds the principal claim's value: it is the
	// bound core.CheckPrincipal applies.
	MaxPrincipalBytes = wire.MaxPrincipalBytes
	// DefaultCacheTTL is how long a verified token's result is reused when
	// Options.CacheTTL is zero.
	DefaultCacheTTL = time.Minute
	// maxCached bounds the verified tokens the cache holds.
	maxCached = 4096
	// MaxAudiences bounds Options.Audiences.
	MaxAudiences = 16
	// MaxClaims bounds Options.Claims.
	MaxClaims = 64
	// maxClaimDepth bounds the segments of a claim path.
	maxClaimDepth = 8
	// maxExponent bounds the exponent of a number in a passed claim:
	// PostgreSQL's jsonb refuses numbers beyond its numeric range
	// (1e200000), and within MaxClaimsBytes this bound keeps every number
	// inside it.
	maxExponent = 1000
)

// ClaimsKey is the key of TokenInfo.Extra under which [Verifier.Verify]
// puts the passed claims: a json.RawMessage holding one JSON object (empty
// when the token has none of the named claims).
//
// It is the value of mcpsdk.TokenClaimsKey, which the adapter reads; this
// package does not import mcpsdk (so that a resources file's checks need
// no MCP SDK server), and TestClaimsKeyIsTheAdapters fails if the two
// ever differ.
const ClaimsKey = "mcpres.claims"

// IssuerKey and SubjectKey are the keys of TokenInfo.Extra under which
// [Verifier.Verify] puts the token's iss and sub (strings), for the
// adapter's audit events: the values of mcpsdk.TokenIssuerKey and
// mcpsdk.TokenSubjectKey (TestClaimsKeyIsTheAdapters checks them too).
const (
	IssuerKey  = "mcpres.iss"
	SubjectKey = "mcpres.sub"
)

// DefaultAlgorithms are the signature algorithms accepted when
// Options.Algorithms is empty: asymmetric ones only.
var DefaultAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Options configures a [Verifier].
type Options struct {
	// Issuer is the authorization server's issuer identifier: tokens must
	// carry it as iss, byte for byte, and its keys are found by OpenID
	// Connect discovery at Issuer + "/.well-known/openid-configuration"
	// unless JWKSURL is set. Required.
	Issuer string
	// JWKSURL, if set, is where the issuer's keys are fetched, without
	// discovery.
	JWKSURL string
	// Resource is this server's canonical resource URI (RFC 8707): a
	// token's aud must contain it, byte for byte, unless Audiences is
	// set. Required.
	Resource string
	// Audiences, if set, replace Resource as the values of which a token's
	// aud must contain one, byte for byte: for issuers that put another
	// identifier of the server in aud (Entra ID its application ID,
	// Keycloak a client id, Okta an authorization server's audience). At
	// most [MaxAudiences].
	Audiences []string
	// Algorithms are the accepted signature algorithms, a subset of
	// [DefaultAlgorithms] (the default). "none" and the HMAC algorithms
	// are refused: a resource server holds no shared secret.
	Algorithms []string
	// ClockSkew is the tolerance on exp, nbf and iat: zero means
	// [DefaultClockSkew]; at most [MaxClockSkew].
	ClockSkew time.Duration
	// PrincipalClaim names the claim (a non-empty string) that becomes
	// the principal, TokenInfo.UserID. Empty means "sub".
	PrincipalClaim string
	// Claims names the claims passed to storage (see [ClaimsKey]), for
	// example groups or tenant, at most [MaxClaims]. A name is looked up
	// as a top-level claim first; failing that, a name with dots is a
	// path into nested objects (realm_access.roles is the roles member of
	// the realm_access claim). Each is passed under the name given, so
	// that a claim named with dots (Auth0's https://example.com/roles)
	// and a path read alike. Absent claims are left out.
	Claims []string
	// MinRefresh is the least time between two fetches of the keys, so
	// that tokens naming unknown key ids cannot make one fetch each: zero
	// means [DefaultMinRefresh].
	MinRefresh time.Duration
	// MaxKeyAge is how long fetched keys are used; older keys are fetched
	// again before use, and not used when that fails. Zero means
	// [DefaultMaxKeyAge].
	MaxKeyAge time.Duration
	// CacheTTL bounds how long a verified token's result is reused for the
	// same token (never past its exp, nor past the keys it was verified
	// with): zero means [DefaultCacheTTL], a negative value verifies every
	// request afresh.
	CacheTTL time.Duration
	// Introspection, if set, verifies every token (opaque or a JWT) by
	// asking the authorization server (RFC 7662) instead of with its keys;
	// JWKSURL, Algorithms, MinRefresh and MaxKeyAge then do not apply.
	// The answer is cached like a verified JWT, at most until the token's
	// exp: a token revoked at the server is refused within CacheTTL.
	Introspection *Introspection
	// HTTPClient fetches discovery and keys, and introspects; nil means a
	// client with a 10 s timeout.
	HTTPClient *http.Client
	// Now returns the current time; nil means time.Now. For tests.
	Now func() time.Time
}

// Verifier verifies the access tokens of one issuer for one resource: JWTs
// with the issuer's keys, or any token by introspection. Its Verify method
// is an auth.TokenVerifier. It is safe for concurrent use.
type Verifier struct {
	issuer     string
	audiences  []string
	algs       []jose.SignatureAlgorithm
	skew       time.Duration
	principal  string
	claims     []string
	keys       *keySet
	intro      *introspector // nil: JWTs verified with the keys
	minRefresh time.Duration
	now        func() time.Time
	cache      *tokenCache // nil: no caching
}

// NewVerifier returns a verifier for opts. It makes no request: the keys
// are fetched on the first verification, or by [Verifier.Ready].
func NewVerifier(opts *Options) (*Verifier, error) {
	if opts == nil || opts.Issuer == "" {
		return nil, errors.New("oauth: the issuer is required")
	}
	if opts.Resource == "" {
		return nil, errors.New("oauth: the resource URI (the audience) is required")
	}
	for _, u := range []string{opts.Issuer, opts.JWKSURL, opts.Resource} {
		if u != "" && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
			return nil, fmt.Errorf("oauth: %q is not an http(s) URL", u)
		}
	}
	v := &Verifier{issuer: opts.Issuer, audiences: []string{opts.Resource}, skew: opts.ClockSkew,
		principal: opts.PrincipalClaim, claims: slices.Clone(opts.Claims), now: opts.Now}
	if len(opts.Audiences) > 0 {
		if len(opts.Audiences) > MaxAudiences || slices.Contains(opts.Audiences, "") {
			return nil, fmt.Errorf("oauth: give 1 to %d audiences, none empty", MaxAudiences)
		}
		v.audiences = slices.Clone(opts.Audiences)
	}
	if len(v.claims) > MaxClaims {
		return nil, fmt.Errorf("oauth: at most %d claims are passed to storage", MaxClaims)
	}
	for _, c := range v.claims {
		if c == "" || strings.HasPrefix(c, ".") || strings.HasSuffix(c, ".") || strings.Contains(c, "..") ||
			strings.Count(c, ".") >= maxClaimDepth || !utf8.ValidString(c) {
			return nil, fmt.Errorf("oauth: the claim name %q is empty, has an empty path segment, more than %d segments or is not UTF-8", c, maxClaimDepth)
		}
	}
	if v.skew == 0 {
		v.skew = DefaultClockSkew
	}
	if v.skew < 0 || v.skew > MaxClockSkew {
		return nil, fmt.Errorf("oauth: the clock skew must be between 0 and %s", MaxClockSkew)
	}
	if v.principal == "" {
		v.principal = DefaultPrincipalClaim
	}
	if v.now == nil {
		v.now = time.Now
	}
	algs := opts.Algorithms
	if len(algs) == 0 {
		algs = DefaultAlgorithms
	}
	for _, a := range algs {
		if !slices.Contains(DefaultAlgorithms, a) {
			return nil, fmt.Errorf("oauth: algorithm %q is not accepted (only asymmetric signatures: %s)", a, strings.Join(DefaultAlgorithms, ", "))
		}
		v.algs = append(v.algs, jose.SignatureAlgorithm(a))
	}
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: fetchTimeout}
	}
	v.keys = &keySet{client: client, issuer: opts.Issuer, jwksURL: opts.JWKSURL,
		minRefresh: opts.MinRefresh, maxAge: opts.MaxKeyAge, now: v.now}
	if v.keys.minRefresh <= 0 {
		v.keys.minRefresh = DefaultMinRefresh
	}
	if v.keys.maxAge <= 0 {
		v.keys.maxAge = DefaultMaxKeyAge
	}
	v.minRefresh = v.keys.minRefresh
	if opts.Introspection != nil {
		in, err := newIntrospector(opts.Introspection, client)
		if err != nil {
			return nil, err
		}
		v.intro = in
	}
	switch ttl := opts.CacheTTL; {
	case ttl == 0:
		v.cache = &tokenCache{ttl: DefaultCacheTTL, m: map[[32]byte]cached{}}
	case ttl > 0:
		v.cache = &tokenCache{ttl: ttl, m: map[[32]byte]cached{}}
	}
	return v, nil
}

// Reasons a token is refused, as [TokenError].Reason: a fixed set, fit for
// a metric label.
const (
	ReasonMalformed = "malformed"     // not a compact JWS, over MaxTokenBytes, or a refused alg
	ReasonKey       = "unknown_key"   // signed with a key the issuer does not publish
	ReasonSignature = "signature"     // the signature does not verify
	ReasonIssuer    = "issuer"        // iss is not the issuer
	ReasonAudience  = "audience"      // aud contains neither the resource nor an Options.Audiences value
	ReasonExpired   = "expired"       // exp passed (beyond the skew), or no exp
	ReasonNotYet    = "not_yet_valid" // nbf or iat in the future (beyond the skew)
	ReasonPrincipal = "principal"     // the principal claim is missing or not a valid principal
	ReasonClaims    = "claims"        // the passed claims are over MaxClaimsBytes, or one cannot reach storage as JSON
)

// TokenError is the error of a refused token. It matches
// auth.ErrInvalidToken, so the middleware answers 401; its message is
// fixed ("invalid token"), because the middleware writes it to the client.
// Reason says why, Unwrap gives the cause: for logs at debug level and
// metrics, never for a client.
type TokenError struct {
	Reason string
	cause  error
}

// Error returns the fixed text "invalid token", whatever the reason.
func (e *TokenError) Error() string { return auth.ErrInvalidToken.Error() }

// Cause returns why the token was refused. Its text can quote the
// token's claims (never for a [ReasonClaims] refusal, which names the
// claim only): log it, never send it to a client.
func (e *TokenError) Cause() error { return e.cause }

// Unwrap returns auth.ErrInvalidToken and the cause.
func (e *TokenError) Unwrap() []error { return []error{auth.ErrInvalidToken, e.cause} }

func refuse(reason string, cause error) error { return &TokenError{Reason: reason, cause: cause} }

// unavailableError is the error of a verification without keys: not an
// invalid token (the middleware answers 500 with its fixed message).
type unavailableError struct{ cause error }

func (e *unavailableError) Error() string { return "the authorization server's keys are unavailable" }
func (e *unavailableError) Unwrap() error { return e.cause }

// Verify verifies token and returns its TokenInfo: UserID the principal
// claim, Scopes from scope (space-separated) or scp (a list or a string),
// Expiration from exp, and the passed claims in Extra[ClaimsKey]. A refused
// token's error is a [*TokenError]; when the keys cannot be loaded the
// error matches [ErrKeysUnavailable] and not auth.ErrInvalidToken.
//
// The result for a token is reused for the same token for up to
// [Options].CacheTTL, never past its exp (plus the skew) nor past the next
// successful fetch of the keys; a refused token is verified again every
// time.
func (v *Verifier) Verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	if len(token) > MaxTokenBytes {
		return nil, refuse(ReasonMalformed, errors.New("oauth: token over MaxTokenBytes"))
	}
	if v.cache == nil {
		return v.verify(ctx, token)
	}
	// The same token, verified under the same keys, is the same answer
	// until it expires: skip the signature check (most of the cost).
	gen, fresh := v.generation()
	sum := sha256.Sum256([]byte(token))
	now := v.now()
	if fresh {
		if ti, ok := v.cache.get(sum, gen, now); ok {
			return ti, nil
		}
	}
	ti, err := v.verify(ctx, token)
	if err != nil {
		return nil, err
	}
	if gen2, fresh := v.generation(); fresh && gen2 == gen {
		until := now.Add(v.cache.ttl)
		exp := ti.Expiration
		if v.intro == nil {
			exp = exp.Add(v.skew)
		}
		if exp.Before(until) {
			until = exp
		}
		v.cache.put(sum, gen, until, now, ti)
	}
	return ti, nil
}

// generation returns the generation of the keys and whether they may be
// used without a refresh; introspection has one generation, always fresh.
func (v *Verifier) generation() (uint64, bool) {
	if v.intro != nil {
		return 0, true
	}
	return v.keys.generation()
}

// verify verifies token without the cache.
func (v *Verifier) verify(ctx context.Context, token string) (*auth.TokenInfo, error) {
	if v.intro != nil {
		return v.introspect(ctx, token)
	}
	tok, err := jwt.ParseSigned(token, v.algs)
	if err != nil {
		return nil, refuse(ReasonMalformed, err)
	}
	if len(tok.Headers) != 1 {
		return nil, refuse(ReasonMalformed, errors.New("oauth: not one signature"))
	}
	h := tok.Headers[0]
	key, err := v.keys.key(ctx, h.KeyID)
	switch {
	case errors.Is(err, errUnknownKey):
		return nil, refuse(ReasonKey, err)
	case err != nil:
		return nil, &unavailableError{cause: err}
	}
	if key.Algorithm != "" && key.Algorithm != h.Algorithm {
		return nil, refuse(ReasonKey, fmt.Errorf("oauth: the key is for %s, the token says %s", key.Algorithm, h.Algorithm))
	}
	var std jwt.Claims
	var all map[string]json.RawMessage
	if err := tok.Claims(key.Key, &std, &all); err != nil {
		return nil, refuse(ReasonSignature, err)
	}
	return v.tokenInfo(&std, all)
}

// tokenInfo checks the claims of a verified token (a JWT's, or an
// introspection answer's) and returns its TokenInfo.
func (v *Verifier) tokenInfo(std *jwt.Claims, all map[string]json.RawMessage) (*auth.TokenInfo, error) {
	// iss first, then aud, then time: the reason names the first rule broken.
	if std.Issuer != v.issuer {
		return nil, refuse(ReasonIssuer, jwt.ErrInvalidIssuer)
	}
	if !slices.ContainsFunc(std.Audience, func(a string) bool { return slices.Contains(v.audiences, a) }) {
		return nil, refuse(ReasonAudience, jwt.ErrInvalidAudience)
	}
	if std.Expiry == nil {
		return nil, refuse(ReasonExpired, errors.New("oauth: the token has no exp"))
	}
	switch err := std.ValidateWithLeeway(jwt.Expected{Time: v.now()}, v.skew); {
	case errors.Is(err, jwt.ErrExpired):
		return nil, refuse(ReasonExpired, err)
	case err != nil: // nbf or iat in the future
		return nil, refuse(ReasonNotYet, err)
	}
	principal, err := v.principalOf(all)
	if err != nil {
		return nil, refuse(ReasonPrincipal, err)
	}
	passed, err := v.passed(all)
	if err != nil {
		return nil, refuse(ReasonClaims, err)
	}
	return &auth.TokenInfo{UserID: principal, Scopes: scopes(all), Expiration: std.Expiry.Time(),
		Extra: map[string]any{ClaimsKey: passed, IssuerKey: std.Issuer, SubjectKey: std.Subject}}, nil
}

func (v *Verifier) principalOf(all map[string]json.RawMessage) (string, error) {
	raw := all[v.principal]
	// The claim is checked as sent: encoding/json would replace invalid
	// UTF-8 (and a lone surrogate escape) with U+FFFD, which
	// core.CheckPrincipal refuses too.
	if !utf8.Valid(raw) {
		return "", fmt.Errorf("oauth: the principal claim %q is not valid UTF-8", v.principal)
	}
	var p string
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", fmt.Errorf("oauth: the principal claim %q is not a string", v.principal)
	}
	if err := core.CheckPrincipal(p); err != nil {
		return "", fmt.Errorf("oauth: the principal claim %q: %w", v.principal, err)
	}
	return p, nil
}

// passed returns the named claims as one JSON object, each under the name
// given, refusing a claim that storage could not hold as JSON.
func (v *Verifier) passed(all map[string]json.RawMessage) (json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(v.claims))
	for _, name := range v.claims {
		c, ok := lookup(all, name)
		if !ok {
			continue
		}
		if err := storable(c); err != nil {
			return nil, fmt.Errorf("oauth: the claim %q %w", name, err)
		}
		out[name] = c
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxClaimsBytes {
		return nil, fmt.Errorf("oauth: the passed claims are over %d bytes", MaxClaimsBytes)
	}
	return b, nil
}

// lookup returns the claim name: the top-level claim of that name, else,
// for a name with dots, the member its path names in nested objects.
func lookup(all map[string]json.RawMessage, name string) (json.RawMessage, bool) {
	if c, ok := all[name]; ok {
		return c, true
	}
	path := strings.Split(name, ".")
	if len(path) < 2 {
		return nil, false
	}
	cur, ok := all[path[0]]
	for _, seg := range path[1:] {
		var obj map[string]json.RawMessage
		if !ok || json.Unmarshal(cur, &obj) != nil {
			return nil, false
		}
		cur, ok = obj[seg]
	}
	return cur, ok
}

// storable returns why raw, one valid JSON value, cannot reach storage as
// JSON (PostgreSQL's jsonb, which mcp.claims is read as): invalid UTF-8,
// the escape \u0000, a lone surrogate escape, or a number beyond
// maxExponent. encoding/json accepts each of them (and would replace the
// first two with U+FFFD if decoded); jsonb refuses each, which would make
// every read of the token fail. The error never quotes raw.
func storable(raw []byte) error {
	if !utf8.Valid(raw) {
		return errors.New("holds invalid UTF-8")
	}
	hex4 := func(b []byte) rune {
		var r rune
		for _, c := range b {
			switch {
			case c >= '0' && c <= '9':
				r = r<<4 | rune(c-'0')
			case c >= 'a' && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			case c >= 'A' && c <= 'F':
				r = r<<4 | rune(c-'A'+10)
			}
		}
		return r
	}
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] != '\\' || i+1 >= len(raw) {
					continue
				}
				i++
				if raw[i] != 'u' || i+4 >= len(raw) {
					continue
				}
				r := hex4(raw[i+1 : i+5])
				i += 4
				switch {
				case r == 0:
					return errors.New("holds \\u0000, which storage cannot hold")
				case r >= 0xDC00 && r <= 0xDFFF:
					return errors.New("holds a lone surrogate escape")
				case r >= 0xD800 && r <= 0xDBFF:
					if i+6 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
						return errors.New("holds a lone surrogate escape")
					}
					if lo := hex4(raw[i+3 : i+7]); lo < 0xDC00 || lo > 0xDFFF {
						return errors.New("holds a lone surrogate escape")
					}
					i += 6
				}
			}
		case c == 'e' || c == 'E': // outside strings: a number's exponent
			j := i + 1
			if j < len(raw) && (raw[j] == '+' || raw[j] == '-') {
				j++
			}
			for j < len(raw) && raw[j] == '0' {
				j++
			}
			exp := 0
			for ; j < len(raw) && raw[j] >= '0' && raw[j] <= '9'; j++ {
				if exp = exp*10 + int(raw[j]-'0'); exp > maxExponent {
					return fmt.Errorf("holds a number with an exponent beyond %d", maxExponent)
				}
			}
			i = j - 1
		}
	}
	return nil
}

// scopes reads scope (RFC 8693, RFC 9068: one space-separated string) or,
// failing that, scp (a list, as Hydra and Azure issue, or a string).
func scopes(all map[string]json.RawMessage) []string {
	var s string
	if json.Unmarshal(all["scope"], &s) == nil && s != "" {
		return strings.Fields(s)
	}
	var list []string
	if json.Unmarshal(all["scp"], &list) == nil {
		return list
	}
	if json.Unmarshal(all["scp"], &s) == nil {
		return strings.Fields(s)
	}
	return nil
}

// Ready reports whether the verifier holds keys it may use (loaded, and
// younger than [Options].MaxKeyAge), whether or not a refresh has failed
// since: cached keys that verify good tokens keep the server ready. When
// it holds none, it fetches them first (rate-limited like any refresh), so
// a readiness probe recovers as soon as the issuer answers. Its error is fixed text; [Verifier.KeyStats] has the cause.
func (v *Verifier) Ready(ctx context.Context) error {
	if v.intro != nil {
		return v.intro.ready(ctx, v.minRefresh, v.now())
	}
	if v.keys.ready() {
		return nil
	}
	_, _ = v.keys.key(ctx, "\x00ready") // no key has this id: a refresh, unless rate-limited
	if v.keys.ready() {
		return nil
	}
	return errors.New("the authorization server's keys are unavailable")
}

// KeyStats describes the verifier's keys now; with [Options].Introspection
// it counts the introspection requests instead (Keys is 0).
func (v *Verifier) KeyStats() KeyStats {
	if v.intro != nil {
		return v.intro.stats()
	}
	return v.keys.stats()
}

// Introspects reports whether the verifier asks the authorization server
// about tokens ([Options].Introspection) instead of verifying JWTs with its
// keys.
func (v *Verifier) Introspects() bool { return v.intro != nil }

// tokenCache holds the results of verified tokens by the SHA-256 of the
// token, each until its deadline and for one key generation. Refused
// tokens are never cached.
type tokenCache struct {
	ttl   time.Duration
	mu    sync.Mutex
	m     map[[32]byte]cached
	bytes int // the sizes of the entries in m
}

type cached struct {
	ti    *auth.TokenInfo
	gen   uint64
	until time.Time
	size  int
}

// maxCacheBytes bounds the sizes of the cached results together (each at
// most about MaxClaimsBytes + MaxPrincipalBytes).
const maxCacheBytes = 8 << 20

// size estimates the memory a cached result holds.
func size(ti *auth.TokenInfo) int {
	n := 256 + len(ti.UserID)
	for _, s := range ti.Scopes {
		n += 16 + len(s)
	}
	if c, ok := ti.Extra[ClaimsKey].(json.RawMessage); ok {
		n += len(c)
	}
	for _, k := range [...]string{IssuerKey, SubjectKey} {
		s, _ := ti.Extra[k].(string)
		n += len(s)
	}
	return n
}

// get returns a copy of the cached result, so that no caller can change
// what the next one gets.
func (c *tokenCache) get(sum [32]byte, gen uint64, now time.Time) (*auth.TokenInfo, bool) {
	c.mu.Lock()
	e, ok := c.m[sum]
	if ok && (e.gen != gen || !now.Before(e.until)) {
		delete(c.m, sum)
		c.bytes -= e.size
		ok = false
	}
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	ti := *e.ti
	ti.Scopes = slices.Clone(ti.Scopes)
	ti.Extra = extra(e.ti) // a json.RawMessage and strings, never written to
	return &ti, true
}

// extra returns a fresh Extra map with what the verifier put in ti's.
func extra(ti *auth.TokenInfo) map[string]any {
	return map[string]any{ClaimsKey: ti.Extra[ClaimsKey], IssuerKey: ti.Extra[IssuerKey], SubjectKey: ti.Extra[SubjectKey]}
}

func (c *tokenCache) put(sum [32]byte, gen uint64, until, now time.Time, ti *auth.TokenInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sz := size(ti)
	if old, ok := c.m[sum]; ok {
		delete(c.m, sum)
		c.bytes -= old.size
	}
	if len(c.m) >= maxCached || c.bytes+sz > maxCacheBytes {
		// Full: drop the expired entries, and an arbitrary tenth.
		n := 0
		for k, e := range c.m {
			if e.gen != gen || !now.Before(e.until) || n < maxCached/10 || c.bytes+sz > maxCacheBytes*9/10 {
				delete(c.m, k)
				c.bytes -= e.size
				n++
			}
		}
	}
	stored := *ti
	stored.Scopes = slices.Clone(ti.Scopes)
	stored.Extra = extra(ti)
	c.m[sum] = cached{ti: &stored, gen: gen, until: until, size: sz}
	c.bytes += sz
}
