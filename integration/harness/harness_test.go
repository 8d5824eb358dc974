package harness

import (
	"os"
	"os/exec"
	"regexp"
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
	}
	t.Log("reached the end: the harness neither skipped nor failed")
}

// TestUnavailableSkipsOrFails runs this test binary again with no service
// addresses and a Docker host that cannot answer, and checks that each
// service's test skips with one line naming the reason, that
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
	for _, service := range []string{"postgres", "s3"} {
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
				reason := regexp.MustCompile(`(?m)^\s+\S+\.go:\d+: (no (PostgreSQL|S3 server): .*)$`).FindStringSubmatch(text)
				if reason == nil {
					t.Fatalf("no one-line reason in output:\n%s", text)
				}
				wantVar := map[string]string{"postgres": EnvPostgresURL, "s3": EnvS3Endpoint}[service]
				if !strings.Contains(reason[1], wantVar+" is unset") || !strings.Contains(reason[1], "Docker is unavailable") {
					t.Errorf("reason %q does not say what is missing", reason[1])
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
