package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/log"
)

// EnvRyukDisabled is testcontainers' own switch for its reaper container
// (testcontainers/ryuk), which it pulls from a registry before the first
// container. The harness sets it to "true" when it is unset: the harness
// removes its containers itself (in [Main]), and on a machine without a
// registry the pull would fail every test. Set it to "false" to have the
// reaper anyway.
const EnvRyukDisabled = "TESTCONTAINERS_RYUK_DISABLED"

// EnvHostOverride is testcontainers' own name for the host at which the
// tests reach published container ports. The harness sets it to 127.0.0.1
// when it is unset and the engine is on this machine (DOCKER_HOST unset or a
// unix socket): testcontainers-go otherwise takes the default gateway's
// address whenever /.dockerenv exists (a machine that is itself a
// container), and the tests must talk to loopback only. Set it yourself when
// the tests run in a container beside the engine's host.
const EnvHostOverride = "TESTCONTAINERS_HOST_OVERRIDE"

var (
	dockerOnce sync.Once
	dockerErr  error
)

// dockerHealth reports, once per test binary, whether a Docker engine
// answers. It first looks for the engine's socket itself (see
// [dockerSocketProblem]), then asks testcontainers' own health check, in its
// own goroutine abandoned after dockerProbeTimeout: finding the Docker host
// happens outside any context we could cancel.
func dockerHealth() error {
	dockerOnce.Do(func() {
		if os.Getenv(EnvRyukDisabled) == "" {
			os.Setenv(EnvRyukDisabled, "true")
		}
		if _, set := os.LookupEnv(EnvHostOverride); !set {
			if host := os.Getenv("DOCKER_HOST"); host == "" || strings.HasPrefix(host, "unix://") {
				os.Setenv(EnvHostOverride, "127.0.0.1")
			}
		}
		if err := dockerSocketProblem(os.Getenv, fileExists); err != nil {
			dockerErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), dockerProbeTimeout)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			defer func() {
				if r := recover(); r != nil {
					done <- fmt.Errorf("docker provider panicked: %v", r)
				}
			}()
			provider, err := testcontainers.ProviderDefault.GetProvider(testcontainers.WithLogger(log.NewNoopLogger()))
			if err != nil {
				done <- err
				return
			}
			done <- provider.Health(ctx) // Health also closes the provider.
		}()
		select {
		case dockerErr = <-done:
		case <-ctx.Done():
			dockerErr = fmt.Errorf("no answer within %s", dockerProbeTimeout.Round(time.Second))
		}
	})
	return dockerErr
}

// defaultDockerSocket is where a Docker engine listens unless told otherwise.
const defaultDockerSocket = "/var/run/docker.sock"

// dockerSocketProblem says, before testcontainers is asked, why no Docker
// engine can answer, or returns nil when one may. It exists because
// testcontainers-go (v0.44) treats every place it looks as a suggestion: a
// DOCKER_HOST that names a missing socket makes it fall back to
// /var/run/docker.sock, and with no socket anywhere its error names only its
// last fallback ("rootless Docker not found").
//
//   - DOCKER_HOST=unix://PATH with nothing at PATH is a problem, whatever
//     else exists: the user named the engine to use.
//   - DOCKER_HOST unset, no testcontainers properties file or Docker CLI
//     configuration (either may name another host) and no socket at
//     /var/run/docker.sock or any of the rootless places is a problem too.
//
// getenv and exists are os.Getenv and a file test, passed in for tests.
func dockerSocketProblem(getenv func(string) string, exists func(string) bool) error {
	if host := getenv("DOCKER_HOST"); host != "" {
		if path, ok := strings.CutPrefix(host, "unix://"); ok && !exists(path) {
			return fmt.Errorf("no Docker socket at %s, which DOCKER_HOST names", path)
		}
		return nil
	}
	home := getenv("HOME")
	candidates := []string{defaultDockerSocket}
	if home != "" {
		for _, f := range []string{".testcontainers.properties", ".docker/config.json"} {
			if exists(filepath.Join(home, f)) {
				return nil
			}
		}
		candidates = append(candidates,
			filepath.Join(home, ".docker/run/docker.sock"),
			filepath.Join(home, ".docker/desktop/docker.sock"))
	}
	if dir := getenv("XDG_RUNTIME_DIR"); dir != "" {
		candidates = append(candidates, filepath.Join(dir, "docker.sock"))
	}
	candidates = append(candidates, fmt.Sprintf("/run/user/%d/docker.sock", os.Getuid()))
	for _, c := range candidates {
		if exists(c) {
			return nil
		}
	}
	return fmt.Errorf("no Docker socket: DOCKER_HOST is unset and %s does not exist", defaultDockerSocket)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
