package config

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"go.phpboyscout.uk/mcp/resources/mcpsdk/oauth"
)

// OAuthOptions returns the verifier's and the resource server's options
// that the file's oauth section sets, or nils when it has none: those of
// [OAuth.Options], with the scopes of single resources advertised beside
// the required ones. [Parse] has checked them with the constructors of
// package mcpsdk/oauth.
func (f *File) OAuthOptions() (*oauth.Options, *oauth.ResourceOptions) {
	if f.OAuth == nil {
		return nil, nil
	}
	var extra []string
	for _, r := range f.Resources {
		extra = append(extra, r.Scopes...)
	}
	return f.OAuth.Options(extra)
}

// Options returns the verifier's and the resource server's options that o
// says. It is the one mapping from an oauth section to them: serve's
// --oauth-* flags fill an OAuth and call it too, so that a file and the
// equivalent flags configure the same server. The defaults are filled in
// (principal claim sub, clock skew [oauth.DefaultClockSkew]); the metadata
// advertises o's scopes, then those of extraScopes that o does not name.
func (o *OAuth) Options(extraScopes []string) (*oauth.Options, *oauth.ResourceOptions) {
	skew := cmp.Or(time.Duration(o.ClockSkew), oauth.DefaultClockSkew)
	principal := cmp.Or(o.PrincipalClaim, oauth.DefaultPrincipalClaim)
	supported := slices.Clone(o.Scopes)
	for _, s := range extraScopes {
		if !slices.Contains(supported, s) {
			supported = append(supported, s)
		}
	}
	var in *oauth.Introspection
	if i := o.Introspection; i != nil {
		in = &oauth.Introspection{URL: string(i.URL), ClientID: string(i.ClientID), ClientSecret: i.ClientSecret.expanded()}
	}
	return &oauth.Options{Issuer: string(o.Issuer), JWKSURL: string(o.JWKSURL), Resource: string(o.Resource),
			Audiences: slices.Clone(o.Audiences), ClockSkew: skew, PrincipalClaim: principal,
			Claims: slices.Clone(o.Claims), Introspection: in},
		&oauth.ResourceOptions{Resource: string(o.Resource), AuthorizationServers: []string{string(o.Issuer)},
			Scopes: slices.Clone(o.Scopes), ScopesSupported: supported, ClockSkew: skew}
}

// NewSecret returns a [Secret] that holds value as given (no ${NAME} is
// expanded in it), for a secret that reaches a field of the model from
// elsewhere than a file, such as serve's --oauth-client-secret.
func NewSecret(value string) Secret {
	return Secret{value: value, raw: value, set: value != ""}
}

// oauth checks the oauth section: the required keys, then what the
// verifier and resource server constructors refuse (URLs, skew, scopes,
// audiences, claims), at the key refused where it can tell.
func (c *checker) oauth() {
	o := c.f.OAuth
	if o == nil {
		return
	}
	ok := true
	for _, k := range []string{"issuer", "resource"} {
		if !o.Spans.has(k) {
			c.required(o.Spans, k, "oauth")
			ok = false
		}
	}
	if in := o.Introspection; in != nil {
		for _, k := range []string{"url", "client_id", "client_secret"} {
			if !in.Spans.has(k) {
				c.required(in.Spans, k, "oauth.introspection")
				ok = false
			}
		}
		if in.ClientSecret.isSet() && !secretRef.MatchString(in.ClientSecret.raw) {
			c.e.at(in.Spans.of("client_secret"), "oauth.introspection.client_secret", "must be one ${NAME} reference: secrets are not written in the file")
			ok = false
		}
	}
	if !ok {
		return
	}
	vo, ro := c.f.OAuthOptions()
	v, err := oauth.NewVerifier(vo)
	if err != nil {
		at, path := oauthRefused(o, vo)
		if path != "" {
			c.e.at(at, path, "%s", strings.TrimPrefix(err.Error(), "oauth: "))
			return
		}
		c.e.at(at, "", "%v", err)
		return
	}
	if _, err = oauth.NewResourceServer(v.Verify, ro); err != nil {
		c.e.at(o.Spans.start(), "", "%v", err)
	}
}

// oauthRefused says which key of o holds what the verifier refuses in vo:
// the first of audiences, claims and introspection without whose value it
// accepts the rest, with its path; else the section, with no path.
func oauthRefused(o *OAuth, vo *oauth.Options) (Position, string) {
	for _, k := range []struct {
		key  string
		drop func(*oauth.Options)
	}{
		{"audiences", func(x *oauth.Options) { x.Audiences = nil }},
		{"claims", func(x *oauth.Options) { x.Claims = nil }},
		{"introspection", func(x *oauth.Options) { x.Introspection = nil }},
	} {
		if !o.Spans.has(k.key) {
			continue
		}
		x := *vo
		k.drop(&x)
		if _, err := oauth.NewVerifier(&x); err != nil {
			continue
		}
		if k.key == "introspection" {
			// Its keys are all present: what is refused is the URL.
			return o.Introspection.Spans.of("url"), "oauth.introspection.url"
		}
		return o.Spans.of(k.key), "oauth." + k.key
	}
	return o.Spans.start(), ""
}
