package harness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/testcontainers/testcontainers-go"
	tcexec "github.com/testcontainers/testcontainers-go/exec"
	"github.com/testcontainers/testcontainers-go/wait"
)

// adminFunc runs one `versitygw admin` subcommand (create-user ...) with the
// root credentials against one server.
type adminFunc func(ctx context.Context, args ...string) error

// Root credentials of the versitygw container that S3Users starts.
const (
	vgwRootKey    = "mcpres"
	vgwRootSecret = "mcpres-secret"
)

var (
	vgwOnce   sync.Once
	vgwServer S3Env  // versitygw from testcontainers
	vgwReason string // why no server is available, when it is not
	vgwErr    error  // a server should have started and did not
)

// S3Users is [S3] on a server where [S3Env.NewUser] can create per-principal
// users (versitygw, with its admin API): a fresh versioned bucket that
// belongs to t alone, removed when t ends.
//
// The server is, in order: the one at [EnvS3Endpoint] when
// [EnvS3AdminEndpoint] names its admin API (the admin client is the
// versitygw binary, see [EnvVersitygw]); none, with t skipped through
// [NotOffered], when [EnvS3AdminEndpoint] is [AdminEndpointNone]; a
// versitygw container ([EnvVersitygwImage]) when [EnvS3Endpoint] is unset
// and Docker answers; otherwise t is skipped or fails as the package doc
// describes.
func S3Users(t testing.TB) S3Env {
	t.Helper()
	if os.Getenv(EnvS3Endpoint) != "" {
		env := s3ServerEnv(t)
		switch env.AdminEndpoint {
		case AdminEndpointNone:
			NotOffered(t, fmt.Sprintf("per-principal users: the S3 server at %s has no admin API (%s=%s)",
				EnvS3Endpoint, EnvS3AdminEndpoint, AdminEndpointNone))
		case "":
			Unavailable(t, fmt.Sprintf("per-principal users: %s is unset (versitygw's admin API; %s if the server has none)",
				EnvS3AdminEndpoint, AdminEndpointNone))
		}
		bin := VersitygwBinary(t)
		endpoint := env.AdminEndpoint
		env.admin = func(ctx context.Context, args ...string) error {
			cmd := exec.CommandContext(ctx, bin, append([]string{"admin", "--er", endpoint}, args...)...)
			cmd.Env = append(os.Environ(), "ADMIN_ACCESS_KEY_ID="+env.AccessKey, "ADMIN_SECRET_ACCESS_KEY="+env.SecretKey)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("versitygw admin %s: %v: %s", args[0], err, bytes.TrimSpace(out))
			}
			return nil
		}
		return withBucket(t, env)
	}
	vgwOnce.Do(startVersitygw)
	if vgwReason != "" {
		Unavailable(t, vgwReason)
	}
	if vgwErr != nil {
		t.Fatalf("harness: %v", vgwErr)
	}
	return withBucket(t, vgwServer)
}

// NewUser creates a user of role "user" called name, with a secret of its
// own, on e's server and deletes it when t ends; it returns e with that
// user's credentials. Users have no access to anything until a bucket
// policy grants it. e must come from [S3Users].
func (e S3Env) NewUser(t testing.TB, name string) S3Env {
	t.Helper()
	if e.admin == nil {
		t.Fatalf("harness: NewUser on an S3Env that did not come from S3Users")
	}
	user := e
	user.AccessKey = name
	user.SecretKey = "secret-" + name
	user.admin = nil
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := e.admin(ctx, "create-user", "-a", user.AccessKey, "-s", user.SecretKey, "-r", "user"); err != nil {
		t.Fatalf("harness: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if err := e.admin(ctx, "delete-user", "-a", user.AccessKey); err != nil {
			t.Errorf("harness: %v", err)
		}
	})
	return user
}

// VersitygwBinary returns the path of a versitygw binary: [EnvVersitygw],
// else versitygw on PATH, in $GOBIN or in $(go env GOPATH)/bin (where
// scripts/tools.sh builds it). Without one, t is skipped or fails through
// [Unavailable].
func VersitygwBinary(t testing.TB) string {
	t.Helper()
	candidates := []string{os.Getenv(EnvVersitygw)}
	if p, err := exec.LookPath("versitygw"); err == nil {
		candidates = append(candidates, p)
	}
	if gobin := os.Getenv("GOBIN"); gobin != "" {
		candidates = append(candidates, filepath.Join(gobin, "versitygw"))
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		candidates = append(candidates, filepath.Join(strings.TrimSpace(string(out)), "bin", "versitygw"))
	}
	for _, c := range candidates {
		if fi, err := os.Stat(c); c != "" && err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return c
		}
	}
	Unavailable(t, fmt.Sprintf("versitygw not found (set %s, or run scripts/tools.sh versitygw)", EnvVersitygw))
	return ""
}

func startVersitygw() {
	if err := dockerHealth(); err != nil {
		vgwReason = fmt.Sprintf("no S3 server with users: %s is unset and Docker is unavailable; run `eval \"$(scripts/services.sh up)\"` or start Docker (docker: %s)",
			EnvS3Endpoint, oneLine(err))
		return
	}
	image := os.Getenv(EnvVersitygwImage)
	if image == "" {
		image = DefaultVersitygwImage
	}
	ctx, cancel := context.WithTimeout(context.Background(), containerStartTimeout)
	defer cancel()
	// The upstream image's entrypoint is /app/versitygw; a shell makes the
	// directories of the posix backend first.
	ctr, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:        image,
			ExposedPorts: []string{"7070/tcp", "7071/tcp"},
			Entrypoint: []string{"/bin/sh", "-c",
				`mkdir -p /tmp/vgw/iam /tmp/vgw/versions /tmp/vgw/data && exec /app/versitygw "$@"`, "versitygw"},
			Cmd: []string{"--port", ":7070", "--admin-port", ":7071",
				"--access", vgwRootKey, "--secret", vgwRootSecret, "--region", DefaultRegion,
				"--iam-dir", "/tmp/vgw/iam", "--health", "/health", "--quiet",
				"posix", "--versioning-dir", "/tmp/vgw/versions", "/tmp/vgw/data"},
			WaitingFor: wait.ForHTTP("/health").WithPort("7070/tcp"),
		},
		Started: true,
	})
	if ctr != nil {
		keepContainer(ctr)
	}
	if err != nil {
		vgwErr = fmt.Errorf("start versitygw container %s: %w", image, err)
		return
	}
	endpoint, err := ctr.PortEndpoint(ctx, "7070/tcp", "http")
	if err != nil {
		vgwErr = fmt.Errorf("versitygw container address: %w", err)
		return
	}
	adminEndpoint, err := ctr.PortEndpoint(ctx, "7071/tcp", "http")
	if err != nil {
		vgwErr = fmt.Errorf("versitygw container admin address: %w", err)
		return
	}
	vgwServer = S3Env{
		Endpoint:      endpoint,
		Region:        DefaultRegion,
		AccessKey:     vgwRootKey,
		SecretKey:     vgwRootSecret,
		AdminEndpoint: adminEndpoint,
		// The admin client is the container's own versitygw, talking to
		// its admin port from inside: nothing on the host is needed.
		admin: func(ctx context.Context, args ...string) error {
			cmd := append([]string{"/app/versitygw", "admin", "-a", vgwRootKey, "-s", vgwRootSecret,
				"--er", "http://127.0.0.1:7071"}, args...)
			code, out, err := ctr.Exec(ctx, cmd, tcexec.Multiplexed())
			if err != nil {
				return fmt.Errorf("versitygw admin %s: %w", args[0], err)
			}
			if code != 0 {
				text, _ := io.ReadAll(out)
				return fmt.Errorf("versitygw admin %s: exit %d: %s", args[0], code, bytes.TrimSpace(text))
			}
			return nil
		},
	}
}
