package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binDir holds the binary that binary builds; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir) // 46 MB a run, left in the temporary directory before
	}
	os.Exit(code)
}

// binary builds the command once per test binary, as a user would.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcp-resources-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binDir = dir
		binPath = filepath.Join(dir, "mcp-resources")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = err
			binPath = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("go build: %v\n%s", buildErr, binPath)
	}
	return binPath
}

// wireTap keeps every line the server writes, so tests can check the bytes.
type wireTap struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *wireTap) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *wireTap) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// The README's promise: the built binary, started with no flags and no
// services, serves the embedded demo over stdio; every listed resource and
// every template reads through the real go-sdk client.
func TestStdioServesEveryDemoResource(t *testing.T) {
	ctx := t.Context()
	cmd := exec.Command(binary(t), "serve")
	// No MCPRES_* from the caller's shell (a storage URL, say): the
	// binary runs exactly as on a fresh clone.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCPRES_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stderr := &wireTap{}
	cmd.Stderr = stderr
	tap := &wireTap{}
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.LoggingTransport{Transport: &mcp.CommandTransport{Command: cmd}, Writer: tap}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	defer cs.Close()
	if cs.InitializeResult().Capabilities.Resources == nil {
		t.Fatalf("the server does not declare the resources capability")
	}

	var uris []string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	wantURIs := []string{demoBundle, demoEmpty, demoLogo, demoReadme}
	if !slices.Equal(uris, wantURIs) {
		t.Fatalf("listed %q, want %q", uris, wantURIs)
	}
	var templates []string
	for r, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		templates = append(templates, r.URITemplate)
	}
	if !slices.Equal(templates, []string{demoNotes}) {
		t.Fatalf("templates %q, want %q", templates, demoNotes)
	}

	read := func(uri string) *mcp.ReadResourceResult {
		t.Helper()
		r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		return r
	}
	if r := read(demoReadme); len(r.Contents) != 1 || !strings.HasPrefix(r.Contents[0].Text, "# mcp-resources demo") {
		t.Errorf("readme: %+v", r.Contents)
	}
	if r := read(demoLogo); len(r.Contents) != 1 || !bytes.Equal(r.Contents[0].Blob, demoPNG) || r.Contents[0].MIMEType != "image/png" {
		t.Errorf("logo: %+v", r.Contents)
	}
	if r := read(demoEmpty); len(r.Contents) != 1 || r.Contents[0].Text != "" || r.Contents[0].URI != demoEmpty {
		t.Errorf("empty: %+v", r.Contents)
	}
	if !strings.Contains(tap.String(), `"uri":"demo://empty","mimeType":"text/plain","text":""`) {
		t.Errorf("the empty item is not on the wire with \"text\":\"\"")
	}
	for id, text := range demoNoteTexts {
		if r := read("demo://notes/" + id); len(r.Contents) != 1 || r.Contents[0].Text != text {
			t.Errorf("note %s: %+v", id, r.Contents)
		}
	}

	b := read(demoBundle)
	var got []string
	for _, c := range b.Contents {
		got = append(got, c.URI)
	}
	if len(got) != 4 || !strings.HasPrefix(got[0], "mcp-warning://read/") ||
		!slices.Equal(got[1:], []string{demoReadme, demoLogo, "demo://notes/1"}) {
		t.Fatalf("bundle items %q: want the warning, then readme, logo and note 1", got)
	}
	if !strings.HasPrefix(b.Contents[0].Text, wire.WarningPrefix) {
		t.Errorf("the warning item says %q", b.Contents[0].Text)
	}
	report, _ := json.Marshal(b.Meta[wire.ReportMetaKey])
	want := `{"issues":[{"code":"unavailable","message":"The resource is unavailable.","retryable":false,"uri":"demo://revoked"}],"issuesOmitted":0,"partial":true,"version":1}`
	if string(report) != want {
		t.Errorf("report %s, want %s", report, want)
	}
	if strings.Contains(tap.String(), "should not see") || strings.Contains(tap.String(), "nor this") ||
		strings.Contains(tap.String(), "demo://hidden") {
		t.Errorf("a hidden or revoked item reached the wire")
	}

	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://notes/%2e%2e"})
	if err == nil || !strings.Contains(err.Error(), "invalid resource request") {
		t.Errorf("a traversal capture: %v", err)
	}
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://nothing"})
	if err == nil || !strings.Contains(err.Error(), "resource unavailable") {
		t.Errorf("an unknown URI: %v", err)
	}
	if c := cs.InitializeResult().Capabilities; !c.Resources.Subscribe || c.Completions == nil {
		t.Errorf("capabilities %+v: want resources.subscribe and completions over stdio", c)
	}
	comp, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: demoNotes},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: ""},
	})
	if err != nil || !slices.Equal(comp.Completion.Values, []string{"1", "2", "3"}) {
		t.Errorf("completing the note id: %v %+v, want 1, 2 and 3", err, comp)
	}
	// At the SDK's default protocol, Subscribe is a subscriptions/listen
	// request that the go-sdk client does not wait on over stdio, so the
	// server's answer is checked on the wire: a subscribe to a URI the
	// caller may not read gets exactly the error a read of it gets.
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://hidden"}); err == nil {
		t.Fatalf("a read of demo://hidden succeeded")
	}
	_ = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "demo://hidden"})
	readAnswer, subAnswer := answerTo(t, tap, "resources/read", "demo://hidden"), answerTo(t, tap, "subscriptions/listen", "demo://hidden")
	if readAnswer == "" || readAnswer != subAnswer {
		t.Errorf("subscribe to a URI the caller may not read answered %s; a read of it %s; want the same error", subAnswer, readAnswer)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: demoReadme}); err != nil {
		t.Errorf("subscribe to the readme: %v", err)
	}
	if strings.Contains(stderr.String(), "panic") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}

// answerTo waits up to 5 s for the server's answer to the request of method
// that names uri, and returns its "error" object as JSON ("" if none).
func answerTo(t *testing.T, tap *wireTap, method, uri string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		// The SDK's LoggingTransport logs a write only after it returns, so
		// the answer's "read:" line may come before its request's "write:"
		// line: find the request's id first, then its answer anywhere.
		lines := strings.Split(tap.String(), "\n")
		id := ""
		for _, line := range lines {
			msg, ok := strings.CutPrefix(line, "write: ")
			if ok && strings.Contains(msg, `"method":"`+method+`"`) && strings.Contains(msg, uri) {
				var req struct{ ID json.RawMessage }
				if json.Unmarshal([]byte(msg), &req) == nil {
					id = string(req.ID)
				}
			}
		}
		for _, line := range lines {
			if msg, ok := strings.CutPrefix(line, "read: "); ok && id != "" {
				var resp struct {
					ID    json.RawMessage
					Error json.RawMessage
				}
				if json.Unmarshal([]byte(msg), &resp) == nil && string(resp.ID) == id {
					return string(resp.Error)
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("no answer to %s of %s within 5 s", method, uri)
	return ""
}
