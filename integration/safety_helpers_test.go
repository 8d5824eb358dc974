package integration

import (
	"bytes"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/integration/harness"
)

// s3Requests is a loopback TCP proxy in front of an S3 server that counts
// the HTTP requests a client sends through it, by method, byte for byte
// transparent (so signatures hold): a client chunk that starts with a
// method and a space starts one. The server binary reaches S3 only
// through it, so its counts are every request the server made.
type s3Requests struct {
	ln          net.Listener
	heads, gets atomic.Int64
	others      atomic.Int64
}

func newS3Requests(t *testing.T, endpoint string) *s3Requests {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &s3Requests{}
	p.ln = proxyTo(t, u.Host, nil, func(c, up net.Conn) (func([]byte), func([]byte), bool) { return p.count, nil, true })
	return p
}

func (p *s3Requests) count(chunk []byte) {
	switch {
	case bytes.HasPrefix(chunk, []byte("HEAD /")):
		p.heads.Add(1)
	case bytes.HasPrefix(chunk, []byte("GET /")):
		p.gets.Add(1)
	default:
		for _, m := range []string{"PUT /", "POST /", "DELETE /", "OPTIONS /", "PATCH /"} {
			if bytes.HasPrefix(chunk, []byte(m)) {
				p.others.Add(1)
			}
		}
	}
}

// endpoint is the proxy's URL, for the server's file.
func (p *s3Requests) endpoint() string { return "http://" + p.ln.Addr().String() }

// total is every request counted so far.
func (p *s3Requests) total() int64 { return p.heads.Load() + p.gets.Load() + p.others.Load() }

// deskSchema is a help desk nobody on the team designed: orgs, agents with
// tiers, tickets with an internal flag, and attachments whose S3 keys are
// nested and hold spaces, '+', "%2F" and "%20" as text, unicode and emoji.
// An agent sees the tickets of its org, internal ones only from tier 2,
// and the attachments of the tickets it sees; the principal is the agent.
const deskSchema = `
DO $$ BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'desk_reader') THEN
		CREATE ROLE desk_reader NOLOGIN;
	END IF;
END $$;
CREATE TABLE orgs (id text PRIMARY KEY);
CREATE TABLE agents (id text PRIMARY KEY, org text NOT NULL REFERENCES orgs, tier int NOT NULL);
CREATE TABLE tickets (
	org text NOT NULL REFERENCES orgs, id int NOT NULL, subject text NOT NULL,
	internal boolean NOT NULL DEFAULT false, PRIMARY KEY (org, id));
CREATE TABLE attachments (
	org text NOT NULL, ticket int NOT NULL, s3_key text NOT NULL UNIQUE,
	FOREIGN KEY (org, ticket) REFERENCES tickets);
ALTER TABLE tickets ENABLE ROW LEVEL SECURITY;
ALTER TABLE attachments ENABLE ROW LEVEL SECURITY;
CREATE POLICY agent_tickets ON tickets FOR SELECT TO desk_reader USING (EXISTS (
	SELECT 1 FROM agents a WHERE a.id = current_setting('mcp.principal', true)
	AND a.org = tickets.org AND (NOT tickets.internal OR a.tier >= 2)));
CREATE POLICY ticket_attachments ON attachments FOR SELECT TO desk_reader USING (EXISTS (
	SELECT 1 FROM tickets t WHERE t.org = attachments.org AND t.id = attachments.ticket));
GRANT SELECT ON orgs, agents, tickets, attachments TO desk_reader;
INSERT INTO orgs VALUES ('acme'), ('globex');
INSERT INTO agents VALUES ('amy', 'acme', 1), ('alex', 'acme', 2), ('gus', 'globex', 2);
INSERT INTO tickets VALUES ('acme', 1, 'printer on fire', false), ('acme', 2, 'payroll', true), ('globex', 7, 'their ticket', false);
`

// deskFile serves the help desk: tickets under row-level security, their
// attachments as a key family nine segments deep granted by the
// attachments table, and the brand assets public.
const deskFile = `version: 1
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
  ticket:
    template: ticket://t/{org}/{id}
    source: desk
    plan: |
      SELECT t.org || '/' || t.id AS key, 1 AS version, 'text/plain' AS mime
      FROM tickets t WHERE t.org = $org AND t.id::text = $id
    body: SELECT t.subject AS body, 1 AS version FROM tickets t WHERE t.org || '/' || t.id = $key
  attachment:
    template: ticket://att/{org}/...
    source: files
    prefix: orgs/{org}/
    max_depth: 9
    grant:
      source: desk
      keys: SELECT a.s3_key AS key FROM attachments a WHERE a.org = $org AND a.s3_key = $key
  brand:
    template: brand://assets/...
    source: files
    prefix: public/brand/
    max_depth: 3
    public: true
`

// deskRig is the help desk's database and bucket, and the file that serves
// them written where the binary reads it, with S3 behind a counting proxy.
type deskRig struct {
	url   string
	admin *pgxpool.Pool
	env   harness.S3Env
	root  *s3.Client
	s3    *s3Requests
	file  string
}

func newDeskRig(t *testing.T, file string) *deskRig {
	t.Helper()
	r := &deskRig{url: harness.Postgres(t), env: harness.S3(t)}
	r.admin = newPool(t, r.url, nil)
	applySQL(t, r.admin, deskSchema)
	r.root = s3Client(t, r.env, nil)
	r.s3 = newS3Requests(t, r.env.Endpoint)
	t.Setenv("DESK_URL", r.url)
	t.Setenv("DESK_BUCKET", r.env.Bucket)
	t.Setenv("DESK_S3", r.s3.endpoint())
	t.Setenv("S3_ACCESS_KEY", r.env.AccessKey)
	t.Setenv("S3_SECRET_KEY", r.env.SecretKey)
	r.file = filepath.Join(t.TempDir(), "desk.yaml")
	if err := os.WriteFile(r.file, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

// attach stores an object at key and, when org is not "", the attachment
// row that grants it.
func (r *deskRig) attach(t *testing.T, org string, ticket int, key, body string) {
	t.Helper()
	putObject(t, r.root, r.env.Bucket, key, "text/plain", []byte(body))
	if org != "" {
		if _, err := r.admin.Exec(t.Context(), `INSERT INTO attachments VALUES ($1, $2, $3)`, org, ticket, key); err != nil {
			t.Fatal(err)
		}
	}
}

// keyURI is the URI of an object under the attachment family: the scheme
// and the key's segments after orgs/, each escaped as one path segment.
func keyURI(scheme, key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return scheme + strings.Join(segs, "/")
}

// cutProxy is a loopback TCP proxy in front of a database that counts
// what its clients send (one count per chunk) and can be cut: the listener
// and every connection closed, as when the database goes down.
type cutProxy struct {
	ln     net.Listener
	sent   atomic.Int64
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

func newCutProxy(t *testing.T, upstream string) *cutProxy {
	t.Helper()
	p := &cutProxy{}
	p.ln = proxyTo(t, upstream, func(net.Listener) { p.cut() }, func(c, up net.Conn) (func([]byte), func([]byte), bool) {
		return func([]byte) { p.sent.Add(1) }, nil, p.track(c, up)
	})
	return p
}

func (p *cutProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns = append(p.conns, cs...)
	return true
}

// cut closes the listener and every connection through the proxy.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// url is dbURL with its host and port replaced by the proxy's.
func (p *cutProxy) url(t *testing.T, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

// relay copies bytes both ways between a client connection c and its
// upstream up, each way on a goroutine of wg, showing sent each chunk the
// client sends and replied each chunk the upstream answers (nil: not
// shown) before it goes on; either side ending closes both.
func relay(wg *sync.WaitGroup, c, up net.Conn, sent, replied func([]byte)) {
	pump := func(dst, src net.Conn, seen func([]byte)) {
		defer wg.Done()
		defer dst.Close()
		defer src.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if seen != nil {
					seen(buf[:n])
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	wg.Add(2)
	go pump(up, c, sent)
	go pump(c, up, replied)
}

// proxyTo serves a loopback TCP proxy to upstream until the test ends and
// returns its listener; at the end stop (nil: closing the listener) stops
// it and the relays are waited for. For each client connection it dials
// upstream, and conn gives the connection's observers for relay, or refuses
// it (ok false: both ends closed).
func proxyTo(t *testing.T, upstream string, stop func(net.Listener), conn func(c, up net.Conn) (sent, replied func([]byte), ok bool)) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if stop == nil {
		stop = func(ln net.Listener) { ln.Close() }
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(ln); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			sent, replied, ok := conn(c, up)
			if !ok {
				c.Close()
				up.Close()
				continue
			}
			relay(&wg, c, up, sent, replied)
		}
	}()
	return ln
}
