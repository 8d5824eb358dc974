package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/prometheus/client_golang/prometheus"

	"go.phpboyscout.uk/mcp/resources/config"
	"go.phpboyscout.uk/mcp/resources/mcpsdk/oauth"
)

// oauthFlags put an identity provider in front of the HTTP server: the
// server becomes an OAuth 2.1 resource server that accepts the issuer's JWT
// access tokens for its resource URI. Exclusive with --tokens: a server
// accepts one kind of bearer token, never either.
type oauthFlags struct {
	Issuer         string        `name:"oauth-issuer" placeholder:"URL" env:"MCPRES_AUTH_ISSUER" help:"Accept JWT access tokens of this OAuth 2.1 authorization server (its issuer identifier; keys by OpenID discovery). Needs --http and --oauth-resource; excludes --tokens."`
	Resource       string        `name:"oauth-resource" placeholder:"URI" env:"MCPRES_AUTH_RESOURCE" help:"This server's canonical resource URI (such as https://mcp.example.com/mcp): tokens must name it as audience, unless --oauth-audience is given."`
	Audiences      []string      `name:"oauth-audience" placeholder:"AUD" env:"MCPRES_AUTH_AUDIENCES" help:"Accept tokens whose aud holds this value instead of the resource URI (repeatable, or comma-separated), for issuers that put another identifier there (Entra ID: the application ID)."`
	Scopes         []string      `name:"oauth-scope" placeholder:"SCOPE" env:"MCPRES_AUTH_SCOPES" help:"Scopes every token must carry (repeatable, or comma-separated); a token without one is answered 403 insufficient_scope."`
	JWKSURL        string        `name:"oauth-jwks-url" placeholder:"URL" env:"MCPRES_AUTH_JWKS_URL" help:"Fetch the issuer's keys here instead of by discovery."`
	PrincipalClaim string        `name:"oauth-principal-claim" default:"sub" env:"MCPRES_AUTH_PRINCIPAL_CLAIM" help:"The token claim that names the principal (mcp.principal)."`
	Claims         []string      `name:"oauth-claims" placeholder:"CLAIM" env:"MCPRES_AUTH_CLAIMS" help:"Token claims passed to storage as the JSON object mcp.claims (repeatable, or comma-separated), for row-level security: current_setting('mcp.claims', true)::jsonb. A name with dots not found as a claim is a path (realm_access.roles); each is passed under the name given."`
	Introspection  string        `name:"oauth-introspection-url" placeholder:"URL" env:"MCPRES_AUTH_INTROSPECTION_URL" help:"Verify every token (opaque ones too) by RFC 7662 introspection at this endpoint instead of with the issuer's keys; needs --oauth-client-id and --oauth-client-secret."`
	ClientID       string        `name:"oauth-client-id" placeholder:"ID" env:"MCPRES_AUTH_CLIENT_ID" help:"The client id this server authenticates to the introspection endpoint with."`
	ClientSecret   string        `name:"oauth-client-secret" placeholder:"SECRET" env:"MCPRES_AUTH_CLIENT_SECRET" help:"Its client secret (prefer the environment variable to the flag, which other users can see)."`
	ClockSkew      time.Duration `name:"oauth-clock-skew" default:"30s" env:"MCPRES_AUTH_CLOCK_SKEW" help:"Tolerance on a token's exp, nbf and iat (at most 5m)."`
}

// oauthServer is the resource server the flags describe, with its metrics.
type oauthServer struct {
	verifier *oauth.Verifier
	rs       *oauth.ResourceServer
	refused  *prometheus.CounterVec
}

// set reports whether any --oauth-* flag differs from its default.
func (f *oauthFlags) set() bool {
	return f.Issuer != "" || f.Resource != "" || len(f.Scopes) > 0 || len(f.Claims) > 0 || f.JWKSURL != "" || len(f.Audiences) > 0 || f.Introspection != "" || f.ClientID != "" || f.ClientSecret != "" ||
		f.PrincipalClaim != oauth.DefaultPrincipalClaim || f.ClockSkew != oauth.DefaultClockSkew
}

// options returns the verifier's and the resource server's options from
// the flags, or from the oauth section of file (never both), or nils for
// none. Both go through [config.OAuth.Options].
func (f *oauthFlags) options(file *config.File) (*oauth.Options, *oauth.ResourceOptions, error) {
	if file != nil {
		if vo, ro := file.OAuthOptions(); vo != nil {
			if f.set() {
				return nil, nil, fmt.Errorf("%s sets oauth: give no --oauth-* flag as well", file.Name)
			}
			return vo, ro, nil
		}
	}
	if f.Issuer == "" {
		if f.set() {
			return nil, nil, errors.New("the --oauth-* flags need --oauth-issuer")
		}
		return nil, nil, nil
	}
	if f.Resource == "" {
		return nil, nil, errors.New("--oauth-issuer needs --oauth-resource, the URI that tokens name as audience")
	}
	o := &config.OAuth{Issuer: config.Env(f.Issuer), Resource: config.Env(f.Resource), Audiences: f.Audiences, Scopes: f.Scopes,
		JWKSURL: config.Env(f.JWKSURL), PrincipalClaim: f.PrincipalClaim, Claims: f.Claims, ClockSkew: config.Duration(f.ClockSkew)}
	switch {
	case f.Introspection != "":
		o.Introspection = &config.OAuthIntrospection{URL: config.Env(f.Introspection), ClientID: config.Env(f.ClientID),
			ClientSecret: config.NewSecret(f.ClientSecret)}
	case f.ClientID != "" || f.ClientSecret != "":
		return nil, nil, errors.New("--oauth-client-id and --oauth-client-secret are for --oauth-introspection-url")
	}
	// The file's mapping, so that the flags and the file's oauth section
	// cannot configure a server differently.
	vo, ro := o.Options(nil)
	return vo, ro, nil
}

// newOAuth returns the resource server of the flags or of the resources
// file's oauth section, or nil for neither.
func (f *oauthFlags) newOAuth(httpAddr string, tokens string, file *config.File, m *metrics, e *env) (*oauthServer, error) {
	vo, ro, err := f.options(file)
	if err != nil || vo == nil {
		return nil, err
	}
	switch {
	case httpAddr == "":
		return nil, errors.New("an OAuth issuer needs --http: stdio has no bearer tokens")
	case tokens != "":
		return nil, errors.New("give --tokens or an OAuth issuer (--oauth-issuer, or oauth in the resources file), not both: a server accepts one kind of bearer token")
	}
	v, err := oauth.NewVerifier(vo)
	if err != nil {
		return nil, err
	}
	o := &oauthServer{verifier: v, refused: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpres_oauth_refused_total",
		Help: "Bearer tokens refused, by reason (malformed, unknown_key, signature, issuer, audience, expired, not_yet_valid, principal, claims, inactive; keys_unavailable when the issuer's keys or introspection endpoint could not be used).",
	}, []string{"reason"})}
	logger := e.log.With("component", "oauth")
	verify := func(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
		ti, err := v.Verify(ctx, token, r)
		if err != nil {
			reason, cause := "keys_unavailable", errors.Unwrap(err)
			if te, ok := errors.AsType[*oauth.TokenError](err); ok {
				reason, cause = te.Reason, te.Cause()
			}
			o.refused.WithLabelValues(reason).Inc()
			if reason == oauth.ReasonClaims {
				// The issuer sent a claim that storage cannot hold: worth
				// a warning. The cause names the claim, never its value
				// (nor the token).
				logger.Warn("refused a bearer token whose claims cannot reach storage", "reason", reason, "err", cause)
			} else {
				// The cause can quote claims: debug only.
				logger.Debug("refused a bearer token", "reason", reason, "err", cause)
			}
		}
		return ti, err
	}
	ro.ResourceName = "mcp-resources"
	o.rs, err = oauth.NewResourceServer(verify, ro)
	if err != nil {
		return nil, err
	}
	m.reg.MustRegister(o.refused)
	if v.Introspects() {
		m.funcMetric(true, "mcpres_oauth_introspections_total", "Token introspection requests to the authorization server (answers are cached per token).", nil,
			func() float64 { return float64(v.KeyStats().Fetches) })
		m.funcMetric(true, "mcpres_oauth_introspection_failures_total", "Token introspection requests that failed (every such token is refused with HTTP 500).", nil,
			func() float64 { return float64(v.KeyStats().Failures) })
		return o, nil
	}
	m.funcMetric(false, "mcpres_oauth_keys", "Signing keys of the authorization server held now (0: none loaded, every token is refused).", nil,
		func() float64 { return float64(v.KeyStats().Keys) })
	m.funcMetric(true, "mcpres_oauth_key_fetches_total", "Fetches of the authorization server's discovery document and keys.", nil,
		func() float64 { return float64(v.KeyStats().Fetches) })
	m.funcMetric(true, "mcpres_oauth_key_fetch_failures_total", "Failed fetches of the authorization server's discovery document and keys.", nil,
		func() float64 { return float64(v.KeyStats().Failures) })
	return o, nil
}

// describe is the start-up log's authentication line.
func (o *oauthServer) describe() string {
	m := o.rs.Metadata()
	how := ""
	if o.verifier.Introspects() {
		how = ", verified by introspection"
	}
	return fmt.Sprintf("OAuth 2.1 access tokens of %s for resource %s%s (scopes: %s; metadata at %s)",
		m.AuthorizationServers[0], m.Resource, how, strings.Join(m.ScopesSupported, " "), o.rs.MetadataURL())
}

// ready is the /readyz check: the issuer's keys are loaded.
func (o *oauthServer) ready() readyCheck {
	return readyCheck{name: "authorization server", check: func(ctx context.Context) error {
		if err := o.verifier.Ready(ctx); err != nil {
			if st := o.verifier.KeyStats(); st.Err != nil {
				return fmt.Errorf("%w: %w", err, st.Err)
			}
			return err
		}
		return nil
	}}
}

// checkOAuth loads, for check, the discovery document and keys of the
// issuer that the file's oauth section names (or asks its introspection
// endpoint), and prints one line about them; a file without the section
// prints nothing.
func checkOAuth(ctx context.Context, f *config.File, e *env) error {
	vo, ro := f.OAuthOptions()
	if vo == nil {
		return nil
	}
	v, err := oauth.NewVerifier(vo)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := v.Ready(ctx); err != nil {
		if st := v.KeyStats(); st.Err != nil {
			return fmt.Errorf("%s: %w", f.Name, st.Err) // the cause starts with "oauth:"
		}
		return fmt.Errorf("%s: oauth: %w", f.Name, err)
	}
	how := fmt.Sprintf("%d signing keys", v.KeyStats().Keys)
	if v.Introspects() {
		how = "introspection at " + vo.Introspection.URL
	}
	fmt.Fprintf(e.stdout, "oauth: issuer %s (%s), resource %s, scopes %q, claims %q\n",
		vo.Issuer, how, vo.Resource, ro.Scopes, vo.Claims)
	return nil
}
