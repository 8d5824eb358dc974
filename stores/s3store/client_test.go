package s3store

import (
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestNewClientKeepsItsConnectionsUnderConcurrentReads proves the default
// client keeps the connections of concurrent requests for the next ones:
// 32 requests in flight at once, twice, open 32 connections in all. With
// the SDK's default of 10 idle connections per host the second round
// opened 22 more.
func TestNewClientKeepsItsConnectionsUnderConcurrentReads(t *testing.T) {
	const inFlight = 32
	var opened atomic.Int64
	var arrived sync.WaitGroup
	var mu sync.Mutex
	var release chan struct{} // closed once all of the round are in flight
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ch := release
		mu.Unlock()
		arrived.Done()
		<-ch
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>no</Message></Error>`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c, err := NewClient(t.Context(), ClientConfig{Endpoint: srv.URL, UsePathStyle: true, AccessKeyID: "a", SecretAccessKey: "s", RetryMaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		arrived.Add(inFlight)
		mu.Lock()
		release = make(chan struct{})
		ch := release
		mu.Unlock()
		var done sync.WaitGroup
		for range inFlight {
			done.Go(func() {
				_, _ = c.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("k")})
			})
		}
		arrived.Wait()
		close(ch)
		done.Wait()
		if n := opened.Load(); n != inFlight {
			t.Fatalf("round %d: %d connections opened in all, want the %d of the first round", round+1, n, inFlight)
		}
	}
}

// TestNewClientKeepsTheDefaultChainsHTTPClient proves that without static
// credentials the default chain's HTTP client is kept, with the idle
// bound: here its AWS_CA_BUNDLE roots, which a TLS server of its own
// signs, so the request reaches that server.
func TestNewClientKeepsTheDefaultChainsHTTPClient(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.WriteHeader(http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"AWS_CA_BUNDLE": bundle, "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull} {
		t.Setenv(k, v)
	}
	c, err := NewClient(t.Context(), ClientConfig{Endpoint: srv.URL, UsePathStyle: true, RetryMaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	bc, ok := c.Options().HTTPClient.(*awshttp.BuildableClient)
	if !ok {
		t.Fatalf("the client sends with %T", c.Options().HTTPClient)
	}
	if tr := bc.GetTransport(); tr.MaxIdleConnsPerHost != idleConnections || tr.TLSClientConfig == nil || tr.TLSClientConfig.RootCAs == nil {
		t.Fatalf("transport: %d idle per host, TLS config %v", tr.MaxIdleConnsPerHost, tr.TLSClientConfig)
	}
	_, _ = c.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("k")})
	if served.Load() == 0 {
		t.Fatal("the request did not reach the server its CA bundle trusts")
	}
}
