package serverproc

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Env drops every MCPRES_* variable and keeps the rest.
func TestEnvDropsOnlyMCPRESVariables(t *testing.T) {
	t.Setenv("MCPRES_SERVERPROC_TEST", "x")
	t.Setenv("SERVERPROC_TEST_KEEP", "y")
	env := Env()
	if !slices.Contains(env, "SERVERPROC_TEST_KEEP=y") {
		t.Error("Env dropped a variable that is not MCPRES_*")
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "MCPRES_") {
			t.Errorf("Env kept %q", kv)
		}
	}
}

// Bearer sends the token on every request and leaves the caller's request
// untouched.
func TestBearerAddsTheTokenToACopy(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	hc := &http.Client{Transport: Bearer{Token: "tok", Next: http.DefaultTransport}}
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if !slices.Equal(got, []string{"Bearer tok", "Bearer tok"}) {
		t.Errorf("the server saw %q", got)
	}
	if h := req.Header.Get("Authorization"); h != "" {
		t.Errorf("the caller's request was changed: %q", h)
	}
}

// A command that exits before logging an address is an error, not a hang,
// and says so.
func TestStartOfACommandThatExitsIsAnError(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "exits")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'no address here' >&2\nexit 3\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	p, err := Start(bin, &stderr, "--flag")
	if err == nil || p != nil || !strings.Contains(err.Error(), "exited before serving") {
		t.Fatalf("Start = %v, %v; want the exit as an error", p, err)
	}
	if !strings.Contains(stderr.String(), "no address here") {
		t.Errorf("stderr %q was not copied", stderr.String())
	}
}

// A command that logs the address is found at that address.
func TestStartFindsTheLoggedAddress(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "serves")
	script := "#!/bin/sh\necho 'time=x level=INFO msg=\"serving MCP over streamable HTTP\" addr=127.0.0.1:4321' >&2\nexec sleep 30\n"
	if err := os.WriteFile(bin, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	p, err := Start(bin, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Cmd.Process.Kill(); <-p.Done }()
	if p.Addr != "127.0.0.1:4321" || !p.Alive() {
		t.Errorf("Addr %q alive %v", p.Addr, p.Alive())
	}
}

// A process's memory comes from /proc: this process's own is known, its
// peak at least its current size; a process that is gone is an error.
func TestMemoryReadsProc(t *testing.T) {
	m, err := Memory(os.Getpid())
	if err != nil || m.NowKB <= 0 || m.PeakKB < m.NowKB || m.NowMiB() != float64(m.NowKB)/1024 {
		t.Errorf("own memory = %+v, %v", m, err)
	}
	for _, pid := range []int{0, 1 << 30} {
		if _, err := Memory(pid); err == nil {
			t.Errorf("process %d has memory", pid)
		}
	}
}
