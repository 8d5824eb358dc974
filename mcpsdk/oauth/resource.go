package oauth

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// WellKnownPath is where RFC 9728 puts a protected resource's metadata; for
// a resource URI with a path, the path follows it.
const WellKnownPath = "/.well-known/oauth-protected-resource"

// ResourceOptions configures a [ResourceServer].
type ResourceOptions struct {
	// Resource is the server's canonical resource URI, the one its tokens
	// carry as audience, such as https://mcp.example.com/mcp. Required.
	Resource string
	// AuthorizationServers are the issuers clients may get tokens from.
	// Required.
	AuthorizationServers []string
	// Scopes are required of every token: one missing is answered 403
	// with error="insufficient_scope".
	Scopes []string
	// ScopesSupported are advertised in the metadata; nil means Scopes.
	ScopesSupported []string
	// ResourceName is the metadata's human-readable name; optional.
	ResourceName string
	// ClockSkew is the tolerance on a token's expiration that the SDK's
	// middleware applies after the verifier: give the verifier's
	// ([Options].ClockSkew). Zero means [DefaultClockSkew].
	ClockSkew time.Duration
}

// ResourceServer protects HTTP handlers as an OAuth 2.1 resource server
// with the go-sdk's auth.RequireBearerToken, and serves the protected
// resource metadata that points clients at the authorization server.
type ResourceServer struct {
	verify      auth.TokenVerifier
	meta        oauthex.ProtectedResourceMetadata
	metadataURL string
	paths       []string
	scopes      []string
	skew        time.Duration
}

// NewResourceServer returns a resource server that verifies tokens with
// verify (such as [Verifier.Verify]).
func NewResourceServer(verify auth.TokenVerifier, opts *ResourceOptions) (*ResourceServer, error) {
	if verify == nil {
		return nil, errors.New("oauth: a nil token verifier")
	}
	if opts == nil || opts.Resource == "" {
		return nil, errors.New("oauth: the resource URI is required")
	}
	if len(opts.AuthorizationServers) == 0 {
		return nil, errors.New("oauth: at least one authorization server is required")
	}
	u, err := url.Parse(opts.Resource)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" || u.RawQuery != "" {
		return nil, fmt.Errorf("oauth: the resource URI must be an absolute http(s) URI without query or fragment")
	}
	for _, s := range opts.Scopes {
		if s == "" || strings.ContainsAny(s, " \"\\") {
			return nil, fmt.Errorf("oauth: a scope may not be empty or hold spaces, quotes or backslashes")
		}
	}
	supported := opts.ScopesSupported
	if supported == nil {
		supported = opts.Scopes
	}
	rs := &ResourceServer{verify: verify, scopes: slices.Clone(opts.Scopes), skew: opts.ClockSkew,
		meta: oauthex.ProtectedResourceMetadata{Resource: opts.Resource,
			AuthorizationServers: slices.Clone(opts.AuthorizationServers), ScopesSupported: slices.Clone(supported),
			BearerMethodsSupported: []string{"header"}, ResourceName: opts.ResourceName}}
	// RFC 9728 section 3.1: the well-known path, then the resource's path.
	suffix := strings.TrimSuffix(u.EscapedPath(), "/")
	rs.metadataURL = u.Scheme + "://" + u.Host + WellKnownPath + suffix
	if rs.skew == 0 {
		rs.skew = DefaultClockSkew
	}
	rs.paths = []string{WellKnownPath}
	if suffix != "" {
		rs.paths = append(rs.paths, WellKnownPath+suffix)
	}
	return rs, nil
}

// MetadataURL is the URL of the metadata document, as the 401's
// WWW-Authenticate header gives it.
func (rs *ResourceServer) MetadataURL() string { return rs.metadataURL }

// Metadata returns the metadata document the server serves.
func (rs *ResourceServer) Metadata() oauthex.ProtectedResourceMetadata {
	m := rs.meta
	m.AuthorizationServers = slices.Clone(m.AuthorizationServers)
	m.ScopesSupported = slices.Clone(m.ScopesSupported)
	m.BearerMethodsSupported = slices.Clone(m.BearerMethodsSupported)
	return m
}

// Register serves the metadata on mux, without authentication, at the
// URL that [ResourceServer.MetadataURL] gives: [WellKnownPath] followed by
// the resource's path (RFC 9728 section 3.1). For a resource with a path,
// [WellKnownPath] itself answers 404: the document there would describe the
// resource at the server's root, and one naming the resource with its path
// is one that RFC 9728 section 3.3 tells clients to reject.
func (rs *ResourceServer) Register(mux *http.ServeMux) {
	m := rs.Metadata()
	mux.Handle(rs.paths[len(rs.paths)-1], auth.ProtectedResourceMetadataHandler(&m))
	if len(rs.paths) > 1 {
		mux.Handle(rs.paths[0], http.NotFoundHandler())
	}
}

// Protect returns h behind auth.RequireBearerToken: a request without a
// valid token is answered 401 with
// WWW-Authenticate: Bearer resource_metadata="...", scope="..." (preceded
// by error="invalid_token" when a bearer token was given, and only then, as
// RFC 6750 section 3.1 asks), one whose token lacks a required scope 403
// with error="insufficient_scope". h sees the verified token as
// auth.TokenInfoFromContext, which the streamable HTTP handler passes on to
// MCP requests.
func (rs *ResourceServer) Protect(h http.Handler) http.Handler {
	return challenge(auth.RequireBearerToken(rs.verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: rs.metadataURL, Scopes: rs.scopes, ClockSkew: rs.skew}), "", h)
}

// RequireStaticToken returns middleware for bearer tokens that carry no
// expiration (a host's own table of tokens): auth.RequireBearerToken with
// AllowMissingExpiration, whose 401 answers carry
// WWW-Authenticate: Bearer realm="REALM" (with error="invalid_token" when a
// bearer token was given), which the SDK's middleware alone leaves out.
func RequireStaticToken(verify auth.TokenVerifier, realm string) func(http.Handler) http.Handler {
	mw := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	params := fmt.Sprintf("realm=%q", realm)
	return func(h http.Handler) http.Handler { return challenge(mw, params, h) }
}

// challenge returns h behind the SDK's middleware mw, with the SDK's
// challenges completed by a challengeWriter; params is the challenge's
// content when the SDK writes none.
func challenge(mw func(http.Handler) http.Handler, params string, h http.Handler) http.Handler {
	// The SDK writes its refusals to a challengeWriter; a request it lets
	// through reaches h with the original ResponseWriter, unwrapped.
	inner := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w.(*challengeWriter).ResponseWriter, r)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(&challengeWriter{ResponseWriter: w, params: params, hadToken: HasBearerToken(r)}, r)
	})
}

// HasBearerToken reports whether r carries a bearer token as the SDK's
// middleware reads one: an Authorization header of two fields, the first
// "Bearer" in any case. A request with none, an empty one, or another
// scheme (Basic, DPoP) has none, and its 401 carries no error code (RFC
// 6750 section 3.1).
func HasBearerToken(r *http.Request) bool {
	f := strings.Fields(r.Header.Get("Authorization"))
	return len(f) == 2 && strings.EqualFold(f[0], "bearer")
}

// challengeWriter adds the RFC 6750 error code to the challenge the SDK
// writes: the SDK gives resource_metadata and scope only.
type challengeWriter struct {
	http.ResponseWriter
	params   string // the challenge when the SDK writes none
	hadToken bool
}

func (c *challengeWriter) WriteHeader(code int) {
	if code == http.StatusUnauthorized || code == http.StatusForbidden {
		h := c.Header()
		params, sdk := strings.CutPrefix(h.Get("WWW-Authenticate"), "Bearer ")
		if !sdk {
			params = c.params
		}
		switch {
		case code == http.StatusForbidden:
			params = join(`error="insufficient_scope"`, params)
		case c.hadToken:
			params = join(`error="invalid_token"`, params)
		}
		if params != "" {
			h.Set("WWW-Authenticate", "Bearer "+params)
		} else if code == http.StatusUnauthorized {
			h.Set("WWW-Authenticate", "Bearer")
		}
	}
	c.ResponseWriter.WriteHeader(code)
}

func join(a, b string) string {
	if b == "" {
		return a
	}
	return a + ", " + b
}
