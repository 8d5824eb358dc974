package chartcheck

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// repoRoot is the checkout's root: the chart README's commands run there.
const repoRoot = "../../.."

const chartReadme = "../mcp-resources/README.md"

// readmeInstall is what the chart README tells a reader to run: the Secrets
// it creates (name to keys) and the arguments of its helm install.
type readmeInstall struct {
	secrets map[string][]string
	release string
	chart   string
	args    []string // helm template arguments after RELEASE CHART, files resolved
}

// fences returns the fenced blocks of a Markdown page: info string, body.
func fences(page string) [][2]string {
	var out [][2]string
	lines := strings.Split(page, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "```") {
			continue
		}
		info := strings.TrimSpace(strings.TrimPrefix(l, "```"))
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			body = append(body, lines[i])
		}
		out = append(out, [2]string{info, strings.Join(body, "\n") + "\n"})
	}
	return out
}

// shellWords splits one command line the way sh would for the plain words
// the README uses: spaces, single and double quotes, and $(...) kept whole.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	in, depth, any := byte(0), 0, false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case in != 0 && ch == in && depth == 0:
			in = 0
		case in == 0 && depth == 0 && (ch == '\'' || ch == '"'):
			in, any = ch, true
		case ch == '$' && i+1 < len(line) && line[i+1] == '(' && in != '\'':
			depth++
			cur.WriteString("$(")
			i++
			any = true
		case ch == ')' && depth > 0:
			depth--
			cur.WriteByte(ch)
		case in == 0 && depth == 0 && (ch == ' ' || ch == '\t'):
			if any {
				words = append(words, cur.String())
				cur.Reset()
				any = false
			}
		case in == 0 && depth == 0 && ch == '#' && !any:
			return words // a comment
		default:
			cur.WriteByte(ch)
			any = true
		}
	}
	if any {
		words = append(words, cur.String())
	}
	return words
}

// parseReadme reads the chart README's install: the sh block holding
// `helm install`, and the yaml blocks whose first line `# NAME` names a
// values file that install passes with -f.
func parseReadme(t *testing.T) readmeInstall {
	t.Helper()
	page, err := os.ReadFile(chartReadme)
	if err != nil {
		t.Fatal(err)
	}
	blocks := fences(string(page))
	yamlFiles := map[string]string{}
	for _, b := range blocks {
		if b[0] == "yaml" && strings.HasPrefix(b[1], "# ") {
			name := strings.TrimSpace(strings.SplitN(strings.TrimPrefix(b[1], "# "), "\n", 2)[0])
			yamlFiles[name] = b[1]
		}
	}
	in := readmeInstall{secrets: map[string][]string{}}
	found := false
	for _, b := range blocks {
		if b[0] != "sh" || !strings.Contains(b[1], "helm install") {
			continue
		}
		if found {
			t.Fatal("the chart README has two sh blocks with a helm install: which one is the example?")
		}
		found = true
		joined := strings.ReplaceAll(b[1], "\\\n", " ")
		for _, line := range strings.Split(joined, "\n") {
			w := shellWords(line)
			switch {
			case len(w) >= 5 && w[0] == "kubectl" && w[1] == "create" && w[2] == "secret" && w[3] == "generic":
				name := w[4]
				for _, f := range w[5:] {
					kv, ok := strings.CutPrefix(f, "--from-literal=")
					if !ok {
						kv, ok = strings.CutPrefix(f, "--from-file=")
					}
					key, _, hasKey := strings.Cut(kv, "=")
					if !ok || !hasKey {
						t.Fatalf("kubectl create secret %s: %q: this test reads --from-literal=KEY=... and --from-file=KEY=... only", name, f)
					}
					in.secrets[name] = append(in.secrets[name], key)
				}
			case len(w) >= 2 && w[0] == "helm" && w[1] == "install":
				if len(w) < 4 {
					t.Fatalf("helm install without a release and a chart: %q", line)
				}
				in.release, in.chart = w[2], w[3]
				for i := 4; i < len(w); i++ {
					flag, val := w[i], ""
					if k, v, ok := strings.Cut(flag, "="); ok {
						flag, val = k, v
					} else if i+1 < len(w) {
						i++
						val = w[i]
					}
					switch flag {
					case "-f", "--values":
						body, ok := yamlFiles[val]
						if !ok {
							t.Fatalf("helm install -f %s: the README shows no ```yaml block starting with `# %s`", val, val)
						}
						vf := filepath.Join(t.TempDir(), filepath.Base(val))
						if err := os.WriteFile(vf, []byte(body), 0o600); err != nil {
							t.Fatal(err)
						}
						in.args = append(in.args, "-f", vf)
					case "--set", "--set-string":
						in.args = append(in.args, flag, val)
					case "--set-file":
						k, path, _ := strings.Cut(val, "=")
						abs := filepath.Join(repoRoot, path)
						if _, err := os.Stat(abs); err != nil {
							t.Fatalf("helm install --set-file %s: %s is not a file of the checkout (the README runs from its root)", val, path)
						}
						abs, _ = filepath.Abs(abs)
						in.args = append(in.args, "--set-file", k+"="+abs)
					default:
						t.Fatalf("helm install %s: a flag this test does not know", flag)
					}
				}
			}
		}
	}
	if !found || in.chart == "" {
		t.Fatal("the chart README shows no helm install in a sh block")
	}
	return in
}

// renderReadme renders the chart exactly as the README installs it.
func renderReadme(t *testing.T, in readmeInstall) map[string][]any {
	t.Helper()
	chartDir, err := filepath.Abs(filepath.Join(repoRoot, in.chart))
	if err != nil {
		t.Fatal(err)
	}
	self, _ := filepath.Abs(chart)
	if chartDir != self {
		t.Fatalf("the README installs %s, not this chart", in.chart)
	}
	return renderWith(t, in.release, in.args...)
}

// testServices are the test's PostgreSQL and S3 server (scripts/services.sh).
type testServices struct{ pgURL, s3Endpoint, s3Access, s3Secret string }

func services(t *testing.T) testServices {
	t.Helper()
	s := testServices{os.Getenv("MCPRES_POSTGRES_URL"), os.Getenv("MCPRES_S3_ENDPOINT"), os.Getenv("MCPRES_S3_ACCESS_KEY"), os.Getenv("MCPRES_S3_SECRET_KEY")}
	if s.pgURL == "" || s.s3Endpoint == "" || s.s3Access == "" || s.s3Secret == "" {
		const why = "needs MCPRES_POSTGRES_URL and MCPRES_S3_ENDPOINT, MCPRES_S3_ACCESS_KEY, MCPRES_S3_SECRET_KEY (eval \"$(scripts/services.sh up)\")"
		if os.Getenv("MCPRES_INTEGRATION") == "require" {
			t.Fatal("MCPRES_INTEGRATION=require: " + why)
		}
		t.Skip(why)
	}
	return s
}

func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestTheReadmeInstallServesAReadWithAToken renders the chart with the
// values of its README's install, then runs the mcp-resources binary as
// the rendered container would run: its arguments, its environment (each
// Secret key filled in by the test), the Secrets and the ConfigMap written
// where the volume mounts put them. The server must answer /readyz and a
// resources/read of a caller with a bearer token, against a real
// PostgreSQL and S3 server holding the documents example.
func TestTheReadmeInstallServesAReadWithAToken(t *testing.T) {
	in := parseReadme(t)
	m := renderReadme(t, in)
	svc := services(t)
	d := deployment(t, m)
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if len(c.Command) != 0 {
		t.Fatalf("the container overrides the image's entrypoint (mcp-resources) with %q", c.Command)
	}

	// The documents example in a database of its own, and its bucket.
	const db = "chartcheck_readme"
	run(t, nil, "psql", svc.pgURL, "-q", "-v", "ON_ERROR_STOP=1", "-c", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)", "-c", "CREATE DATABASE "+db)
	t.Cleanup(func() {
		_ = exec.Command("psql", svc.pgURL, "-q", "-c", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)").Run()
	})
	u, err := url.Parse(svc.pgURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + db
	dbURL := u.String()
	run(t, nil, "psql", dbURL, "-q", "-v", "ON_ERROR_STOP=1", "-f", "examples/documents/schema.sql")
	run(t, nil, "psql", dbURL, "-q", "-v", "ON_ERROR_STOP=1", "-c", `INSERT INTO tenants VALUES ('acme', 'Acme');
		INSERT INTO memberships VALUES ('alice', 'acme');
		INSERT INTO documents (id, tenant_id, title, body) VALUES ('00000000-0000-0000-0000-00000000000a', 'acme', 'Plan', 'Ship in March.')`)

	token := rand.Text()
	sum := sha256.Sum256([]byte(token))
	key := make([]byte, 32)
	_, _ = rand.Read(key)

	// The environment: plain values as rendered (an in-cluster endpoint
	// becomes the test's), each Secret key filled in by what reads it.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	bucket := ""
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			v := e.Value
			switch {
			case strings.HasSuffix(e.Name, "ENDPOINT"):
				t.Logf("%s=%s stands for the test's S3 server %s", e.Name, v, svc.s3Endpoint)
				v = svc.s3Endpoint
			case strings.HasSuffix(e.Name, "BUCKET"):
				bucket = v
			}
			env = append(env, e.Name+"="+v)
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if ref == nil {
			t.Fatalf("env %s: only Secret keys and plain values are known here", e.Name)
		}
		if !secretHas(in.secrets, ref.Name, ref.Key) {
			t.Fatalf("env %s reads Secret %s key %s, which the README never creates (it creates %v)", e.Name, ref.Name, ref.Key, in.secrets)
		}
		var v string
		switch {
		case strings.HasSuffix(e.Name, "DATABASE_URL"):
			v = dbURL
		case strings.HasSuffix(e.Name, "ACCESS_KEY"):
			v = svc.s3Access
		case strings.HasSuffix(e.Name, "SECRET_KEY"):
			v = svc.s3Secret
		default:
			t.Fatalf("env %s from Secret %s: this test has no value for it", e.Name, ref.Name)
		}
		env = append(env, e.Name+"="+v)
	}
	if bucket != "" {
		aws := []string{"AWS_ACCESS_KEY_ID=" + svc.s3Access, "AWS_SECRET_ACCESS_KEY=" + svc.s3Secret, "AWS_DEFAULT_REGION=us-east-1"}
		head := exec.Command("aws", "--endpoint-url", svc.s3Endpoint, "s3api", "head-bucket", "--bucket", bucket)
		head.Env = append(os.Environ(), aws...)
		if head.Run() != nil {
			run(t, aws, "aws", "--endpoint-url", svc.s3Endpoint, "s3api", "create-bucket", "--bucket", bucket)
			t.Cleanup(func() { // leave the services' buckets as they were
				rb := exec.Command("aws", "--endpoint-url", svc.s3Endpoint, "s3", "rb", "s3://"+bucket, "--force")
				rb.Env = append(os.Environ(), aws...)
				_ = rb.Run()
			})
		}
	}

	// The mounted files, under a root of the test's: what each Secret key
	// holds follows from the argument that reads it.
	root := t.TempDir()
	args := append([]string(nil), c.Args...)
	mounts := map[string]string{} // mount path to the test's directory
	for _, vm := range c.VolumeMounts {
		var vol *corev1.Volume
		for i := range pod.Volumes {
			if pod.Volumes[i].Name == vm.Name {
				vol = &pod.Volumes[i]
			}
		}
		if vol == nil {
			t.Fatalf("volume mount %s has no volume", vm.Name)
		}
		dir := filepath.Join(root, vm.MountPath)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		mounts[vm.MountPath] = dir
		files := map[string]string{}
		switch {
		case vol.Secret != nil:
			keys, ok := in.secrets[vol.Secret.SecretName]
			if !ok {
				t.Fatalf("volume %s mounts Secret %s, which the README never creates", vol.Name, vol.Secret.SecretName)
			}
			for _, k := range keys {
				path := vm.MountPath + "/" + k
				switch reader := argReading(args, path); reader {
				case "--cursor-key-file":
					files[k] = base64.StdEncoding.EncodeToString(key) + "\n"
				case "--tokens":
					files[k] = "alice sha256:" + hex.EncodeToString(sum[:]) + "\n"
				case "":
					t.Fatalf("Secret %s key %s is mounted at %s, which no argument reads (args %q)", vol.Secret.SecretName, k, path, args)
				default:
					t.Fatalf("%s reads Secret %s key %s: this test has no value for it", reader, vol.Secret.SecretName, k)
				}
			}
		case vol.ConfigMap != nil:
			cm := configMap(t, m, vol.ConfigMap.Name)
			for k, v := range cm.Data {
				files[k] = v
			}
		case vol.EmptyDir != nil:
		default:
			t.Fatalf("volume %s: only Secrets, ConfigMaps and emptyDirs are known here", vol.Name)
		}
		for k, v := range files {
			if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	addr := ""
	for i, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok {
			for mp, dir := range mounts {
				if rest, under := strings.CutPrefix(v, mp+"/"); under {
					a = k + "=" + filepath.Join(dir, rest)
					break
				}
			}
		}
		if h, ok := strings.CutPrefix(a, "--http="); ok {
			host, _, err := net.SplitHostPort(h)
			if err != nil {
				t.Fatalf("--http=%s: %v", h, err)
			}
			port := freePort(t)
			a = "--http=" + net.JoinHostPort(host, port) // the container's port may be taken here
			addr = "127.0.0.1:" + port
		}
		args[i] = a
	}
	if addr == "" {
		t.Fatalf("args %q: no --http", args)
	}

	bin := filepath.Join(t.TempDir(), "mcp-resources")
	run(t, nil, "go", "build", "-o", bin, "./cmd/mcp-resources")
	var stderr bytes.Buffer
	srv := exec.Command(bin, args...)
	srv.Env, srv.Stdout, srv.Stderr = env, &stderr, &stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = srv.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = srv.Process.Kill()
			<-exited
		}
	})
	t.Logf("mcp-resources %s", strings.Join(args, " "))

	base := "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("the server exited (%v) before /readyz answered 200:\n%s", waitErr, stderr.String())
		default:
		}
		code, body := get(base + "/readyz")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %s after 60 s\n%s", code, body, stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}

	const uri = "doc://tenants/acme/documents/00000000-0000-0000-0000-00000000000a"
	if code, _, _ := mcpPost(t, base, "", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"chartcheck","version":"1"}}}`); code != http.StatusUnauthorized {
		t.Errorf("initialize without a token: HTTP %d, want 401", code)
	}
	got := mcpRead(t, base, token, uri)
	if len(got.Result.Contents) == 0 || got.Result.Contents[0].Text != "Ship in March." {
		t.Fatalf("resources/read %s as alice: %+v\n%s", uri, got, stderr.String())
	}
}

func secretHas(secrets map[string][]string, name, key string) bool {
	for _, k := range secrets[name] {
		if k == key {
			return true
		}
	}
	return false
}

// argReading names the flag whose value is path (--flag=path), or "".
func argReading(args []string, path string) string {
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok && v == path {
			return k
		}
	}
	return ""
}

func configMap(t *testing.T, m map[string][]any, name string) *corev1.ConfigMap {
	t.Helper()
	for _, o := range m["ConfigMap"] {
		if cm := o.(*corev1.ConfigMap); cm.Name == name {
			return cm
		}
	}
	t.Fatalf("no ConfigMap %s rendered", name)
	return nil
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

var client = &http.Client{Timeout: 10 * time.Second}

func get(u string) (int, string) {
	resp, err := client.Get(u)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(b)
}

// mcpPost posts one JSON-RPC message to /mcp over streamable HTTP and
// returns the status, the session id and the message answered (from JSON
// or the last SSE data line).
func mcpPost(t *testing.T, base, token, session, msg string) (int, string, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var last []byte
		for _, l := range bytes.Split(body, []byte("\n")) {
			if d, ok := bytes.CutPrefix(bytes.TrimRight(l, "\r"), []byte("data:")); ok {
				last = bytes.TrimSpace(d)
			}
		}
		body = last
	}
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), body
}

type readResult struct {
	Result struct {
		Contents []struct{ URI, MimeType, Text string }
	}
	Error *struct {
		Code    int
		Message string
	}
}

// mcpRead initializes a session with token and reads uri.
func mcpRead(t *testing.T, base, token, uri string) readResult {
	t.Helper()
	code, session, body := mcpPost(t, base, token, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"chartcheck","version":"1"}}}`)
	if code != http.StatusOK {
		t.Fatalf("initialize: HTTP %d: %s", code, body)
	}
	if code, _, body := mcpPost(t, base, token, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted && code != http.StatusOK {
		t.Fatalf("notifications/initialized: HTTP %d: %s", code, body)
	}
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": map[string]string{"uri": uri}})
	code, _, body = mcpPost(t, base, token, session, string(req))
	if code != http.StatusOK {
		t.Fatalf("resources/read: HTTP %d: %s", code, body)
	}
	var r readResult
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("resources/read: %v: %s", err, body)
	}
	if r.Error != nil {
		t.Fatalf("resources/read: error %d %s", r.Error.Code, r.Error.Message)
	}
	return r
}

// TestTheChartRefusesToServeUnidentifiedCallers: with no tokens file and no
// identity provider the chart fails to render unless anonymous says so,
// and anonymous is passed on as serve --anonymous.
func TestTheChartRefusesToServeUnidentifiedCallers(t *testing.T) {
	const base = "cursorKey: {secretName: mcp-cursor}\n"
	for _, tc := range []struct{ name, values, refusal string }{
		{"nothing", base, "no caller would be identified"},
		{"anonymous beside tokens", base + "anonymous: true\ntokens: {secretName: t}\n", "anonymous=true"},
		{"anonymous beside oauth", base + "anonymous: true\noauth: {issuer: \"https://id.example/\"}\n", "anonymous=true"},
		{"a resources file beside the reference schema", base + "tokens: {secretName: t}\nresourcesFile: \"version: 1\"\npostgres: {urlSecret: db}\n", "resourcesFile names its own sources"},
		{"a variable with a value and a Secret", base + "tokens: {secretName: t}\nresourcesFileEnv: [{name: A, value: x, secretName: s, secretKey: k}]\n", "resourcesFileEnv A"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := renderError(t, tc.values)
			if err == nil || !strings.Contains(err.Error(), tc.refusal) {
				t.Fatalf("rendered (%v), want a refusal naming %q", err, tc.refusal)
			}
		})
	}
	for _, tc := range []struct{ name, values, arg string }{
		{"anonymous", base + "anonymous: true\n", "--anonymous"},
		{"an identity provider", base + "oauth: {issuer: \"https://id.example/\", resource: \"https://mcp.example/mcp\", scopes: [read]}\n", "--oauth-issuer=https://id.example/"},
		{"an identity provider in extraArgs", base + "extraArgs: [\"--oauth-issuer=https://id.example/\"]\n", "--oauth-issuer=https://id.example/"},
		{"an identity provider in the resources file", base + "resourcesFile: |\n  version: 1\n  oauth: {issuer: \"https://id.example/\"}\n", "--config=/etc/mcp-resources/resources.yaml"},
		{"a plain variable", base + "tokens: {secretName: t}\nresourcesFile: \"version: 1\"\nresourcesFileEnv: [{name: DOCS_BUCKET, value: docs}]\n", "--tokens=/var/run/mcp-resources/tokens/tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := deployment(t, render(t, tc.values)).Spec.Template.Spec.Containers[0]
			if !containsArg(c, tc.arg) {
				t.Fatalf("args %q lack %q", c.Args, tc.arg)
			}
			if tc.name != "anonymous" && containsArg(c, "--anonymous") {
				t.Fatalf("args %q serve anonymously", c.Args)
			}
		})
	}
}

func containsArg(c corev1.Container, arg string) bool {
	for _, a := range c.Args {
		if a == arg {
			return true
		}
	}
	return false
}

// renderError runs helm template with values and returns its failure.
func renderError(t *testing.T, values string) error {
	t.Helper()
	vf := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(vf, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(helm(t), "template", "demo", chart, "-f", vf).CombinedOutput()
	if err != nil {
		return errors.New(string(out))
	}
	return nil
}
