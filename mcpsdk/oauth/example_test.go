package oauth_test

import (
	"log"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
	"go.phpboyscout.uk/mcp/resources/mcpsdk/oauth"
)

// A Go host in front of its identity provider: the verifier checks the
// issuer's access tokens for this server's resource URI and passes the
// groups claim on; the resource server answers 401 and 403 with the
// challenge clients discover the issuer from, and serves the metadata.
// Stores see the token's principal and claims (core.CallerFrom,
// its Principal and Claims); the PostgreSQL store sets them as mcp.principal and
// mcp.claims.
func Example() {
	var res *core.Resources // the host's gateway
	const issuer, resource = "https://id.example.com/", "https://mcp.example.com/mcp"

	v, err := oauth.NewVerifier(&oauth.Options{Issuer: issuer, Resource: resource, Claims: []string{"groups"}})
	if err != nil {
		log.Fatal(err)
	}
	rs, err := oauth.NewResourceServer(v.Verify, &oauth.ResourceOptions{
		Resource: resource, AuthorizationServers: []string{issuer}, Scopes: []string{"resources:read"}})
	if err != nil {
		log.Fatal(err)
	}
	a := mcpsdk.New(res, nil) // the default Principal is the token's UserID
	server := a.NewServer(&mcp.Implementation{Name: "host", Version: "1"}, nil)

	mux := http.NewServeMux()
	rs.Register(mux)
	mux.Handle("/mcp", rs.Protect(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)))
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := v.Ready(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	})
	_ = http.ListenAndServe // log.Fatal(http.ListenAndServe(":8080", mux))
}
