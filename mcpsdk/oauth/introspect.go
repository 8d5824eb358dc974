package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Bounds of token introspection.
const (
	// maxIntrospectionBytes bounds an introspection answer.
	maxIntrospectionBytes = 64 << 10
	// maxIntrospections bounds the introspection requests in flight; more
	// wait for one to end (or for their request's context).
	maxIntrospections = 16
)

// ReasonInactive is the [TokenError] reason of a token that the
// introspection endpoint answers active: false for (unknown, expired or
// revoked), or that it describes as another kind of token than an access
// token.
const ReasonInactive = "inactive"

// Introspection configures RFC 7662 token introspection: with it, a
// [Verifier] asks the authorization server about every token (opaque or
// not) instead of verifying JWTs with the issuer's keys.
type Introspection struct {
	// URL is the introspection endpoint, such as Hydra's
	// http://hydra-admin:4445/admin/oauth2/introspect. Required.
	URL string
	// ClientID and ClientSecret authenticate this server to the endpoint
	// (HTTP Basic, RFC 6749 section 2.3.1). Required.
	ClientID, ClientSecret string
}

// introspector asks the introspection endpoint about tokens.
type introspector struct {
	endpoint, id, secret string
	client               *http.Client
	slots                chan struct{} // bounds the requests in flight

	mu        sync.Mutex
	calls     uint64
	failures  uint64
	lastErr   error     // of the last call; nil if it was answered
	lastProbe time.Time // of Ready's last probe
}

func newIntrospector(in *Introspection, client *http.Client) (*introspector, error) {
	u, err := url.Parse(in.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errors.New("oauth: the introspection URL must be an absolute http(s) URL")
	}
	if in.ClientID == "" || in.ClientSecret == "" {
		return nil, errors.New("oauth: introspection needs a client id and secret: the endpoint must know who asks")
	}
	return &introspector{endpoint: in.URL, id: in.ClientID, secret: in.ClientSecret, client: client,
		slots: make(chan struct{}, maxIntrospections)}, nil
}

// errIntrospection is the cause of a verification whose introspection
// failed (no answer, not HTTP 200, too large, not JSON, no active member):
// the token is refused as unverifiable, not invalid (the middleware answers
// 500), whatever it was.
var errIntrospection = errors.New("oauth: token introspection failed")

// ask posts token to the endpoint and returns the answer's members.
func (in *introspector) ask(ctx context.Context, token string) (map[string]json.RawMessage, error) {
	select {
	case in.slots <- struct{}{}:
		defer func() { <-in.slots }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	reqCtx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	all, err := in.post(reqCtx, token)
	if err != nil && ctx.Err() != nil {
		// The caller went away: nothing is known of the endpoint, and a
		// client that hangs up must not make the server unready.
		return nil, err
	}
	in.mu.Lock()
	in.calls++
	in.lastErr = err
	if err != nil {
		in.failures++
	}
	in.mu.Unlock()
	return all, err
}

func (in *introspector) post(ctx context.Context, token string) (map[string]json.RawMessage, error) {
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errIntrospection, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(in.id), url.QueryEscape(in.secret))
	resp, err := in.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errIntrospection, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: the endpoint answered HTTP %d", errIntrospection, resp.StatusCode)
	}
	if resp.ContentLength > maxIntrospectionBytes {
		return nil, fmt.Errorf("%w: the answer is over %d bytes", errIntrospection, maxIntrospectionBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxIntrospectionBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errIntrospection, err)
	}
	if len(body) > maxIntrospectionBytes {
		return nil, fmt.Errorf("%w: the answer is over %d bytes", errIntrospection, maxIntrospectionBytes)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(body, &all); err != nil || all == nil {
		return nil, fmt.Errorf("%w: the answer is not a JSON object", errIntrospection)
	}
	var active bool
	if err := json.Unmarshal(all["active"], &active); err != nil {
		return nil, fmt.Errorf("%w: the answer has no boolean active", errIntrospection)
	}
	return all, nil
}

// introspect verifies token by asking the endpoint: an answer with active
// true, token_use (when present) access_token, iss (when present) the
// issuer, aud holding an audience, and exp, nbf and iat as for a JWT.
func (v *Verifier) introspect(ctx context.Context, token string) (*auth.TokenInfo, error) {
	all, err := v.intro.ask(ctx, token)
	if err != nil {
		return nil, &unavailableError{cause: err}
	}
	var active bool
	_ = json.Unmarshal(all["active"], &active) // checked by post
	if !active {
		return nil, refuse(ReasonInactive, errors.New("oauth: the introspection endpoint says the token is not active"))
	}
	var use string
	if raw, ok := all["token_use"]; ok && (json.Unmarshal(raw, &use) != nil || use != "access_token") {
		return nil, refuse(ReasonInactive, errors.New("oauth: the introspected token is not an access token"))
	}
	var std jwt.Claims
	if err := json.Unmarshal(mustJSON(all), &std); err != nil {
		return nil, refuse(ReasonMalformed, fmt.Errorf("oauth: the introspection answer's claims: %w", err))
	}
	if _, ok := all["iss"]; !ok {
		std.Issuer = v.issuer // RFC 7662 makes iss optional: the endpoint is the issuer's
	}
	return v.tokenInfo(&std, all)
}

// mustJSON re-encodes members that came from one JSON object.
func mustJSON(all map[string]json.RawMessage) []byte {
	b, _ := json.Marshal(all)
	return b
}

// ready reports whether the endpoint answered the last call, probing it
// (with a token that is no one's) at most once per minRefresh when it did
// not or no call was made yet.
func (in *introspector) ready(ctx context.Context, minRefresh time.Duration, now time.Time) error {
	in.mu.Lock()
	answered := in.calls > 0 && in.lastErr == nil
	probe := !answered && (in.lastProbe.IsZero() || now.Sub(in.lastProbe) >= minRefresh)
	if probe {
		in.lastProbe = now
	}
	in.mu.Unlock()
	if probe {
		_, _ = in.ask(ctx, "mcpres-readiness-probe")
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.calls > 0 && in.lastErr == nil {
		return nil
	}
	return errors.New("the authorization server's introspection endpoint is not answering")
}

func (in *introspector) stats() KeyStats {
	in.mu.Lock()
	defer in.mu.Unlock()
	return KeyStats{Fetches: in.calls, Failures: in.failures, Err: in.lastErr}
}
