// Package harness provisions the real services that integration tests talk
// to: a PostgreSQL server and an S3-compatible server.
//
// Every test gets its own fresh database ([Postgres]) and its own fresh,
// versioned bucket ([S3]); both are removed when the test ends, so tests can
// run in parallel and leave nothing shared behind.
//
// Where the servers come from, in order:
//
//  1. the environment: [EnvPostgresURL] for PostgreSQL, [EnvS3Endpoint] with
//     [EnvS3AccessKey] and [EnvS3SecretKey] for S3 (scripts/services.sh up
//     starts both natively and prints these variables);
//  2. otherwise testcontainers, when a Docker engine answers its health
//     check within a bounded time: one PostgreSQL, one MinIO and (for
//     [S3Users]) one versitygw container per test binary, started on first
//     use and stopped by [Main];
//  3. otherwise the test is skipped with one line that says why, or fails
//     with that line when [EnvIntegration] is "require".
//
// Every image comes from a variable whose default is the upstream image
// ([EnvPostgresImage], [EnvMinioImage], [EnvVersitygwImage]); on a machine
// without a registry, scripts/images.sh builds local ones and prints the
// variables. The harness sets [EnvRyukDisabled] to "true" unless it is set:
// it removes its own containers, and testcontainers' reaper image would be
// pulled from a registry.
//
// Every skip, whether from the harness or from a test through [Unavailable]
// or [NotOffered], is counted with its reason, and [Main] prints one line
// per reason at the end.
//
// A package of integration tests wires the harness in once:
//
//	func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }
package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
)

// Environment variables read by the harness.
const (
	// EnvPostgresURL is a postgres:// URL of a server on which the connecting
	// role may create and drop databases (a superuser on a throwaway server).
	EnvPostgresURL = "MCPRES_POSTGRES_URL"
	// EnvS3Endpoint is the base URL of an S3-compatible server, with scheme,
	// for example http://127.0.0.1:7070.
	EnvS3Endpoint = "MCPRES_S3_ENDPOINT"
	// EnvS3AccessKey is the access key id of a user that may create buckets.
	EnvS3AccessKey = "MCPRES_S3_ACCESS_KEY"
	// EnvS3SecretKey is the secret of EnvS3AccessKey.
	EnvS3SecretKey = "MCPRES_S3_SECRET_KEY"
	// EnvS3Region is the signing region; it defaults to [DefaultRegion].
	EnvS3Region = "MCPRES_S3_REGION"
	// EnvS3AdminEndpoint is the optional base URL of the versitygw admin API,
	// used by tests that create per-principal users.
	EnvS3AdminEndpoint = "MCPRES_S3_ADMIN_ENDPOINT"
	// EnvIntegration set to "require" turns every would-be skip into a
	// failure; CI sets it so a missing service can never pass silently.
	EnvIntegration = "MCPRES_INTEGRATION"
	// EnvPostgresImage overrides [DefaultPostgresImage] for testcontainers.
	EnvPostgresImage = "MCPRES_POSTGRES_IMAGE"
	// EnvMinioImage overrides [DefaultMinioImage] for testcontainers.
	EnvMinioImage = "MCPRES_MINIO_IMAGE"
	// EnvVersitygwImage overrides [DefaultVersitygwImage] for testcontainers.
	EnvVersitygwImage = "MCPRES_VERSITYGW_IMAGE"
	// EnvVersitygw is the path of a versitygw binary, used as the admin
	// client of a versitygw named by EnvS3AdminEndpoint; by default it is
	// looked for on PATH, in $GOBIN and in $(go env GOPATH)/bin.
	EnvVersitygw = "MCPRES_VERSITYGW"
)

// AdminEndpointNone as the value of [EnvS3AdminEndpoint] declares that the
// server at [EnvS3Endpoint] has no admin API for per-principal users (MinIO,
// say): tests that need such users are then skipped through [NotOffered],
// even when [EnvIntegration] is "require", instead of failing.
const AdminEndpointNone = "none"

// Defaults used when the environment does not say otherwise.
const (
	// DefaultRegion is the S3 signing region when EnvS3Region is unset.
	DefaultRegion = "us-east-1"
	// DefaultPostgresImage is the PostgreSQL image testcontainers runs.
	DefaultPostgresImage = "postgres:15.13-alpine"
	// DefaultMinioImage is the MinIO image testcontainers runs. MinIO's
	// images moved from Docker Hub to quay.io; override with EnvMinioImage.
	DefaultMinioImage = "quay.io/minio/minio:RELEASE.2025-04-22T22-12-26Z"
	// DefaultVersitygwImage is the versitygw image testcontainers runs for
	// [S3Users] (its binary at /app/versitygw, a shell at /bin/sh).
	DefaultVersitygwImage = "versity/versitygw:v1.8.0"
)

const (
	// dockerProbeTimeout bounds the Docker provider health check, so a
	// machine with a dead or absent engine skips quickly instead of hanging.
	dockerProbeTimeout = 10 * time.Second
	// containerStartTimeout bounds pulling and starting one container.
	containerStartTimeout = 5 * time.Minute
	// opTimeout bounds each provisioning or cleanup step against a server.
	opTimeout = time.Minute
)

// Main runs the tests of m, then reports why tests were skipped (once per
// reason) and stops the containers that the harness started. Call it from
// TestMain and pass its result to os.Exit.
func Main(m *testing.M) int {
	code := m.Run()
	reportSkips()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := stopContainers(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "harness: stopping containers: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// requireMode reports whether EnvIntegration asks for failures instead of
// skips. An unknown value fails the test rather than being guessed at.
func requireMode(t testing.TB) bool {
	t.Helper()
	switch v := os.Getenv(EnvIntegration); v {
	case "":
		return false
	case "require":
		return true
	default:
		t.Fatalf("harness: %s=%q: want \"require\" or unset", EnvIntegration, v)
		return true
	}
}

// Unavailable skips t because something it needs is missing (a service, a
// binary), or fails it when [EnvIntegration] is "require". The skip is
// counted under reason in the summary that [Main] prints.
func Unavailable(t testing.TB, reason string) {
	t.Helper()
	if requireMode(t) {
		t.Fatalf("%s (%s=require)", reason, EnvIntegration)
	}
	skips.record(reason)
	t.Skip(reason)
}

// NotOffered skips t because the server it was given, as declared by the
// environment, does not offer what t tests (per-principal users on a server
// declared with [AdminEndpointNone]). Unlike [Unavailable] it skips even
// when [EnvIntegration] is "require": the environment said so on purpose.
// The skip is counted under reason in the summary that [Main] prints.
func NotOffered(t testing.TB, reason string) {
	t.Helper()
	skips.record(reason)
	t.Skip(reason)
}

// skipLog remembers why tests were skipped, so Main can say it once.
type skipLog struct {
	mu      sync.Mutex
	order   []string
	reasons map[string]int
}

var skips = &skipLog{reasons: map[string]int{}}

func (s *skipLog) record(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reasons[reason] == 0 {
		s.order = append(s.order, reason)
	}
	s.reasons[reason]++
}

// reportSkips prints one line per skip reason, and a total. With -v each skipped test has
// already printed its reason. Without -v the go command shows nothing of a
// passing package but its "ok" line, so the summary is also handed to the go
// command's own output where that is safe (see tellGoCommand).
func reportSkips() {
	skips.mu.Lock()
	defer skips.mu.Unlock()
	total := 0
	var lines []string
	for _, reason := range skips.order {
		total += skips.reasons[reason]
		lines = append(lines, fmt.Sprintf("%s: skipped %d integration test(s): %s", binaryName(), skips.reasons[reason], reason))
	}
	if len(skips.order) > 1 {
		lines = append(lines, fmt.Sprintf("%s: skipped %d integration test(s) in all, for %d reasons", binaryName(), total, len(skips.order)))
	}
	for _, line := range lines {
		if testing.Verbose() || !tellGoCommand(line) {
			fmt.Println(line)
		}
	}
}

func binaryName() string {
	name := os.Args[0]
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	return strings.TrimSuffix(strings.TrimSuffix(name, ".exe"), ".test")
}

// uniqueName returns prefix, a slug of the test name and 64 random bits,
// joined by sep, at most max bytes, lowercase ASCII letters, digits and sep
// only, starting and ending with a letter or digit. It suits both database
// names (sep '_') and bucket names (sep '-', 3-63 characters).
func uniqueName(t testing.TB, prefix string, sep byte, max int) string {
	var random [8]byte
	if _, err := rand.Read(random[:]); err != nil {
		t.Fatalf("harness: random name: %v", err)
	}
	suffix := hex.EncodeToString(random[:])
	room := max - len(prefix) - len(suffix) - 2
	var slug strings.Builder
	lastSep := true
	for _, r := range strings.ToLower(t.Name()) {
		if slug.Len() >= room {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			slug.WriteRune(r)
			lastSep = false
		} else if !lastSep {
			slug.WriteByte(sep)
			lastSep = true
		}
	}
	name := strings.Trim(slug.String(), string(sep))
	if name == "" {
		return prefix + string(sep) + suffix
	}
	return prefix + string(sep) + name + string(sep) + suffix
}

// oneLine keeps an error's text on one line, for skip messages.
func oneLine(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// containers started by this test binary, stopped by Main.
var (
	containersMu sync.Mutex
	containers   []testcontainers.Container
)

func keepContainer(c testcontainers.Container) {
	containersMu.Lock()
	defer containersMu.Unlock()
	containers = append(containers, c)
}

func stopContainers(ctx context.Context) error {
	containersMu.Lock()
	defer containersMu.Unlock()
	var errs []error
	for _, c := range containers {
		if err := testcontainers.TerminateContainer(c, testcontainers.StopContext(ctx)); err != nil {
			errs = append(errs, err)
		}
	}
	containers = nil
	return errors.Join(errs...)
}
