package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
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
// authenticated by a tokens file, by a JWT access token from Hydra that
// the server verifies (signature and claims; keys cached; the verified
// result reused for the same token), and by an opaque Hydra token that the
// server verifies by introspection (the answer cached). The three servers
// run side by side and every iteration reads from each, in a rotating
// order, so that load on the machine falls on all alike; it reports each
// one's time per read and the share JWT verification and introspection add
// (the target: under 5%).
func BenchmarkOAuthBodyRead(b *testing.B) {
	b.ReportAllocs()
	r := newOAuthRig(b)
	app := r.idp.client(b, []string{"client_credentials"}, oauthScope, r.resource)
	jwt := r.idp.clientCredentials(b, app, oauthScope, r.resource)
	opaqueApp := r.idp.opaqueClient(b, []string{"client_credentials"}, oauthScope, r.resource)
	opaque := r.idp.clientCredentials(b, opaqueApp, oauthScope, r.resource)
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
		awaitReady(b, p.Addr, readyBound)
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
	byIntrospection := session(opaque, "--oauth-issuer", r.idp.issuer, "--oauth-resource", r.resource, "--oauth-scope", oauthScope,
		"--oauth-claims", "ext.groups", "--oauth-introspection-url", r.idp.admin+"/admin/oauth2/introspect",
		"--oauth-client-id", opaqueApp.id, "--oauth-client-secret", opaqueApp.secret)
	params := &mcp.ReadResourceParams{URI: "note://whoami/x"}
	read := func(cs *mcp.ClientSession) time.Duration {
		t0 := time.Now()
		if res, err := cs.ReadResource(b.Context(), params); err != nil || len(res.Contents) != 1 {
			b.Fatalf("read: %v", err)
		}
		return time.Since(t0)
	}
	sessions := []*mcp.ClientSession{byFile, byJWT, byIntrospection}
	for _, cs := range sessions {
		read(cs)
	}
	var took [3]time.Duration // tokens file, JWT, introspection
	n := 0
	for b.Loop() {
		for i := range sessions { // rotate which goes first
			j := (n + i) % len(sessions)
			took[j] += read(sessions[j])
		}
		n++
	}
	file := float64(took[0])
	b.ReportMetric(file/float64(n), "tokens-file-ns/read")
	b.ReportMetric(float64(took[1])/float64(n), "jwt-ns/read")
	b.ReportMetric(float64(took[2])/float64(n), "introspection-ns/read")
	b.ReportMetric(100*(float64(took[1])-file)/file, "%added")
	b.ReportMetric(100*(float64(took[2])-file)/file, "%added-introspection")
}

// readyBound bounds the wait for a benchmark's server to become ready: its
// start-up checks (storage, the issuer's keys) on a loaded machine.
const readyBound = 60 * time.Second

// awaitReady polls GET /readyz on addr until it answers 200, so that a
// benchmark measures a server that finished starting (one that answers
// initialize before its checks end may fail the first requests), and fails
// tb when within bound it does not.
func awaitReady(tb testing.TB, addr string, bound time.Duration) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), bound)
	defer cancel()
	last := "no answer"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
		if err != nil {
			tb.Fatal(err)
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("server at %s not ready within %v: last /readyz: %s", addr, bound, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
