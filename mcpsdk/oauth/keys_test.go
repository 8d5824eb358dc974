package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// countingTransport counts the bytes read from every response body.
type countingTransport struct{ read atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.read}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// A discovery document over maxDiscoveryBytes is refused, and no more
// than that is read of it, whether its length is declared or streamed.
func TestHugeDiscoveryDocumentIsRefusedUnread(t *testing.T) {
	for _, declared := range []bool{false, true} {
		t.Run(fmt.Sprintf("declared length %v", declared), func(t *testing.T) {
			const huge = 64 << 20
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if declared {
					w.Header().Set("Content-Length", fmt.Sprint(huge))
				}
				head := `{"issuer":"` + srv.URL + `/","jwks_uri":"` + srv.URL + `/jwks","padding":"`
				io.WriteString(w, head)
				chunk := []byte(strings.Repeat("a", 64<<10))
				for n := len(head); n+len(chunk) <= huge; n += len(chunk) {
					if _, err := w.Write(chunk); err != nil {
						return // the client stopped reading
					}
				}
			}))
			t.Cleanup(srv.Close)
			ct := &countingTransport{}
			v, err := NewVerifier(&Options{Issuer: srv.URL + "/", Resource: testResource, HTTPClient: &http.Client{Transport: ct}})
			if err != nil {
				t.Fatal(err)
			}
			if err := v.Ready(context.Background()); err == nil {
				t.Fatal("ready with a discovery document of 64 MiB")
			}
			if st := v.KeyStats(); !errors.Is(st.Err, ErrKeysUnavailable) || !strings.Contains(st.Err.Error(), "over") {
				t.Fatalf("KeyStats.Err = %v, want the document refused as too large", st.Err)
			}
			if n := ct.read.Load(); n > maxDiscoveryBytes+1 {
				t.Fatalf("read %d bytes of the discovery document, want at most %d", n, maxDiscoveryBytes+1)
			}
		})
	}
}

// A discovery document that names another issuer is refused.
func TestDiscoveryMustNameTheIssuer(t *testing.T) {
	is := newIssuer(t)
	v := newTestVerifier(t, is, func(o *Options) { o.Issuer = strings.TrimSuffix(is.url(), "/") })
	if err := v.Ready(context.Background()); err == nil {
		t.Fatal("ready although discovery names another issuer")
	}
	if st := v.KeyStats(); st.Err == nil || !strings.Contains(st.Err.Error(), "issuer") {
		t.Fatalf("KeyStats.Err = %v", st.Err)
	}
}

// One junk token naming an unknown kid while the issuer is down starts a
// refresh that fails: the cached keys still verify good tokens, so the
// verifier stays ready.
func TestFailedRefreshByAnUnknownKidKeepsReadiness(t *testing.T) {
	is := newIssuer(t)
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	v := newTestVerifier(t, is, func(o *Options) { o.Now = clock; o.CacheTTL = -1 })
	good := is.token(t, is.claims("alice"))
	if _, err := v.Verify(context.Background(), good, nil); err != nil {
		t.Fatal(err)
	}
	is.down.Store(true)
	mu.Lock()
	now = now.Add(time.Minute) // past MinRefresh: the junk token may refresh
	mu.Unlock()
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	fetches := is.fetches.Load()
	if _, err := v.Verify(context.Background(), sign(t, jose.RS256, other, "junk", is.claims("mallory")), nil); err == nil {
		t.Fatal("the junk token was accepted")
	}
	if is.fetches.Load() != fetches+1 || v.KeyStats().Err == nil {
		t.Fatalf("the junk token did not start a failing refresh (fetches %d -> %d, err %v)", fetches, is.fetches.Load(), v.KeyStats().Err)
	}
	if err := v.Ready(context.Background()); err != nil {
		t.Fatalf("not ready after a failed refresh although the cached keys verify: %v", err)
	}
	if _, err := v.Verify(context.Background(), good, nil); err != nil {
		t.Fatalf("a good token after the failed refresh: %v", err)
	}
}

// rotatingIssuer publishes a key set that a test changes.
type rotatingIssuer struct {
	srv     *httptest.Server
	mu      sync.Mutex
	keys    []jose.JSONWebKey
	fetches atomic.Int64
}

func newRotatingIssuer(t *testing.T) *rotatingIssuer {
	ri := &rotatingIssuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": ri.srv.URL + "/", "jwks_uri": ri.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		ri.fetches.Add(1)
		ri.mu.Lock()
		defer ri.mu.Unlock()
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: ri.keys})
	})
	ri.srv = httptest.NewServer(mux)
	t.Cleanup(ri.srv.Close)
	return ri
}

// publish adds a fresh P-256 key under kid and returns it.
func (ri *rotatingIssuer) publish(t *testing.T, kid string) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ri.mu.Lock()
	ri.keys = append(ri.keys, jose.JSONWebKey{Key: &key.PublicKey, KeyID: kid, Algorithm: "ES256", Use: "sig"})
	ri.mu.Unlock()
	return key
}

// A token signed with a newly published key is accepted at most
// DefaultMinRefresh (5 s) after its publication, however junk tokens
// naming random kids are timed, while those junk tokens cause at most one
// fetch per DefaultMinRefresh. The clock is the test's.
func TestRotatedKeyIsAcceptedWithinFiveSeconds(t *testing.T) {
	ri := newRotatingIssuer(t)
	k1 := ri.publish(t, "k1")
	iss := ri.srv.URL + "/"
	t0 := time.Now()
	now := t0
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	at := func(d time.Duration) { mu.Lock(); now = t0.Add(d); mu.Unlock() }
	v, err := NewVerifier(&Options{Issuer: iss, Resource: testResource, Now: clock}) // the default MinRefresh
	if err != nil {
		t.Fatal(err)
	}
	claims := func() map[string]any {
		n := clock()
		return map[string]any{"iss": iss, "sub": "alice", "aud": testResource, "exp": n.Add(time.Hour).Unix(), "iat": n.Unix()}
	}
	if _, err := v.Verify(context.Background(), sign(t, jose.ES256, k1, "k1", claims()), nil); err != nil {
		t.Fatal(err)
	}
	junkKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	var junkN atomic.Int64
	flood := func() {
		var wg sync.WaitGroup
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tok := sign(t, jose.ES256, junkKey, fmt.Sprintf("junk-%d", junkN.Add(1)), claims())
				if _, err := v.Verify(context.Background(), tok, nil); reason(err) != ReasonKey {
					t.Errorf("a junk kid: %v, want %s", err, ReasonKey)
				}
			}()
		}
		wg.Wait()
	}
	// Junk tokens every 250 ms over 30 s; the issuer publishes k2 just
	// after the refresh that the junk at 5 s starts, the worst moment.
	var k2 *ecdsa.PrivateKey
	published := time.Duration(-1)
	perInterval := map[int64]int64{}
	for step := time.Duration(0); step <= 30*time.Second; step += 250 * time.Millisecond {
		at(step)
		before := ri.fetches.Load()
		flood()
		if step == 5*time.Second {
			k2 = ri.publish(t, "k2")
			published = step
		}
		if k2 != nil && step > published {
			_, err := v.Verify(context.Background(), sign(t, jose.ES256, k2, "k2", claims()), nil)
			if step-published >= 5*time.Second && err != nil {
				t.Fatalf("a token of the key published at %s is refused at %s: %v", published, step, err)
			}
		}
		perInterval[int64(step/DefaultMinRefresh)] += ri.fetches.Load() - before
	}
	for i, n := range perInterval {
		if n > 1 {
			t.Errorf("%d key fetches in interval %d of the junk flood, want at most 1", n, i)
		}
	}
	if n := ri.fetches.Load(); n > 1+int64(30*time.Second/DefaultMinRefresh)+1 {
		t.Fatalf("%d key fetches in 30 s of junk, want at most one per %s", n, DefaultMinRefresh)
	}
}
