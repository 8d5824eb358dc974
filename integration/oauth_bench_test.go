package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/internal/serverproc"
)

// BenchmarkOAuthBodyRead compares, in one run, the same body read (one
// PostgreSQL row through the binary over streamable HTTP, one session)
// authenticated by a tokens file and by a JWT access token from Hydra
// that the server verifies on every request (signature, claims; keys
// cached). Run with -count 5 and compare medians: the target is
// under 5% added by verification.
func BenchmarkOAuthBodyRead(b *testing.B) {
	r := newOAuthRig(b)
	app := r.idp.client(b, []string{"client_credentials"}, oauthScope, r.resource)
	jwt := r.idp.clientCredentials(b, app, oauthScope, r.resource)
	const plain = "bench-token-0123456789"
	sum := sha256.Sum256([]byte(plain))
	tokens := filepath.Join(b.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte(app.id+" sha256:"+hex.EncodeToString(sum[:])+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct {
		name, token string
		args        []string
	}{
		{"tokens-file", plain, []string{"--tokens", tokens}},
		{"jwt", jwt, []string{"--oauth-issuer", r.idp.issuer, "--oauth-resource", r.resource, "--oauth-scope", oauthScope, "--oauth-claims", "groups"}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			p, err := serverproc.Start(serverBinary(b), &syncBuffer{}, append([]string{"--config", r.config}, mode.args...)...)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = p.Cmd.Process.Kill(); <-p.Done }()
			hc := &http.Client{Transport: serverproc.Bearer{Token: mode.token, Next: http.DefaultTransport}}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(b.Context(),
				&mcp.StreamableClientTransport{Endpoint: "http://" + p.Addr + "/mcp", HTTPClient: hc}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			params := &mcp.ReadResourceParams{URI: "note://whoami/x"}
			if res, err := cs.ReadResource(b.Context(), params); err != nil || len(res.Contents) != 1 {
				b.Fatalf("warm-up read: %v", err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := cs.ReadResource(b.Context(), params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
