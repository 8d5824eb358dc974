package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/integration/harness"
)

// The TypeScript SDK client that mcpsdk's tests pin (mcpsdk/testdata/tsclient:
// @modelcontextprotocol/sdk with its package-lock.json), installed there
// with npm ci when it is not.
const (
	tsClientDir     = "../mcpsdk/testdata/tsclient"
	tsClientVersion = "1.32.2"
)

func tsNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		harness.Unavailable(t, "node is not installed: the TypeScript SDK client cannot run")
	}
	pkg, _ := os.ReadFile(filepath.Join(tsClientDir, "node_modules/@modelcontextprotocol/sdk/package.json"))
	var installed struct{ Version string }
	if json.Unmarshal(pkg, &installed) == nil && installed.Version == tsClientVersion {
		return node
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		harness.Unavailable(t, "npm is not installed: the TypeScript SDK client cannot be installed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = tsClientDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", tsClientDir, err, out)
	}
	return node
}

// TestOAuthTypeScriptClientDiscoversTheAuthorizationServer runs the
// TypeScript SDK client as a host would, with no token: from the server's
// 401 it finds the protected resource metadata, from that Hydra, gets a
// token by the client credentials grant (its ClientCredentialsProvider)
// and reads with it; the database sees the client as the principal.
func TestOAuthTypeScriptClientDiscoversTheAuthorizationServer(t *testing.T) {
	node := tsNode(t)
	r := newOAuthRig(t)
	// The client checks that the metadata's resource is the URL it
	// connects to: the server must listen where its resource URI says.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r.resource = "http://" + addr + "/mcp"
	app := r.idp.client(t, []string{"client_credentials"}, oauthScope, r.resource)
	s := r.serve(t, "--http", addr)

	arg, _ := json.Marshal(map[string]any{"url": r.resource, "clientId": app.id, "clientSecret": app.secret,
		"scope": oauthScope, "audience": r.resource, "reads": []string{"note://whoami/x", "note://notes/eng-plan"}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "oauth.mjs", string(arg))
	cmd.Dir = tsClientDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("oauth.mjs: %v\nstderr:\n%s\nserver:\n%s", err, stderr.String(), s.stderr.String())
	}
	var out struct {
		Fetched []string
		Reads   []struct{ Text, Error string }
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out.Reads) != 2 {
		t.Fatalf("oauth.mjs printed %q: %v", stdout.String(), err)
	}
	fetched := strings.Join(out.Fetched, "\n")
	t.Logf("the client fetched:\n%s", fetched)
	for _, want := range []string{"http://" + addr + "/.well-known/oauth-protected-resource/mcp", r.idp.issuer + "oauth2/token"} {
		if !strings.Contains(fetched, want) {
			t.Errorf("the client never fetched %s; it fetched:\n%s", want, fetched)
		}
	}
	if !strings.Contains(out.Reads[0].Text, `"principal" : "`+app.id+`"`) {
		t.Errorf("whoami: %+v, want the client id as the principal", out.Reads[0])
	}
	if out.Reads[1].Error == "" {
		t.Errorf("a client without groups read a group's note: %+v", out.Reads[1])
	}
}
