package s3store

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
)

// pinServer is a stand-in S3 holding one object, "k.txt", whose ETag is etag;
// it records each request as "METHOD If-Match" and, after a HEAD, may
// replace the object (replace) so that the GET's If-Match no longer holds.
// versitygw serves the same case in the integration suite
// (TestObjectOfARowWithoutETagIsReadPinned); this one also shows the
// requests themselves.
type pinServer struct {
	mu      sync.Mutex
	etag    string
	body    string
	replace bool
	reqs    []string
}

func (p *pinServer) handler(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reqs = append(p.reqs, strings.TrimSpace(r.Method+" "+r.Header.Get("If-Match")))
	if !strings.HasSuffix(r.URL.Path, "/k.txt") {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	w.Header().Set("ETag", p.etag)
	w.Header().Set("Content-Type", "text/plain")
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Length", "5")
		if p.replace {
			p.etag, p.body, p.replace = `"new"`, "newer", false
		}
		return
	}
	if m := r.Header.Get("If-Match"); m != "" && m != p.etag {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusPreconditionFailed)
		w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>At least one of the preconditions you specified did not hold.</Message></Error>`))
		return
	}
	w.Header().Set("Content-Range", "bytes 0-4/5")
	w.Header().Set("Content-Length", "5")
	w.WriteHeader(http.StatusPartialContent)
	w.Write([]byte(p.body))
}

func (p *pinServer) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.reqs
	p.reqs = nil
	return out
}

// TestReadPinsAReferenceThatPinsNothing: a core.ObjectRef with neither
// ETag nor version id is read with one HEAD and then a GET If-Match the
// ETag the HEAD returned (Options.Check sees that ETag), so an object
// replaced in between is ErrChanged, never the new bytes; a missing one is
// unavailable from the HEAD; an Unpinned ref is one GET with no If-Match;
// and a ref that pins its ETag sends no HEAD.
func TestReadPinsAReferenceThatPinsNothing(t *testing.T) {
	p := &pinServer{etag: `"old"`, body: "older"}
	srv := httptest.NewServer(http.HandlerFunc(p.handler))
	t.Cleanup(srv.Close)
	c, err := NewClient(t.Context(), ClientConfig{Endpoint: srv.URL, UsePathStyle: true, AccessKeyID: "a", SecretAccessKey: "s", RetryMaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	var checked []string
	b, err := OpenBucket(t.Context(), c, "docs", &Options{TypeByKey: true, Check: func(_ context.Context, _ string, o Object) error {
		checked = append(checked, o.ETag)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := core.WithCaller(t.Context(), core.Caller{Principal: "alice"})
	base, _ := core.NewResourceTarget("doc://1/object", "object", []byte(`{"row":"1"}`))
	read := func(ref core.ObjectRef) (string, error) {
		tg, err := base.WithObject(ref)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := b.Read(ctx, whole(tg))
		return pl.Text(), err
	}

	if got, err := read(core.ObjectRef{Source: "files", Key: "k.txt", Size: -1}); err != nil || got != "older" {
		t.Fatalf("pinned read: %q %v", got, err)
	}
	if reqs := p.take(); strings.Join(reqs, ",") != `HEAD,GET "old"` || strings.Join(checked, ",") != `"old"` {
		t.Errorf("pinned read sent %q, checked %q; want a HEAD, then a GET If-Match the HEAD's ETag, checked with it", reqs, checked)
	}

	p.mu.Lock()
	p.replace = true
	p.mu.Unlock()
	if got, err := read(core.ObjectRef{Source: "files", Key: "k.txt", Size: -1}); !errors.Is(err, ErrChanged) {
		t.Errorf("an object replaced after its HEAD: %q %v, want ErrChanged", got, err)
	}
	if reqs := p.take(); strings.Join(reqs, ",") != `HEAD,GET "old"` {
		t.Errorf("replaced read sent %q", reqs)
	}

	if _, err := read(core.ObjectRef{Source: "files", Key: "gone", Size: -1}); core.KindOf(err) != core.FailureUnavailable {
		t.Errorf("a missing object: %v, want unavailable", err)
	}
	if reqs := p.take(); strings.Join(reqs, ",") != "HEAD" {
		t.Errorf("a missing object sent %q, want its HEAD alone", reqs)
	}

	if got, err := read(core.ObjectRef{Source: "files", Key: "k.txt", Size: -1, Unpinned: true}); err != nil || got != "newer" {
		t.Errorf("unpinned read: %q %v", got, err)
	}
	if reqs := p.take(); strings.Join(reqs, ",") != "GET" {
		t.Errorf("unpinned read sent %q, want one GET without If-Match", reqs)
	}

	if got, err := read(core.ObjectRef{Source: "files", Key: "k.txt", ETag: `"new"`, Size: -1}); err != nil || got != "newer" {
		t.Errorf("a read pinned by its ref: %q %v", got, err)
	}
	if reqs := p.take(); strings.Join(reqs, ",") != `GET "new"` {
		t.Errorf("a read pinned by its ref sent %q, want one GET If-Match", reqs)
	}
}
