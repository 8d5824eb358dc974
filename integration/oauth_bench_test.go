package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/internal/serverproc"
)

// BenchmarkOAuthBodyRead compares, in one run, the same body read (one
// PostgreSQL row through the binary over streamable HTTP, one session each)
// authenticated by a tokens file and by a JWT access token from Hydra that
// the server verifies on every request (signature and claims; keys
// cached). The two servers run side by side and every iteration reads from
// both, alternately, so that load on the machine falls on both alike; it
// reports each one's time per read and the share verification adds (the
// issue's target: under 5%).
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
	session := func(token string, args ...string) *mcp.ClientSession {
		p, err := serverproc.Start(serverBinary(b), &syncBuffer{}, append([]string{"--config", r.config}, args...)...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = p.Cmd.Process.Kill(); <-p.Done })
		hc := &http.Client{Transport: serverproc.Bearer{Token: token, Next: http.DefaultTransport}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(b.Context(),
			&mcp.StreamableClientTransport{Endpoint: "http://" + p.Addr + "/mcp", HTTPClient: hc}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		return cs
	}
	byFile := session(plain, "--tokens", tokens)
	byJWT := session(jwt, "--oauth-issuer", r.idp.issuer, "--oauth-resource", r.resource, "--oauth-scope", oauthScope, "--oauth-claims", "groups")
	params := &mcp.ReadResourceParams{URI: "note://whoami/x"}
	read := func(cs *mcp.ClientSession) time.Duration {
		t0 := time.Now()
		if res, err := cs.ReadResource(b.Context(), params); err != nil || len(res.Contents) != 1 {
			b.Fatalf("read: %v", err)
		}
		return time.Since(t0)
	}
	read(byFile)
	read(byJWT)
	var file, verified time.Duration
	n := 0
	for b.Loop() {
		if n%2 == 0 { // alternate which goes first
			file += read(byFile)
			verified += read(byJWT)
		} else {
			verified += read(byJWT)
			file += read(byFile)
		}
		n++
	}
	b.ReportMetric(float64(file.Nanoseconds())/float64(n), "tokens-file-ns/read")
	b.ReportMetric(float64(verified.Nanoseconds())/float64(n), "jwt-ns/read")
	b.ReportMetric(100*(float64(verified)-float64(file))/float64(file), "%added")
}
