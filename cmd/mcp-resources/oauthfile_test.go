package main

import (
	"reflect"
	"testing"

	"github.com/alecthomas/kong"

	"go.phpboyscout.uk/mcp/resources/config"
	"go.phpboyscout.uk/mcp/resources/mcpsdk/oauth"
)

// oauthFileBase is a resources file without an oauth section whose
// resources name no scopes (a file's own scopes are advertised beside the
// required ones, which flags cannot say).
const oauthFileBase = `version: 1
sources:
  db:
    postgres:
      url: postgres://reader@127.0.0.1:9/db
      role: reader
policy: database
resources:
  note:
    template: note://notes/{id}
    source: db
    plan: SELECT $id AS key, 1 AS version, 'text/plain' AS mime
    body: SELECT 'x' AS body WHERE $key IS NOT NULL
`

// parseServeFlags parses args as serve's command line, as run does, and
// returns its --oauth-* flags.
func parseServeFlags(t *testing.T, args ...string) *oauthFlags {
	t.Helper()
	var c cli
	parser, err := kong.New(&c, kong.Vars{"version": "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.Parse(append([]string{"serve"}, args...)); err != nil {
		t.Fatal(err)
	}
	return &c.Serve.OAuth
}

// A file's oauth section with audiences, claim paths and introspection
// gives the verifier and the resource server exactly the options of the
// equivalent --oauth-* flags: both go through config.OAuth.Options.
func TestOAuthFileAndFlagsGiveTheSameOptions(t *testing.T) {
	t.Setenv("OAUTH_CLIENT_SECRET", "s3cr:t/+")
	for _, c := range []struct {
		name, section string
		flags         []string
	}{
		{"introspection and audiences", `oauth:
  issuer: https://id.example.test/
  resource: https://mcp.example.test/mcp
  audiences: [api://default, 6e74172b-be56-4843-9ff4-e66a39bb12e3]
  scopes: [resources:read]
  claims: [realm_access.roles, tenant]
  introspection:
    url: https://id.example.test/oauth2/introspect
    client_id: mcp resources
    client_secret: ${OAUTH_CLIENT_SECRET}
`, []string{"--oauth-issuer=https://id.example.test/", "--oauth-resource=https://mcp.example.test/mcp",
			"--oauth-audience=api://default", "--oauth-audience=6e74172b-be56-4843-9ff4-e66a39bb12e3", "--oauth-scope=resources:read",
			"--oauth-claims=realm_access.roles,tenant", "--oauth-introspection-url=https://id.example.test/oauth2/introspect",
			"--oauth-client-id=mcp resources", "--oauth-client-secret=s3cr:t/+"}},
		{"keys, a principal claim and a skew", `oauth:
  issuer: https://id.example.test/
  resource: https://mcp.example.test/mcp
  jwks_url: https://id.example.test/jwks
  principal_claim: email
  clock_skew: 1m
`, []string{"--oauth-issuer=https://id.example.test/", "--oauth-resource=https://mcp.example.test/mcp",
			"--oauth-jwks-url=https://id.example.test/jwks", "--oauth-principal-claim=email", "--oauth-clock-skew=1m"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := config.Parse("resources.yaml", []byte(oauthFileBase+c.section), nil)
			if err != nil {
				t.Fatal(err)
			}
			fileVO, fileRO, err := parseServeFlags(t).options(f)
			if err != nil || fileVO == nil {
				t.Fatalf("the file's options: %v, %v", fileVO, err)
			}
			flagVO, flagRO, err := parseServeFlags(t, c.flags...).options(nil)
			if err != nil || flagVO == nil {
				t.Fatalf("the flags' options: %v, %v", flagVO, err)
			}
			if !reflect.DeepEqual(fileVO, flagVO) {
				t.Errorf("verifier options differ:\nfile  %+v\nflags %+v", fileVO, flagVO)
			}
			if !reflect.DeepEqual(fileRO, flagRO) {
				t.Errorf("resource server options differ:\nfile  %+v\nflags %+v", fileRO, flagRO)
			}
			if _, err := oauth.NewVerifier(fileVO); err != nil {
				t.Fatal(err)
			}
			if c.flags[2] == "--oauth-audience=api://default" &&
				(len(fileVO.Audiences) != 2 || fileVO.Introspection == nil || fileVO.Introspection.ClientSecret != "s3cr:t/+") {
				t.Fatalf("the file's section did not reach the options: %+v", fileVO)
			}
		})
	}
}
