// Command mcp-resources is the reference MCP resource server of
// go.phpboyscout.uk/mcp/resources: it serves database rows and S3 objects
// (or, with no storage flags, an embedded in-memory demo) as MCP resources
// over stdio or streamable HTTP.
//
//	mcp-resources serve                       # stdio, embedded demo
//	mcp-resources serve --http 127.0.0.1:8080 # streamable HTTP
//	mcp-resources migrate --postgres URL      # the reference schema
//	mcp-resources seed --postgres URL --bucket NAME ...  # the demo dataset
//	mcp-resources serve --postgres URL --bucket NAME ... # rows and objects
//	mcp-resources --help                      # every flag and MCPRES_* variable
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"

	"go.phpboyscout.uk/mcp/resources/config"
	"go.phpboyscout.uk/mcp/resources/mcpsdk/oauth"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// env is what a command sees of the process: its streams and a logger on
// stderr. Tests call run with their own.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
}

// exitCode carries kong's requested exit (after --help or --version) out of
// its parser without ending the process.
type exitCode int

// run parses args and runs the chosen command. It returns the process exit
// status: 0 on success, 1 when the command failed, 2 for a usage error. A
// failure is one line on stderr, never a stack trace.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	var c cli
	parser, err := kong.New(&c,
		kong.Name("mcp-resources"),
		kong.Description("Serve database rows and S3 objects as MCP resources."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exitCode(code)) }),
		kong.Vars{"version": version()},
		kong.UsageOnError(),
	)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-resources: %v\n", err)
		return 1
	}
	defer func() {
		if p := recover(); p != nil {
			ec, ok := p.(exitCode)
			if !ok {
				panic(p)
			}
			code = int(ec)
		}
	}()
	kctx, err := parser.Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-resources: %s\n", oneLine(err))
		return 2
	}
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, log: c.logger(stderr)}
	kctx.BindTo(ctx, (*context.Context)(nil))
	if err := kctx.Run(e); err != nil {
		if ce := (*config.Error)(nil); errors.As(err, &ce) {
			fmt.Fprintln(stderr, ce.Error()) // FILE:LINE:COL: message, as go vet prints it
			return 1
		}
		fmt.Fprintf(stderr, "mcp-resources: %s\n", oneLine(err))
		return 1
	}
	return 0
}

// cli is the command line. Every flag can also be set by the MCPRES_*
// environment variable named in its help.
type cli struct {
	Version   kong.VersionFlag `help:"Print the version and exit."`
	LogFormat string           `enum:"text,json" default:"text" env:"MCPRES_LOG_FORMAT" help:"Log format on stderr: text or json."`
	LogLevel  string           `enum:"debug,info,warn,error" default:"info" env:"MCPRES_LOG_LEVEL" help:"Least severe level logged: debug, info, warn or error."`

	Serve     serveCmd     `cmd:"" default:"withargs" help:"Serve MCP resources over stdio (the default) or streamable HTTP."`
	Migrate   migrateCmd   `cmd:"" help:"Apply the reference schema's migrations to --postgres and print what was applied."`
	Seed      seedCmd      `cmd:"" help:"Load the demo dataset (projects, assets, objects, grants for alice and bob) into --postgres and --bucket; running it again changes nothing."`
	Check     checkCmd     `cmd:"" help:"Check a resources file (--config) against its databases and buckets and print what serve --config would serve."`
	Explain   explainCmd   `cmd:"" help:"Read one URI as --principal against the sources of --config and print every step: the definition matched, captures, plan rows, decisions and who made them, storage requests, outcome. Exit 0 when the read would serve, 1 when not."`
	HashToken hashTokenCmd `cmd:"" name:"hash-token" help:"Read a bearer token on stdin and print its tokens-file hash."`
}

func (c *cli) logger(w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// hashTokenCmd prints the tokens-file form of a token read on stdin, so
// that no token ever has to be written into the file itself.
type hashTokenCmd struct {
	Principal string `arg:"" optional:"" help:"Print a whole tokens-file line for this principal."`
}

// Run reads one token (the first line of stdin) and prints its hash.
func (h *hashTokenCmd) Run(e *env) error {
	raw, err := io.ReadAll(io.LimitReader(e.stdin, 64<<10))
	if err != nil {
		return fmt.Errorf("reading the token on stdin: %w", err)
	}
	token, _, _ := strings.Cut(string(raw), "\n")
	token = strings.TrimRight(token, "\r")
	if token == "" {
		return errors.New("no token on stdin")
	}
	if h.Principal == "" {
		fmt.Fprintln(e.stdout, oauth.HashToken(token))
		return nil
	}
	line, err := oauth.TokensLine(h.Principal, token)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, line)
	return nil
}

// version is the module version the binary was built from.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// oneLine keeps an error on one line.
func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
