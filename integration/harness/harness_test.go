package harness

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

const helperEnv = "MCPRES_HARNESS_HELPER"

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestHelperNoServices is the body of the child process that
// TestUnavailableSkipsOrFails runs; in a normal run it returns at once.
func TestHelperNoServices(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	switch os.Getenv(helperEnv + "_SERVICE") {
	case "postgres":
		Postgres(t)
	case "s3":
		S3(t)
	case "s3users":
		S3Users(t)
	}
	t.Log("reached the end: the harness neither skipped nor failed")
}

// TestUnavailableSkipsOrFails runs this test binary again with no service
// addresses and DOCKER_HOST naming a socket that does not exist, and checks
// that each service's test skips with one line naming the reason (that
// socket, not wherever testcontainers would fall back to: the test passes
// with a Docker engine on the default socket too), that
// MCPRES_INTEGRATION=require turns that into a failure, and that deciding
// takes bounded time.
func TestUnavailableSkipsOrFails(t *testing.T) {
	if os.Getenv(helperEnv) == "1" {
		return
	}
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, service := range []string{"postgres", "s3", "s3users"} {
		for _, mode := range []string{"", "require"} {
			name := service + "/" + map[string]string{"": "skip", "require": "require"}[mode]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				cmd := exec.CommandContext(t.Context(), exe, "-test.run=^TestHelperNoServices$", "-test.v")
				cmd.Env = childEnv(t, map[string]string{
					helperEnv:              "1",
					helperEnv + "_SERVICE": service,
					EnvIntegration:         mode,
				})
				start := time.Now()
				out, err := cmd.CombinedOutput()
				elapsed := time.Since(start)
				text := string(out)
				if elapsed > 2*dockerProbeTimeout {
					t.Errorf("deciding took %s", elapsed)
				}
				if strings.Contains(text, "reached the end") {
					t.Fatalf("harness neither skipped nor failed:\n%s", text)
				}
				reason := regexp.MustCompile(`(?m)^\s+\S+\.go:\d+: (no (PostgreSQL|S3 server|S3 server with users): .*)$`).FindStringSubmatch(text)
				if reason == nil {
					t.Fatalf("no one-line reason in output:\n%s", text)
				}
				wantVar := map[string]string{"postgres": EnvPostgresURL, "s3": EnvS3Endpoint, "s3users": EnvS3Endpoint}[service]
				if !strings.Contains(reason[1], wantVar+" is unset") || !strings.Contains(reason[1], "Docker is unavailable") {
					t.Errorf("reason %q does not say what is missing", reason[1])
				}
				if !strings.Contains(reason[1], "no Docker socket at ") || !strings.Contains(reason[1], "which DOCKER_HOST names") {
					t.Errorf("reason %q does not name the missing socket", reason[1])
				}
				if mode == "" {
					if err != nil || !strings.Contains(text, "--- SKIP: TestHelperNoServices") {
						t.Fatalf("want a skip and exit 0, got err %v:\n%s", err, text)
					}
					if !strings.Contains(text, "skipped 1 integration test(s): "+reason[1]) {
						t.Errorf("Main did not summarise the skip:\n%s", text)
					}
				} else {
					if err == nil || !strings.Contains(text, "--- FAIL: TestHelperNoServices") {
						t.Fatalf("want a failure and non-zero exit, got err %v:\n%s", err, text)
					}
					if !strings.Contains(reason[1], EnvIntegration+"=require") {
						t.Errorf("failure %q does not name the switch", reason[1])
					}
				}
			})
		}
	}
}

// TestNotOfferedSkipsEvenUnderRequire runs this test binary again against
// an S3 server declared to have no admin API (MCPRES_S3_ADMIN_ENDPOINT=none)
// with MCPRES_INTEGRATION=require, and checks that S3Users skips, and that
// the summary counts the skip with its reason. No server is contacted: the
// declaration is enough.
func TestNotOfferedSkipsEvenUnderRequire(t *testing.T) {
	if os.Getenv(helperEnv) == "1" {
		return
	}
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), exe, "-test.run=^TestHelperNoServices$", "-test.v")
	cmd.Env = childEnv(t, map[string]string{
		helperEnv:              "1",
		helperEnv + "_SERVICE": "s3users",
		EnvIntegration:         "require",
		EnvS3Endpoint:          "http://127.0.0.1:9",
		EnvS3AccessKey:         "key",
		EnvS3SecretKey:         "secret",
		EnvS3AdminEndpoint:     AdminEndpointNone,
	})
	out, err := cmd.CombinedOutput()
	text := string(out)
	if err != nil || !strings.Contains(text, "--- SKIP: TestHelperNoServices") {
		t.Fatalf("want a skip and exit 0, got err %v:\n%s", err, text)
	}
	want := "skipped 1 integration test(s): per-principal users: the S3 server at " + EnvS3Endpoint + " has no admin API"
	if !strings.Contains(text, want) {
		t.Errorf("Main did not count the skip with its reason (%q):\n%s", want, text)
	}
}

// TestDockerSocketProblem checks the harness's own look for a Docker socket
// against made-up environments and file systems.
func TestDockerSocketProblem(t *testing.T) {
	for _, c := range []struct {
		name  string
		env   map[string]string
		files []string
		want  string // "" for no problem
	}{
		{"DOCKER_HOST names a missing socket, the default exists",
			map[string]string{"DOCKER_HOST": "unix:///nowhere/docker.sock"}, []string{defaultDockerSocket},
			"no Docker socket at /nowhere/docker.sock, which DOCKER_HOST names"},
		{"DOCKER_HOST names a socket that exists",
			map[string]string{"DOCKER_HOST": "unix:///x/docker.sock"}, []string{"/x/docker.sock"}, ""},
		{"DOCKER_HOST over TCP is left to testcontainers",
			map[string]string{"DOCKER_HOST": "tcp://127.0.0.1:2375"}, nil, ""},
		{"nothing anywhere",
			map[string]string{"HOME": "/home/u"}, nil,
			"no Docker socket: DOCKER_HOST is unset and /var/run/docker.sock does not exist"},
		{"the default socket", map[string]string{"HOME": "/home/u"}, []string{defaultDockerSocket}, ""},
		{"a rootless socket", map[string]string{"HOME": "/home/u", "XDG_RUNTIME_DIR": "/run/u"}, []string{"/run/u/docker.sock"}, ""},
		{"a testcontainers properties file may name a host",
			map[string]string{"HOME": "/home/u"}, []string{"/home/u/.testcontainers.properties"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := dockerSocketProblem(func(k string) string { return c.env[k] },
				func(p string) bool { return slices.Contains(c.files, p) })
			switch {
			case c.want == "" && err != nil:
				t.Errorf("got %v, want no problem", err)
			case c.want != "" && (err == nil || err.Error() != c.want):
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
}

// childEnv is this process's environment without anything that could point
// the harness at a service or a Docker engine, plus set.
func childEnv(t *testing.T, set map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "MCPRES_") || strings.HasPrefix(k, "DOCKER_") ||
			strings.HasPrefix(k, "TESTCONTAINERS_") || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	home := t.TempDir() // no ~/.testcontainers.properties, no ~/.docker contexts
	env = append(env, "HOME="+home, "DOCKER_HOST=unix://"+home+"/no-docker.sock")
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

func TestUniqueNameFitsDatabasesAndBuckets(t *testing.T) {
	bucket := regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`)
	database := regexp.MustCompile(`^[a-z0-9][a-z0-9_]*[a-z0-9]$`)
	names := []string{
		"plain",
		"Über/ünïcode--and spaces__",
		"---",
		strings.Repeat("VeryLongTestName", 20),
		"a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/u/v/w/x/y/z",
	}
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			seen := map[string]bool{}
			for range 3 {
				b := uniqueName(t, "mcpres", '-', 63)
				d := uniqueName(t, "mcpres", '_', 63)
				if !bucket.MatchString(b) || strings.Contains(b, "--") {
					t.Errorf("bucket name %q is not a valid S3 bucket name", b)
				}
				if len(d) > 63 || !database.MatchString(d) {
					t.Errorf("database name %q is not a valid unquoted identifier of at most 63 bytes", d)
				}
				if seen[b] || seen[d] {
					t.Errorf("name repeated: %q / %q", b, d)
				}
				seen[b], seen[d] = true, true
			}
		})
	}
}
