package oauth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
	"go.phpboyscout.uk/mcp/resources/mcpsdk/oauth"
)

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// A Go host wires the verifier and the resource server around its
// streamable HTTP handler and nothing else: the token's principal and the
// named claims reach the gateway's stores through the request context
// (core.CallerFrom), on stateful and stateless
// servers alike.
func TestHostGetsPrincipalAndClaimsInTheStoreContext(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k", Algorithm: "RS256", Use: "sig"}}})
	}))
	defer jwks.Close()
	const issuer, resource = "https://id.example.test/", "https://mcp.example.test/mcp"

	binding := core.ResourceBinding{
		Definition: core.ResourceDefinition{URITemplate: "who://am/{i}", Name: "whoami", MIMEType: "application/json"},
		Resolver: core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
			tg, err := core.NewResourceTarget(m.URI(), "who", nil)
			if err != nil {
				return core.ResourceReadPlan{}, err
			}
			return core.NewResourceReadPlan(tg, tg)
		}),
		Reader: core.ItemReader(func(ctx context.Context, _ core.ReadItem) (core.ResourcePayload, error) {
			c, _ := core.CallerFrom(ctx)
			return core.TextPayload("application/json", c.Principal+" "+string(c.Claims)), nil
		}),
	}
	allow := core.PerTarget(core.TargetPolicy{
		Discover: func(context.Context, core.ResourceDefinition) error { return nil },
		Visibility: func(context.Context, core.ResourceTarget) (core.Visibility, error) {
			return core.Visibility{Visible: true}, nil
		},
		Read: func(context.Context, core.ResourceTarget) error { return nil },
	})
	res, err := core.NewResources([]core.ResourceBinding{binding}, allow)
	if err != nil {
		t.Fatal(err)
	}
	v, err := oauth.NewVerifier(&oauth.Options{Issuer: issuer, JWKSURL: jwks.URL, Resource: resource, Claims: []string{"groups"}})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := oauth.NewResourceServer(v.Verify, &oauth.ResourceOptions{Resource: resource, AuthorizationServers: []string{issuer}, Scopes: []string{"read"}})
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "k"))
	token, _ := jwt.Signed(signer).Claims(map[string]any{"iss": issuer, "aud": resource, "sub": "alice", "scope": "read",
		"groups": []string{"eng", "ops"}, "email": "not passed", "exp": time.Now().Add(time.Hour).Unix()}).Serialize()

	for _, stateless := range []bool{false, true} {
		a := mcpsdk.New(res, nil)
		server := a.NewServer(&mcp.Implementation{Name: "host", Version: "1"}, nil)
		mux := http.NewServeMux()
		rs.Register(mux)
		mux.Handle("/mcp", rs.Protect(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
			&mcp.StreamableHTTPOptions{Stateless: stateless})))
		srv := httptest.NewServer(mux)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(t.Context(),
			&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "who://am/i"})
		if err != nil {
			t.Fatal(err)
		}
		if text := got.Contents[0].Text; text != `alice {"groups":["eng","ops"]}` {
			t.Fatalf("stateless=%v: the store saw %q, want alice and the named claims", stateless, text)
		}
		cs.Close()
		srv.Close()
	}
	if !strings.HasSuffix(rs.MetadataURL(), "/.well-known/oauth-protected-resource/mcp") {
		t.Fatalf("metadata URL %s", rs.MetadataURL())
	}
}

// The verifier's key for the passed claims is the one the adapter reads.
func TestClaimsKeyIsTheAdapters(t *testing.T) {
	if oauth.ClaimsKey != mcpsdk.TokenClaimsKey {
		t.Fatalf("oauth.ClaimsKey %q, mcpsdk.TokenClaimsKey %q", oauth.ClaimsKey, mcpsdk.TokenClaimsKey)
	}
	if oauth.IssuerKey != mcpsdk.TokenIssuerKey || oauth.SubjectKey != mcpsdk.TokenSubjectKey {
		t.Fatalf("oauth.IssuerKey %q, SubjectKey %q; mcpsdk's %q, %q", oauth.IssuerKey, oauth.SubjectKey, mcpsdk.TokenIssuerKey, mcpsdk.TokenSubjectKey)
	}
}
