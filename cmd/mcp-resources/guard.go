package main

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"time"

	"go.phpboyscout.uk/mcp/resources/core"
)

// guardFlags bound what one client can take of the server: sessions,
// subscriptions, connections and bodies.
type guardFlags struct {
	SessionTimeout               time.Duration `name:"session-timeout" default:"10m" env:"MCPRES_SESSION_TIMEOUT" help:"End an HTTP session that sent no request for this long."`
	MaxSessions                  int           `name:"max-sessions" default:"1000" env:"MCPRES_MAX_SESSIONS" help:"Most HTTP sessions open at once; one more is refused with HTTP 429."`
	MaxSessionsPerPrincipal      int           `name:"max-sessions-per-principal" default:"100" env:"MCPRES_MAX_SESSIONS_PER_PRINCIPAL" help:"Most HTTP sessions of one principal (the token's; without --tokens, one client address)."`
	MaxSubscriptionsPerPrincipal int           `name:"max-subscriptions-per-principal" default:"1000" env:"MCPRES_MAX_SUBSCRIPTIONS_PER_PRINCIPAL" help:"Most resource subscriptions of one principal over all its sessions (the server holds at most 10000, a session 100)."`
	MaxListensPerSession         int           `name:"max-listens-per-session" default:"4" env:"MCPRES_MAX_LISTENS_PER_SESSION" help:"Most subscriptions/listen streams open at once in one session (stdio, stateful HTTP)."`
	MaxListensPerPrincipal       int           `name:"max-listens-per-principal" default:"100" env:"MCPRES_MAX_LISTENS_PER_PRINCIPAL" help:"Most subscriptions/listen streams open at once for one principal over all its sessions (without --tokens every client is one principal); one more is refused."`
	ReadTimeout                  time.Duration `name:"http-read-timeout" default:"30s" env:"MCPRES_HTTP_READ_TIMEOUT" help:"Deadline to receive a whole HTTP request, headers and body (a slower client is disconnected)."`
	WriteTimeout                 time.Duration `name:"write-timeout" default:"10s" env:"MCPRES_WRITE_TIMEOUT" help:"Deadline of one write to a client (an HTTP response write, one notification); a session that misses it is ended."`
	IdleTimeout                  time.Duration `name:"http-idle-timeout" default:"2m" env:"MCPRES_HTTP_IDLE_TIMEOUT" help:"Close an idle keep-alive HTTP connection after this long."`
	MaxBodyBytes                 byteSize      `name:"max-body-bytes" default:"4MiB" env:"MCPRES_MAX_BODY_BYTES" help:"Largest HTTP request body and stdio line (JSON-RPC batches are refused)."`
	AllowedOrigins               []string      `name:"allowed-origins" placeholder:"ORIGIN" env:"MCPRES_ALLOWED_ORIGINS" help:"Browser origins (scheme://host:port) allowed besides loopback ones; a request with any other Origin is refused with 403."`
	MetricsAddr                  string        `name:"metrics-addr" placeholder:"ADDR" env:"MCPRES_METRICS_ADDR" help:"Serve /metrics, /healthz and /readyz on their own listener at ADDR instead of the --http one."`
}

// check refuses values that cannot mean anything.
func (g *guardFlags) check(http bool) error {
	for _, f := range []struct {
		name string
		v    any // a duration or a count
	}{{"--session-timeout", g.SessionTimeout}, {"--http-read-timeout", g.ReadTimeout}, {"--write-timeout", g.WriteTimeout}, {"--http-idle-timeout", g.IdleTimeout},
		{"--max-sessions", g.MaxSessions}, {"--max-sessions-per-principal", g.MaxSessionsPerPrincipal}, {"--max-subscriptions-per-principal", g.MaxSubscriptionsPerPrincipal},
		{"--max-listens-per-session", g.MaxListensPerSession}, {"--max-listens-per-principal", g.MaxListensPerPrincipal}} {
		if reflect.ValueOf(f.v).Int() <= 0 {
			return fmt.Errorf("%s must be positive, got %v", f.name, f.v)
		}
	}
	if g.MaxSessionsPerPrincipal > g.MaxSessions {
		return fmt.Errorf("--max-sessions-per-principal (%d) exceeds --max-sessions (%d)", g.MaxSessionsPerPrincipal, g.MaxSessions)
	}
	if g.MaxBodyBytes <= 0 {
		return fmt.Errorf("--max-body-bytes must be positive, got %d", g.MaxBodyBytes)
	}
	for _, o := range g.AllowedOrigins {
		if !validOrigin(o) {
			return fmt.Errorf("--allowed-origins: %q is not an origin (scheme://host[:port])", o)
		}
	}
	if g.MetricsAddr != "" && !http {
		return errors.New("--metrics-addr needs --http: stdio has no HTTP endpoints")
	}
	return nil
}

// readHeaderTimeout is the header deadline: 10 s, or less under a shorter
// whole-request deadline.
func (g *guardFlags) readHeaderTimeout() time.Duration { return min(10*time.Second, g.ReadTimeout) }

// validOrigin reports whether o is scheme://host[:port] with nothing else,
// as a browser sends it in Origin.
func validOrigin(o string) bool {
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Hostname() != "" && u.User == nil &&
		u.Path == "" && u.RawQuery == "" && u.Fragment == "" && !u.ForceQuery && o == u.Scheme+"://"+u.Host
}

// checkLimitCombination refuses limits that contradict each other in a way
// the gateway does not itself check: an item limit above the whole
// response's payload limit names items that could never be served (like a
// default page size above the largest page, which the gateway refuses).
func checkLimitCombination(l core.ResourceLimits) error {
	d := core.DefaultResourceLimits()
	item, resp := l.MaxItemBytes, l.MaxResponseBytes
	if item <= 0 {
		item = d.MaxItemBytes
	}
	if resp <= 0 {
		resp = d.MaxResponseBytes
	}
	if item > resp && l.MaxItemBytes >= 0 && l.MaxResponseBytes >= 0 {
		return fmt.Errorf("configuration: %w", core.ConfigPath{Field: "MaxItemBytes"}.Reject(
			fmt.Sprintf("%d exceeds MaxResponseBytes %d: no item that large could be served", item, resp), nil))
	}
	return nil
}
