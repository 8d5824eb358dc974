package integration

import (
	"bytes"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// pinnedFile serves each acme ticket's attachment, which the attachments
// table records by key alone (no ETag, no version id), as an object item:
// once with the default, every object read pinned, and once with
// unpinned: true.
const pinnedFile = `version: 1
sources:
  desk:
    postgres:
      url: ${DESK_URL}
      role: desk_reader
  files:
    s3:
      bucket: ${DESK_BUCKET}
      endpoint: ${DESK_S3}
      path_style: true
      access_key: ${S3_ACCESS_KEY}
      secret_key: ${S3_SECRET_KEY}
policy: database
resources:
  pinned:
    template: ticket://pinned/{org}/{id}
    source: desk
    plan: |
      SELECT a.s3_key AS key, 1 AS version, 'text/plain' AS mime, a.s3_key AS object_key
      FROM attachments a WHERE a.org = $org AND a.ticket::text = $id
    object:
      source: files
  loose:
    template: ticket://loose/{org}/{id}
    source: desk
    plan: |
      SELECT a.s3_key AS key, 1 AS version, 'text/plain' AS mime, a.s3_key AS object_key
      FROM attachments a WHERE a.org = $org AND a.ticket::text = $id
    object:
      source: files
      unpinned: true
`

// swapProxy is a loopback proxy in front of S3 that records the head of
// every request the server sends and, when armed, replaces the object at
// key with the next bytes just before it forwards the next GET: what an
// object replaced between the pinning HEAD and the GET looks like.
type swapProxy struct {
	ln    net.Listener
	swap  func() // replaces the object, straight to S3
	armed atomic.Bool
	mu    sync.Mutex
	reqs  []string // the first line and headers of each request, lowercased
}

func newSwapProxy(t *testing.T, endpoint string, swap func()) *swapProxy {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &swapProxy{swap: swap}
	p.ln = proxyTo(t, u.Host, nil, func(c, up net.Conn) (func([]byte), func([]byte), bool) { return p.sent, nil, true })
	return p
}

func (p *swapProxy) sent(chunk []byte) {
	for _, m := range []string{"HEAD /", "GET /"} {
		if !bytes.HasPrefix(chunk, []byte(m)) {
			continue
		}
		head, _, _ := bytes.Cut(chunk, []byte("\r\n\r\n"))
		p.mu.Lock()
		p.reqs = append(p.reqs, strings.ToLower(string(head)))
		p.mu.Unlock()
		if m == "GET /" && p.armed.CompareAndSwap(true, false) {
			p.swap()
		}
	}
}

// since returns the requests recorded after the first n.
func (p *swapProxy) since(n int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.reqs[n:]...)
}

func (p *swapProxy) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.reqs)
}

// TestObjectOfARowWithoutETagIsReadPinned: a row that records its object
// by key alone (issue 45, defect 5). By default its read sends one HEAD,
// after the decision, and a GET If-Match the ETag that HEAD returned: an
// object replaced between the two is read_failed (retryable), never the new
// bytes, and the next read serves the new object. With unpinned: true the
// same row is read as before, one GET with no If-Match, whatever the object
// is then; check prints that resource as unpinned.
func TestObjectOfARowWithoutETagIsReadPinned(t *testing.T) {
	r := newDeskRig(t, pinnedFile)
	const key = "orgs/acme/tickets/1/screenshot.txt"
	r.attach(t, "acme", 1, key, "first")
	next := ""
	p := newSwapProxy(t, r.env.Endpoint, func() { putObject(t, r.root, r.env.Bucket, key, "text/plain", []byte(next)) })
	t.Setenv("DESK_S3", "http://"+p.ln.Addr().String())

	out := mustRun(t, "", "check", "--config", r.file)
	for _, want := range []string{"ticket://pinned/{org}/{id}\tpinned\tdesk\tobject\t", "ticket://loose/{org}/{id}\tloose\tdesk\tobject, unpinned\t"} {
		if !strings.Contains(out, want) {
			t.Errorf("check does not say %q:\n%s", want, out)
		}
	}

	s := startServer(t, "--config", r.file, "--tokens", tokensFile(t, "amy", "gus"))
	amy, gus := s.connect(t, "amy-token"), s.connect(t, "gus-token")
	read := func(uri string) (string, []string, error) {
		t.Helper()
		n := p.count()
		res, err := readAll(t, amy, uri)
		if err != nil {
			return "", p.since(n), err
		}
		if len(res.Contents) != 1 {
			t.Fatalf("%s: %d items, want 1", uri, len(res.Contents))
		}
		return res.Contents[0].Text, p.since(n), nil
	}

	// Pinned: HEAD, then GET If-Match.
	body, reqs, err := read("ticket://pinned/acme/1")
	if err != nil || body != "first" {
		t.Fatalf("pinned read: %q %v, want %q", body, err, "first")
	}
	if len(reqs) != 2 || !strings.HasPrefix(reqs[0], "head /") || !strings.HasPrefix(reqs[1], "get /") || !strings.Contains(reqs[1], "\r\nif-match: ") {
		t.Errorf("a pinned read sent %q, want a HEAD then a GET with If-Match", reqs)
	}
	// Refused by the database: no request to S3 at all (the HEAD comes
	// after the decision).
	n := p.count()
	if _, err := readAll(t, gus, "ticket://pinned/acme/1"); err == nil {
		t.Error("gus read acme's attachment")
	}
	if got := p.since(n); len(got) != 0 {
		t.Errorf("a refused read sent %d S3 requests, want none", len(got))
	}
	// Replaced between the HEAD and the GET: read_failed, not the new bytes.
	next = "second"
	p.armed.Store(true)
	body, reqs, err = read("ticket://pinned/acme/1")
	if err == nil || !strings.Contains(err.Error(), "no resource item could be read") {
		// A changed object is read_failed: the read has no item left, and
		// is not refused as a missing one is.
		t.Errorf("an object replaced after its HEAD: %q %v, want a failed read (no item could be read)", body, err)
	}
	if len(reqs) != 2 || !strings.Contains(reqs[1], "\r\nif-match: ") {
		t.Errorf("the replaced read sent %q, want a HEAD then a GET with If-Match", reqs)
	}
	if body, _, err = read("ticket://pinned/acme/1"); err != nil || body != "second" {
		t.Errorf("the next pinned read: %q %v, want the new object", body, err)
	}

	// Unpinned: one GET, no If-Match, the object as it is when read.
	body, reqs, err = read("ticket://loose/acme/1")
	if err != nil || body != "second" {
		t.Fatalf("unpinned read: %q %v", body, err)
	}
	if len(reqs) != 1 || !strings.HasPrefix(reqs[0], "get /") || strings.Contains(reqs[0], "if-match") {
		t.Errorf("an unpinned read sent %q, want one GET without If-Match", reqs)
	}
	next = "third"
	p.armed.Store(true)
	if body, _, err = read("ticket://loose/acme/1"); err != nil || body != "third" {
		t.Errorf("an unpinned read of a replaced object: %q %v, want the object as it is (%q)", body, err, "third")
	}
}
