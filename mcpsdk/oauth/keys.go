package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Bounds of what the key set reads from the authorization server.
const (
	maxJWKSBytes      = 1 << 20 // a JWKS document
	maxDiscoveryBytes = 1 << 20 // an OpenID Connect discovery document
	maxKeys           = 100     // signing keys kept from it
	fetchTimeout      = 10 * time.Second
)

// ErrKeysUnavailable is the cause of a verification that failed because the
// issuer's keys could not be loaded (discovery or the JWKS did not answer,
// or answered with no usable key). Such a request is refused: the verifier
// fails closed.
var ErrKeysUnavailable = errors.New("oauth: the issuer's signing keys are unavailable")

// errUnknownKey means the token names a key the issuer does not publish,
// even after a refresh (or with the refresh rate-limited).
var errUnknownKey = errors.New("oauth: the token's key is not in the issuer's key set")

// keySet caches the public signing keys of one issuer. A key id it does not
// hold triggers a refresh, at most one per minRefresh however many tokens
// name unknown ids; keys older than maxAge are refreshed before use and,
// when that refresh fails, no longer used.
type keySet struct {
	client     *http.Client
	issuer     string
	jwksURL    string // "" until discovery found it
	minRefresh time.Duration
	maxAge     time.Duration
	now        func() time.Time

	mu       sync.Mutex
	keys     map[string]jose.JSONWebKey // by kid; "" for a key without one
	loadedAt time.Time                  // of keys; zero: none loaded
	lastTry  time.Time
	lastErr  error
	inflight chan struct{} // closed when the running refresh ends
	fetches  uint64
	failures uint64
	gen      uint64 // counts the successful fetches: verified tokens are cached per generation
}

// KeyStats describes the key set for metrics and readiness.
type KeyStats struct {
	// Keys is the number of signing keys held now.
	Keys int
	// LoadedAt is when the keys held were fetched; zero when none were.
	LoadedAt time.Time
	// Fetches and Failures count the JWKS (and discovery) fetches made
	// and those that failed.
	Fetches, Failures uint64
	// Err is the cause of the last failed fetch when the last fetch
	// failed, else nil. It may name the issuer's URLs: log it, never
	// return it to a client.
	Err error
}

// generation returns the number of successful fetches, and whether the
// keys held may be used without a refresh.
func (k *keySet) generation() (uint64, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.gen, len(k.keys) > 0 && k.now().Sub(k.loadedAt) < k.maxAge
}

// ready reports whether the keys held may be used: some are held and they
// are younger than maxAge. A failed refresh since (which a token naming an
// unknown kid can start) does not matter while they are: they still verify
// every token they verified before.
func (k *keySet) ready() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.keys) > 0 && k.now().Sub(k.loadedAt) < k.maxAge
}

func (k *keySet) stats() KeyStats {
	k.mu.Lock()
	defer k.mu.Unlock()
	return KeyStats{Keys: len(k.keys), LoadedAt: k.loadedAt, Fetches: k.fetches, Failures: k.failures, Err: k.lastErr}
}

// key returns the public key with id kid. fresh reports keys that may be
// used without a refresh.
func (k *keySet) key(ctx context.Context, kid string) (jose.JSONWebKey, error) {
	for attempt := 0; ; attempt++ {
		k.mu.Lock()
		now := k.now()
		fresh := !k.loadedAt.IsZero() && now.Sub(k.loadedAt) < k.maxAge
		if key, ok := k.keys[kid]; ok && fresh {
			k.mu.Unlock()
			return key, nil
		}
		if k.inflight != nil { // another request refreshes: wait for it
			ch := k.inflight
			k.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return jose.JSONWebKey{}, ctx.Err()
			}
		}
		if attempt > 0 || (!k.lastTry.IsZero() && now.Sub(k.lastTry) < k.minRefresh) {
			// Refreshed already for this request, or rate-limited.
			err := errUnknownKey
			if !fresh {
				err = ErrKeysUnavailable
			}
			k.mu.Unlock()
			return jose.JSONWebKey{}, err
		}
		k.lastTry = now
		ch := make(chan struct{})
		k.inflight = ch
		k.mu.Unlock()
		k.refresh(ctx)
		k.mu.Lock()
		k.inflight = nil
		close(ch)
		k.mu.Unlock()
	}
}

// refresh fetches the key set once, keeping the old keys on failure.
func (k *keySet) refresh(ctx context.Context) {
	// The fetch must not end with the request that happened to start it:
	// others wait on it. It is bounded by fetchTimeout instead.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	defer cancel()
	keys, err := k.fetch(ctx)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.fetches++
	if err != nil {
		k.failures++
		k.lastErr = err
		return
	}
	k.keys, k.loadedAt, k.lastErr = keys, k.now(), nil
	k.gen++
}

func (k *keySet) fetch(ctx context.Context) (map[string]jose.JSONWebKey, error) {
	k.mu.Lock()
	url := k.jwksURL
	k.mu.Unlock()
	if url == "" {
		var err error
		if url, err = discoverJWKS(ctx, k.client, k.issuer); err != nil {
			return nil, err
		}
		k.mu.Lock()
		k.jwksURL = url
		k.mu.Unlock()
	}
	body, err := getBounded(ctx, k.client, url, maxJWKSBytes, "the JWKS")
	if err != nil {
		return nil, err
	}
	return parseKeySet(body)
}

// discoverJWKS reads the issuer's OpenID Connect discovery document (at
// most maxDiscoveryBytes of it) and returns its jwks_uri. The document must
// name the issuer, byte for byte, as OpenID Connect Discovery 1.0 section
// 4.3 asks.
func discoverJWKS(ctx context.Context, client *http.Client, issuer string) (string, error) {
	wellKnown := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	body, err := getBounded(ctx, client, wellKnown, maxDiscoveryBytes, "discovery")
	if err != nil {
		return "", err
	}
	var meta struct {
		Issuer string `json:"issuer"`
		JWKS   string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(body, &meta); err != nil {
		return "", fmt.Errorf("%w: discovery: the document is not JSON: %w", ErrKeysUnavailable, err)
	}
	if meta.Issuer != issuer {
		return "", fmt.Errorf("%w: discovery: the document names issuer %q, not %q", ErrKeysUnavailable, meta.Issuer, issuer)
	}
	if !strings.HasPrefix(meta.JWKS, "https://") && !strings.HasPrefix(meta.JWKS, "http://") {
		return "", fmt.Errorf("%w: the discovery document names no http(s) jwks_uri", ErrKeysUnavailable)
	}
	return meta.JWKS, nil
}

// getBounded GETs url as JSON and returns its body, refusing one over max
// bytes without reading more than max+1 of it. what names the document in
// errors.
func getBounded(ctx context.Context, client *http.Client, url string, max int64, what string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrKeysUnavailable, what, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrKeysUnavailable, what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %s answered HTTP %d", ErrKeysUnavailable, what, resp.StatusCode)
	}
	if resp.ContentLength > max {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrKeysUnavailable, what, max)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrKeysUnavailable, what, err)
	}
	if int64(len(body)) > max {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrKeysUnavailable, what, max)
	}
	return body, nil
}

// parseKeySet keeps the public signature keys of a JWKS document: RSA,
// ECDSA and Ed25519 keys whose use is "sig" or unset. Symmetric keys are
// dropped, so an HMAC token can never verify against a published key; a
// private key is kept as its public half only.
func parseKeySet(body []byte) (map[string]jose.JSONWebKey, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("%w: the JWKS is not JSON: %w", ErrKeysUnavailable, err)
	}
	keys := map[string]jose.JSONWebKey{}
	for _, raw := range doc.Keys {
		var key jose.JSONWebKey
		if err := key.UnmarshalJSON(raw); err != nil {
			continue // a key type go-jose does not know: not one of ours
		}
		if key.Use != "" && key.Use != "sig" {
			continue
		}
		var pub crypto.PublicKey
		switch kk := key.Key.(type) {
		case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
			pub = kk
		case *rsa.PrivateKey:
			pub = &kk.PublicKey
		case *ecdsa.PrivateKey:
			pub = &kk.PublicKey
		case ed25519.PrivateKey:
			pub = kk.Public()
		default:
			continue // symmetric ([]byte) or unknown
		}
		key.Key = pub
		key.Certificates = nil
		if _, dup := keys[key.KeyID]; dup {
			continue // the first one wins, as the issuer listed them
		}
		keys[key.KeyID] = key
		if len(keys) == maxKeys {
			break
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: the JWKS holds no public signing key", ErrKeysUnavailable)
	}
	return keys, nil
}
