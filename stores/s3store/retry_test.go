package s3store

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/core"
)

// slowDownServer answers every request with 503 SlowDown, as a throttling
// S3 does. versitygw cannot be made to throttle on demand, so this one
// answer is served by a stand-in; everything else is tested against
// versitygw in the integration suite.
func slowDownServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// TestThrottlingIsRetriedBoundedlyThenRetryable proves a throttled GET is
// retried by the SDK a bounded number of times, then fails as core.FailureOutage
// (read_failed for a body, FailureOutage while planning), never as
// unavailable or changed; that a throttled HEAD while planning is the same
// outage; and that the retries stop at the item's deadline.
func TestThrottlingIsRetriedBoundedlyThenRetryable(t *testing.T) {
	srv, hits := slowDownServer(t)
	c, err := NewClient(t.Context(), ClientConfig{Endpoint: srv.URL, UsePathStyle: true, AccessKeyID: "a", SecretAccessKey: "s", RetryMaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenBucket(t.Context(), c, "assets", nil)
	if err != nil {
		t.Fatal(err)
	}
	target, _ := NewObjectTarget("asset://x/1", Object{Bucket: "assets", Key: "k", ETag: `"e"`, Size: 10})
	ctx := core.WithCaller(t.Context(), core.Caller{Principal: "alice"})

	_, err = b.Read(ctx, whole(target))
	if !errors.Is(err, errServer) || core.KindOf(err) != core.FailureOutage || errors.Is(err, ErrChanged) {
		t.Fatalf("throttled read: %v, want an outage", err)
	}
	if n := hits.Load(); n != 3 {
		t.Fatalf("%d attempts, want the 3 the client allows", n)
	}
	hits.Store(0)
	if _, err := b.Head(ctx, "k"); core.KindOf(err) != core.FailureOutage || hits.Load() != 3 {
		t.Fatalf("throttled HEAD: %v after %d attempts, want an outage after 3", err, hits.Load())
	}

	hits.Store(0)
	c, _ = NewClient(t.Context(), ClientConfig{Endpoint: srv.URL, UsePathStyle: true, AccessKeyID: "a", SecretAccessKey: "s", RetryMaxAttempts: 1000})
	b, _ = OpenBucket(t.Context(), c, "assets", nil)
	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = b.Read(dctx, whole(target))
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("retries ran %v past a 300ms item deadline", took)
	}
	if err == nil || core.KindOf(err) == core.FailureUnavailable {
		t.Fatalf("throttled read under a deadline: %v", err)
	}
	if n := hits.Load(); n >= 1000 {
		t.Fatalf("%d attempts: the deadline did not stop the retries", n)
	}
}
