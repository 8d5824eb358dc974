package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/config"
)

// runArgs runs the command in-process with empty stdin.
func runArgs(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(ctx, args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestConfigurationErrorsEndWithOneClearLine(t *testing.T) {
	dir := t.TempDir()
	unreadable := filepath.Join(dir, "tokens-dir")
	if err := os.Mkdir(unreadable, 0o700); err != nil {
		t.Fatal(err)
	}
	badTokens := filepath.Join(dir, "bad-tokens")
	os.WriteFile(badTokens, []byte("alice plaintext-token\n"), 0o600)
	shortKey := filepath.Join(dir, "short-key")
	os.WriteFile(shortKey, []byte("too short\n"), 0o600)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := closed.Addr().String() // nothing listens there once closed
	closed.Close()
	s3Flags := []string{"--bucket=mcpres", "--bucket-endpoint=http://" + refused, "--bucket-path-style",
		"--bucket-access-key=k", "--bucket-secret-key=secret-in-flags"}

	cases := []struct {
		name string
		args []string
		want string // a word the line must contain
		code int
	}{
		{"unknown flag", []string{"serve", "--no-such-flag"}, "unknown flag", 2},
		{"negative limit", []string{"serve", "--max-items=-1"}, "MaxItems", 1},
		{"limit below its floor", []string{"serve", "--max-uri-bytes=10"}, "MaxURIBytes", 1},
		{"not a byte size", []string{"serve", "--max-item-bytes=lots"}, "byte size", 2},
		{"default page over max", []string{"serve", "--list-page-size=50", "--max-list-page-size=10"}, "ListPageSize", 1},
		{"missing tokens file", []string{"serve", "--http=127.0.0.1:0", "--tokens=" + filepath.Join(dir, "nope")}, "tokens file", 1},
		{"tokens file is a directory", []string{"serve", "--http=127.0.0.1:0", "--tokens=" + unreadable}, "tokens file", 1},
		{"tokens file with a plain token", []string{"serve", "--http=127.0.0.1:0", "--tokens=" + badTokens}, "line 1", 1},
		{"tokens over stdio", []string{"serve", "--tokens=" + badTokens}, "--http", 1},
		{"short cursor key", []string{"serve", "--cursor-key-file=" + shortKey}, "32 bytes", 1},
		{"stateless without a shared key", []string{"serve", "--http=127.0.0.1:0", "--stateless"}, "cursor-key", 1},
		{"port in use", []string{"serve", "--http=" + busy.Addr().String()}, "address already in use", 1},
		{"bad address", []string{"serve", "--http=not an address"}, "listen", 1},
		{"bad log format", []string{"--log-format=xml", "serve"}, "log-format", 2},
		{"bad postgres URL", []string{"serve", "--postgres=postgres://[::1"}, "not a valid PostgreSQL URL", 1},
		{"unreachable database", []string{"serve", "--postgres=postgres://app:pw-in-url@" + refused + "/db?connect_timeout=3"}, "cannot reach PostgreSQL", 1},
		{"S3 settings without a bucket", []string{"serve", "--postgres=postgres://" + refused + "/db", "--bucket-endpoint=http://" + refused}, "need --bucket", 1},
		{"bucket without postgres", []string{"serve", "--bucket=mcpres"}, "needs --postgres", 1},
		{"access key without secret", []string{"serve", "--postgres=postgres://" + refused + "/db", "--bucket=mcpres", "--bucket-access-key=k"}, "both", 1},
		{"migrate without postgres", []string{"migrate"}, "--postgres", 2},
		{"migrate on an unreachable database", []string{"migrate", "--postgres=postgres://" + refused + "/db?connect_timeout=3"}, "cannot reach PostgreSQL", 1},
		{"seed without a bucket", []string{"seed", "--postgres=postgres://" + refused + "/db"}, "needs --postgres and --bucket", 1},
		{"seed on an unreachable database", append([]string{"seed", "--postgres=postgres://" + refused + "/db?connect_timeout=3"}, s3Flags...), "cannot reach PostgreSQL", 1},
		{"two audit sinks", []string{"serve", "--audit-file=" + filepath.Join(dir, "a"), "--audit-postgres=postgres://" + refused + "/db"}, "choose one audit sink", 1},
		{"bad audit mode", []string{"serve", "--audit-file=" + filepath.Join(dir, "a"), "--audit-on-failure=maybe"}, "audit-on-failure", 2},
		{"audit file in a missing directory", []string{"serve", "--audit-file=" + filepath.Join(dir, "nope", "a")}, "--audit-file", 1},
		{"bad audit URL", []string{"serve", "--audit-postgres=postgres://app:pw-in-url@[::1"}, "--audit-postgres", 1},
		{"zero audit queue", []string{"serve", "--audit-file=" + filepath.Join(dir, "a"), "--audit-queue=0"}, "--audit-queue", 1},
		{"negative grace", []string{"serve", "--grace=-1s"}, "--grace must not be negative", 1},
		{"item limit above the response limit", []string{"serve", "--max-item-bytes=64MiB", "--max-response-bytes=1MiB"}, "MaxItemBytes", 1},
		{"item limit above the default response limit", []string{"serve", "--max-item-bytes=16MiB"}, "MaxItemBytes", 1},
		{"zero session timeout", []string{"serve", "--http=127.0.0.1:0", "--session-timeout=0s"}, "--session-timeout must be positive", 1},
		{"negative write timeout", []string{"serve", "--write-timeout=-1s"}, "--write-timeout must be positive", 1},
		{"zero session cap", []string{"serve", "--http=127.0.0.1:0", "--max-sessions=0"}, "--max-sessions must be positive", 1},
		{"principal cap above the server's", []string{"serve", "--http=127.0.0.1:0", "--max-sessions=5", "--max-sessions-per-principal=10"}, "exceeds --max-sessions", 1},
		{"zero subscription cap", []string{"serve", "--max-subscriptions-per-principal=0"}, "--max-subscriptions-per-principal", 1},
		{"zero body limit", []string{"serve", "--http=127.0.0.1:0", "--max-body-bytes=0"}, "--max-body-bytes", 1},
		{"an origin with a path", []string{"serve", "--http=127.0.0.1:0", "--allowed-origins=https://app.example/x"}, "not an origin", 1},
		{"an origin without a scheme", []string{"serve", "--http=127.0.0.1:0", "--allowed-origins=app.example"}, "not an origin", 1},
		{"metrics address over stdio", []string{"serve", "--metrics-addr=127.0.0.1:0"}, "--metrics-addr needs --http", 1},
		{"metrics port in use", []string{"serve", "--http=127.0.0.1:0", "--metrics-addr=" + busy.Addr().String()}, "--metrics-addr", 1},
		{"stateless with a bad origin", []string{"serve", "--http=127.0.0.1:0", "--stateless", "--cursor-key=" + strings.Repeat("k", 32), "--allowed-origins=x"}, "not an origin", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			code, _, stderr := runArgs(t, ctx, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, c.code, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "mcp-resources: ") || !strings.Contains(last, c.want) {
				t.Errorf("last stderr line %q does not say %q", last, c.want)
			}
			// kong prints its usage before a parse error (exit 2); every
			// other configuration error is the one line on stderr.
			if c.code != 2 && len(lines) != 1 {
				t.Errorf("stderr has %d lines, want exactly one:\n%s", len(lines), stderr)
			}
			for _, bad := range []string{"goroutine ", "panic", ".go:"} {
				if strings.Contains(stderr, bad) {
					t.Errorf("stderr looks like a stack trace (%q):\n%s", bad, stderr)
				}
			}
			for _, secret := range []string{"plaintext-token", "pw-in-url", "secret-in-flags"} {
				if strings.Contains(stderr, secret) {
					t.Errorf("stderr repeats the secret %q", secret)
				}
			}
		})
	}
}

func TestVersionAndHelpExitZero(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"--help"}, {"serve", "--help"}} {
		code, stdout, stderr := runArgs(t, t.Context(), args...)
		if code != 0 || stdout == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}

func TestHashTokenPrintsATokensFileLine(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"hash-token", "alice"}, strings.NewReader("s3cret\n"), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	tt, err := parseTokens(&out)
	if err != nil {
		t.Fatalf("hash-token's line does not parse as a tokens file: %v (%q)", err, out.String())
	}
	if info, err := tt.Verify(t.Context(), "s3cret", nil); err != nil || info.UserID != "alice" {
		t.Fatalf("the printed line maps s3cret to %+v %v", info, err)
	}
	if strings.Contains(out.String(), "s3cret") {
		t.Fatalf("hash-token printed the token")
	}
}

func TestByteSizesParseWithBinarySuffixes(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "512": 512, "64KiB": 64 << 10, "4MiB": 4 << 20, "1 GiB": 1 << 30, "10B": 10, "-1": -1} {
		got, err := config.ParseByteSize(in)
		if err != nil || got != want {
			t.Errorf("%q: got %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "1.5MiB", "4 mb", "99999999999GiB", "0x10"} {
		if _, err := config.ParseByteSize(in); err == nil {
			t.Errorf("%q parsed", in)
		}
	}
}
