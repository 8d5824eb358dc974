package config

import (
	"slices"
	"time"

	"go.phpboyscout.uk/mcp/resources/mcpsdk/oauth"
)

// OAuthOptions returns the verifier's and the resource server's options
// that the file's oauth section sets, or nils when it has none. [Parse]
// has checked them with the constructors of package mcpsdk/oauth.
func (f *File) OAuthOptions() (*oauth.Options, *oauth.ResourceOptions) {
	o := f.OAuth
	if o == nil {
		return nil, nil
	}
	skew := time.Duration(o.ClockSkew)
	// The metadata lists every scope the file names: the required ones,
	// then those of single resources.
	supported := slices.Clone(o.Scopes)
	for _, r := range f.Resources {
		for _, s := range r.Scopes {
			if !slices.Contains(supported, s) {
				supported = append(supported, s)
			}
		}
	}
	return &oauth.Options{Issuer: string(o.Issuer), JWKSURL: string(o.JWKSURL), Resource: string(o.Resource),
			ClockSkew: skew, PrincipalClaim: o.PrincipalClaim, Claims: o.Claims},
		&oauth.ResourceOptions{Resource: string(o.Resource), AuthorizationServers: []string{string(o.Issuer)},
			Scopes: o.Scopes, ScopesSupported: supported, ClockSkew: skew}
}

// oauth checks the oauth section: the required keys, then what the
// verifier and resource server constructors refuse (URLs, skew, scopes).
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
	if !ok {
		return
	}
	vo, ro := c.f.OAuthOptions()
	v, err := oauth.NewVerifier(vo)
	if err == nil {
		_, err = oauth.NewResourceServer(v.Verify, ro)
	}
	if err != nil {
		c.e.at(o.Spans.start(), "%v", err)
	}
}
