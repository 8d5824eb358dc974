package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/internal/httpguard"
	"go.phpboyscout.uk/mcp/resources/internal/linetransport"
	"go.phpboyscout.uk/mcp/resources/internal/serverproc"
)

// The tests in this file attack the built binary as a hostile client
// would, on loopback.

const (
	testProtocol = "2025-11-25"
	testCursor   = "a-cursor-key-of-at-least-32-bytes-for-tests"
)

func initializeBody(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"initialize","params":{"protocolVersion":"` + testProtocol +
		`","capabilities":{},"clientInfo":{"name":"hostile","version":"1"}}}`
}

func readBody(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"resources/read","params":{"uri":"demo://readme"}}`
}

// methodBodies are one request (or notification) of every method a client
// can send, with ID standing for its id.
var methodBodies = []string{
	initializeBody("ID"),
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":ID,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":ID,"method":"resources/list"}`,
	`{"jsonrpc":"2.0","id":ID,"method":"resources/list","params":{"cursor":"not-a-cursor"}}`,
	`{"jsonrpc":"2.0","id":ID,"method":"resources/templates/list","params":{}}`,
	readBody("ID"),
	`{"jsonrpc":"2.0","id":ID,"method":"resources/read","params":{"uri":"demo://notes/%2e%2e"}}`,
	`{"jsonrpc":"2.0","id":ID,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"demo://notes/{id}"},"argument":{"name":"id","value":""}}}`,
	`{"jsonrpc":"2.0","id":ID,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":""}}}`,
	`{"jsonrpc":"2.0","id":ID,"method":"resources/subscribe","params":{"uri":"demo://readme"}}`,
	`{"jsonrpc":"2.0","id":ID,"method":"resources/unsubscribe","params":{"uri":"demo://readme"}}`,
	`{"jsonrpc":"2.0","id":ID,"method":"logging/setLevel","params":{"level":"debug"}}`,
	`{"jsonrpc":"2.0","id":ID,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":ID,"method":"prompts/list"}`,
	`{"jsonrpc":"2.0","id":ID,"method":"no/such/method"}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
}

// hostileBodies are 100 single-line bodies a parser may choke on.
func hostileBodies() []string {
	read := readBody("1")
	var out []string
	// Duplicate keys.
	out = append(out,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"resources/read","params":{"uri":"demo://readme"}}`,
		`{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","method":"initialize"}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"demo://readme","uri":"demo://hidden"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"demo://readme"},"params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":1,"ID":2,"Method":"ping","method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","type":"ref/resource","uri":"demo://notes/{id}"},"argument":{"name":"id","value":""}}}`,
		`{"jsonrpc":"2.0","id":"a","id":"b","result":{},"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/list","params":{"cursor":"a","cursor":"b"}}`,
	)
	// Trailing bytes.
	for _, tail := range []string{" x", "{}", "]", "\x00", ",", read, "}", " null", "\"", "\t\t1"} {
		out = append(out, read+tail)
	}
	// Huge and odd ids.
	for _, id := range []string{"1e400", "-1e400", "123456789012345678901234567890", "1.5", `"` + strings.Repeat("i", 100000) + `"`,
		"true", "[]", "{}", "9007199254740993", "-0"} {
		out = append(out, `{"jsonrpc":"2.0","id":`+id+`,"method":"resources/read","params":{"uri":"demo://readme"}}`)
	}
	// Invalid UTF-8 and hostile escapes.
	for _, s := range []string{"\xff", "\xc0\xaf", "\xed\xa0\x80", `\ud800`, `\udfff\ud800`, "\xf4\x90\x80\x80", "\x80\x80", `\u0000`, "\xfe\xff", "\xe2\x82"} {
		out = append(out,
			`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"demo://`+s+`"}}`,
		)
	}
	out = append(out,
		`{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}`,
		`{"jsonrpc":"2.0","id":"\xff","method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"\xff":1}}`,
		"\xef\xbb\xbf"+read,
	)
	// Deep nesting.
	for _, n := range []int{100, 1000, 10000, 100000} {
		out = append(out,
			`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"demo://readme","x":`+strings.Repeat("[", n)+strings.Repeat("]", n)+`}}`,
			`{"jsonrpc":"2.0","id":1,"method":"ping","params":`+strings.Repeat(`{"a":`, n)+"1"+strings.Repeat("}", n)+`}`,
		)
	}
	out = append(out, strings.Repeat("[", 100000), `{"jsonrpc":"2.0","id":`+strings.Repeat("[", 5000)+strings.Repeat("]", 5000)+`,"method":"ping"}`)
	// Wrong shapes.
	out = append(out,
		`null`, `42`, `"resources/read"`, `true`, `{}`, `[]`, `[`+read+`]`, `[1,2,3]`, `{"jsonrpc":"2.0"}`, `{"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":"2.0","id":1,"method":42}`, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":"demo://readme"}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":["demo://readme"]}`, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":42}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read"}`, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, `{"jsonrpc":"2.0","id":99999,"result":{"x":1}}`,
		`{"jsonrpc":"2.0","id":99999,"error":{"code":"x"}}`, `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/resource"},"argument":{"name":"id"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"demo://hidden"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"`+strings.Repeat("a", 1<<20)+`"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"`+strings.Repeat("m", 100000)+`"}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"demo://readme"`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"demo://readme"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"server/discover"}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"demo://readme","_meta":{"progressToken":{"deep":[[[[1]]]]}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"demo://readme"},"extra":`+strings.Repeat(`"x",`, 1000)+`"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/templates/list","params":{"cursor":"`+strings.Repeat("A", 5000)+`"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/list","params":{"cursor":"\u0000\u001f\u007f"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"demo://notes/{id}"},"argument":{"name":"id","value":"`+strings.Repeat("9", 100000)+`"},"context":{"arguments":{"\u0000":"\u0000"}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"nonsense"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"notifications/initialized","params":[]}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"x":[1]}}}`,
		`{"jsonrpc":"2.0","id":null,"method":"resources/read","params":{"uri":"demo://readme"}}`,
		`{"jsonrpc":"2.0","id":"","method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+strings.Repeat("9", 10000)+`","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":"x"},"clientInfo":null}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"demo://notes/%2e%2e"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/unsubscribe","params":{"uri":"never-subscribed://x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"demo://readme"}}`+"\r",
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"demo://readme"}} `+strings.Repeat(" ", 10000),
		`{"jsonrpc":"2.0","id":-1e-400,"method":"ping"}`,
	)
	return out
}

// stdioServer is the binary serving stdio, with its answers by id.
type stdioServer struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *wireTap
	done   chan struct{}

	mu      sync.Mutex
	answers map[string]json.RawMessage // id -> the whole answer
	nullIDs int                        // answers with a null id
	lines   int
	arrived chan struct{}
	// patience bounds each await; zero means 10 s.
	patience time.Duration
}

func startStdio(t *testing.T, args ...string) *stdioServer {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"serve"}, args...)...)
	cmd.Env = serverproc.Env()
	s := &stdioServer{t: t, cmd: cmd, stderr: &wireTap{}, done: make(chan struct{}), answers: map[string]json.RawMessage{}, arrived: make(chan struct{}, 1)}
	cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r := bufio.NewReaderSize(out, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				var m struct{ ID json.RawMessage }
				_ = json.Unmarshal(line, &m)
				s.mu.Lock()
				s.lines++
				if id := string(m.ID); id == "" || id == "null" {
					s.nullIDs++
				} else {
					s.answers[id] = bytes.Clone(line)
				}
				s.mu.Unlock()
				select {
				case s.arrived <- struct{}{}:
				default:
				}
			}
			if err != nil {
				break
			}
		}
		_ = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		s.stdin.Close()
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

func (s *stdioServer) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		s.t.Fatalf("writing to the server: %v (exited: %v)\nstderr:\n%s", err, s.exited(), s.stderr.String())
	}
}

func (s *stdioServer) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// await waits for the answer to id.
func (s *stdioServer) await(id string) json.RawMessage {
	s.t.Helper()
	patience := s.patience
	if patience == 0 {
		patience = 10 * time.Second
	}
	deadline := time.After(patience)
	for {
		s.mu.Lock()
		a, ok := s.answers[id]
		s.mu.Unlock()
		if ok {
			return a
		}
		select {
		case <-s.arrived:
		case <-s.done:
			s.t.Fatalf("the server exited while %s was unanswered\nstderr:\n%s", id, s.stderr.String())
		case <-deadline:
			s.t.Fatalf("no answer to %s within %v", id, patience)
		}
	}
}

// readSucceeds checks that a normal read answers with the readme.
func readSucceeds(t *testing.T, answer []byte, after string) {
	t.Helper()
	var m struct {
		Result struct {
			Contents []struct{ URI, Text string }
		}
		Error json.RawMessage
	}
	if err := json.Unmarshal(answer, &m); err != nil || len(m.Result.Contents) != 1 || m.Result.Contents[0].URI != demoReadme {
		t.Fatalf("a normal read after %.80q answered %.300s", after, answer)
	}
}

func TestStdioSurvivesEveryMethodPairAndHostileBodies(t *testing.T) {
	s := startStdio(t)
	s.send(initializeBody("0"))
	s.await("0")
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	n := 0
	id := func() string { n++; return strconv.Itoa(n) }
	start := time.Now()
	const rounds = 1000
	for r := range rounds {
		a := methodBodies[r%len(methodBodies)]
		b := methodBodies[(r/len(methodBodies))%len(methodBodies)]
		s.send("[" + strings.ReplaceAll(a, "ID", id()) + "," + strings.ReplaceAll(b, "ID", id()) + "]")
		s.send(strings.ReplaceAll(a, "ID", id()))
		s.send(strings.ReplaceAll(b, "ID", id()))
		if r%100 == 99 {
			probe := `"probe-` + strconv.Itoa(r) + `"`
			s.send(readBody(probe))
			readSucceeds(t, s.await(probe), "a round of method pairs")
		}
	}
	roundsTook := time.Since(start)
	s.mu.Lock()
	batches := s.nullIDs
	s.mu.Unlock()
	if batches < rounds {
		t.Errorf("%d answers with a null id for %d batches: want every batch refused", batches, rounds)
	}
	for i, body := range hostileBodies() {
		s.send(body)
		probe := `"after-` + strconv.Itoa(i) + `"`
		s.send(readBody(probe))
		readSucceeds(t, s.await(probe), body)
	}
	if s.exited() {
		t.Fatalf("the server exited\nstderr:\n%s", s.stderr.String())
	}
	if strings.Contains(s.stderr.String(), "panic") || strings.Contains(s.stderr.String(), "goroutine ") {
		t.Errorf("stderr shows a panic:\n%s", s.stderr.String())
	}
	s.mu.Lock()
	t.Logf("%d rounds of %d method pairs (batch and sequence) in %v, %d hostile bodies in %v: %d lines answered, %d with a null id",
		rounds, len(methodBodies)*len(methodBodies), roundsTook.Round(time.Millisecond), len(hostileBodies()),
		(time.Since(start) - roundsTook).Round(time.Millisecond), s.lines, s.nullIDs)
	s.mu.Unlock()
}

// httpServer is the binary serving streamable HTTP.
type httpServer struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string
	ops    string // the operator endpoints' address
	stderr *wireTap
	done   chan struct{}
	hc     *http.Client
}

var addrLine = regexp.MustCompile(`msg="serving MCP over streamable HTTP" addr=(\S+)(?:.* metrics_addr=(\S+))?`)

func startHTTP(t *testing.T, args ...string) *httpServer {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"serve", "--http=127.0.0.1:0"}, args...)...)
	cmd.Env = serverproc.Env()
	s := &httpServer{t: t, cmd: cmd, stderr: &wireTap{}, done: make(chan struct{}),
		hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: 30 * time.Second}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.done
		if t.Failed() {
			t.Logf("server stderr (last 4 KiB):\n%s", tail(s.stderr.String(), 4096))
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := addrLine.FindStringSubmatch(s.stderr.String()); m != nil {
			s.addr, s.ops = m[1], m[2]
			if s.ops == "" {
				s.ops = s.addr
			}
			return s
		}
		if s.exited() {
			t.Fatalf("the server exited before serving:\n%s", s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the server did not start:\n%s", s.stderr.String())
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func (s *httpServer) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// post sends body to /mcp and returns the status, the session id header
// and the JSON-RPC messages of the answer (SSE data lines or a JSON body).
func (s *httpServer) post(body, session string, header ...string) (int, string, []json.RawMessage) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+s.addr+"/mcp", strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set(httpguard.SessionHeader, session)
		req.Header.Set("MCP-Protocol-Version", testProtocol)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		s.t.Fatalf("POST: %v (exited: %v)", err, s.exited())
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var msgs []json.RawMessage
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, l := range strings.Split(string(raw), "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok {
				msgs = append(msgs, json.RawMessage(d))
			}
		}
	} else if len(bytes.TrimSpace(raw)) > 0 {
		msgs = append(msgs, json.RawMessage(raw))
	}
	return resp.StatusCode, resp.Header.Get(httpguard.SessionHeader), msgs
}

// open initializes a session and returns its id.
func (s *httpServer) open() string {
	s.t.Helper()
	code, sid, msgs := s.post(initializeBody("0"), "")
	if code != http.StatusOK || sid == "" || len(msgs) != 1 {
		s.t.Fatalf("initialize: %d, session %q, %s", code, sid, msgs)
	}
	s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid)
	return sid
}

func (s *httpServer) readSucceeds(session, after string) {
	s.t.Helper()
	code, _, msgs := s.post(readBody(`"probe"`), session)
	if code != http.StatusOK || len(msgs) != 1 {
		s.t.Fatalf("a normal read after %.80q: %d %s", after, code, msgs)
	}
	readSucceeds(s.t, msgs[0], after)
}

func TestHTTPSurvivesEveryMethodPairAndHostileBodies(t *testing.T) {
	for _, mode := range []struct {
		name string
		args []string
	}{
		{"stateful", nil},
		{"stateless", []string{"--stateless", "--cursor-key=" + testCursor}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel() // one server each: the two modes overlap
			s := startHTTP(t, mode.args...)
			sid := ""
			if mode.name == "stateful" {
				sid = s.open()
			}
			start := time.Now()
			const rounds = 1000
			refused := 0
			for r := range rounds {
				a := strings.ReplaceAll(methodBodies[r%len(methodBodies)], "ID", "1")
				b := strings.ReplaceAll(methodBodies[(r/len(methodBodies))%len(methodBodies)], "ID", "2")
				// A batch, with the header that would make the SDK take it
				// and without.
				code, _, _ := s.post("["+a+","+b+"]", sid, "MCP-Protocol-Version", "2025-03-26")
				if code == http.StatusBadRequest {
					refused++
				}
				s.post(a, sid)
				s.post(b, sid)
				if r%100 == 99 {
					s.readSucceeds(sid, "a round of method pairs")
				}
			}
			if refused != rounds {
				t.Errorf("%d of %d batches refused", refused, rounds)
			}
			for _, body := range hostileBodies() {
				s.post(body, sid)
				s.readSucceeds(sid, body)
			}
			if s.exited() || strings.Contains(s.stderr.String(), "panic") {
				t.Fatalf("the server exited or panicked")
			}
			t.Logf("%d rounds of %d method pairs and %d hostile bodies in %v; every batch refused",
				rounds, len(methodBodies)*len(methodBodies), len(hostileBodies()), time.Since(start).Round(time.Millisecond))
		})
	}
}

// A duplicate initialize, the request that used to end the process, in
// each form the issue reports: over stdio, in a stateful session, and as a
// stateless batch (refused before the SDK sees it).
func TestADuplicateInitializeIsAnErrorAndTheServerGoesOn(t *testing.T) {
	s := startStdio(t)
	s.send(initializeBody("1"))
	s.await("1")
	s.send(initializeBody("2"))
	if a := string(s.await("2")); !strings.Contains(a, `"code":-32600`) {
		t.Errorf("stdio: a second initialize answered %s, want -32600", a)
	}
	s.send(readBody("3"))
	readSucceeds(t, s.await("3"), "a second initialize")

	h := startHTTP(t)
	sid := h.open()
	code, _, msgs := h.post(initializeBody("5"), sid)
	if code != http.StatusOK || len(msgs) != 1 || !strings.Contains(string(msgs[0]), `"code":-32600`) {
		t.Errorf("stateful: a second initialize answered %d %s, want a -32600 error", code, msgs)
	}
	h.readSucceeds(sid, "a second initialize")

	sl := startHTTP(t, "--stateless", "--cursor-key="+testCursor)
	code, _, msgs = sl.post("["+initializeBody("1")+","+initializeBody("2")+"]", "")
	if code != http.StatusBadRequest || len(msgs) != 1 || !strings.Contains(string(msgs[0]), httpguard.BatchMessage) {
		t.Errorf("stateless [initialize, initialize]: %d %s, want 400 and %q", code, msgs, httpguard.BatchMessage)
	}
	sl.readSucceeds("", "a batch of two initializes")
	for _, srv := range []interface{ exited() bool }{s, h, sl} {
		if srv.exited() {
			t.Fatal("a server exited")
		}
	}
}

func TestStdioBatchesAndBadLinesAreAnsweredWithTheirCodes(t *testing.T) {
	s := startStdio(t)
	s.send(initializeBody("1"))
	s.await("1")
	before := func() int { s.mu.Lock(); defer s.mu.Unlock(); return s.nullIDs }
	for line, want := range map[string]string{
		"{not json":                       `"code":-32700`,
		"[" + readBody("7") + "]":         linetransport.BatchMessage,
		`{"jsonrpc":"2.0","id":{},"x":1}`: `"code":-32600`,
	} {
		n := before()
		s.send(line)
		s.send(readBody(`"after"`))
		readSucceeds(t, s.await(`"after"`), line)
		if before() != n+1 {
			t.Fatalf("%q: no answer with a null id", line)
		}
		s.mu.Lock()
		delete(s.answers, `"after"`)
		s.mu.Unlock()
		_ = want
	}
}

// metric returns the value of an unlabelled metric from /metrics.
func (s *httpServer) metric(name string) float64 {
	s.t.Helper()
	resp, err := s.hc.Get("http://" + s.ops + "/metrics")
	if err != nil {
		s.t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				s.t.Fatal(err)
			}
			return f
		}
	}
	s.t.Fatalf("no metric %s", name)
	return 0
}

func TestAbandonedSessionsAreReapedAndTheSessionCapRefusesTheNext(t *testing.T) {
	t.Parallel() // mostly waits for the idle timeout
	// The idle timeout must outlast the opening of every session (about
	// 1.6 s on this machine when idle, up to 3.8 s during the whole unit
	// run) for the peak to hold them all; an attempt on a machine too busy
	// for that proves nothing and is repeated with twice the timeout.
	const sessions = 2000
	for idle := 5 * time.Second; !abandonSessions(t, sessions, idle); idle *= 2 {
		if idle >= 32*time.Second {
			t.Fatalf("opening %d sessions took longer than even a %v idle timeout", sessions, idle)
		}
		t.Logf("opening %d sessions took longer than the %v idle timeout: repeated with %v", sessions, idle, 2*idle)
	}
}

// abandonSessions opens sessions on a server whose idle timeout is idle,
// each with an initialize and nothing after it, checks the peak and that
// the next session is refused, then that all of them are reaped with their
// goroutines and the cap has room again. It returns false, having checked
// nothing, when the opening and the checks of the peak took idle or longer:
// the first sessions may then have been reaped before the peak was read.
func abandonSessions(t *testing.T, sessions int, idle time.Duration) bool {
	t.Helper()
	s := startHTTP(t, "--session-timeout="+idle.String(), "--max-sessions="+strconv.Itoa(sessions),
		"--max-sessions-per-principal="+strconv.Itoa(sessions))
	baseGoroutines, baseSessions, baseRSS := s.metric("go_goroutines"), s.metric("mcpres_sessions_active"), s.metric("process_resident_memory_bytes")
	start := time.Now()
	var wg sync.WaitGroup
	ids := make(chan string, sessions)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < sessions; i += 4 {
				code, sid, _ := s.post(initializeBody("1"), "")
				if code == http.StatusOK && sid != "" {
					ids <- sid
				}
			}
		}()
	}
	wg.Wait()
	close(ids)
	opened := len(ids)
	openTime := time.Since(start)
	peakGoroutines, peakSessions, peakRSS := s.metric("go_goroutines"), s.metric("mcpres_sessions_active"), s.metric("process_resident_memory_bytes")
	code, sid, msgs := s.post(initializeBody("1"), "")
	// Every session's idle time started after start: if this is still
	// within idle, none can have been reaped yet.
	if time.Since(start) >= idle {
		return false
	}
	if opened != sessions {
		t.Fatalf("opened %d sessions, want %d", opened, sessions)
	}
	if code != http.StatusTooManyRequests || sid != "" || len(msgs) != 1 || !strings.Contains(string(msgs[0]), httpguard.SessionLimitMessage) {
		t.Errorf("session %d: %d %q %s, want 429 and %q", sessions+1, code, sid, msgs, httpguard.SessionLimitMessage)
	}
	// Abandoned: no request after initialize. They go after the idle
	// timeout, and with them their goroutines.
	deadline := time.Now().Add(idle + 10*time.Second)
	var nowSessions, nowGoroutines float64
	for time.Now().Before(deadline) {
		nowSessions, nowGoroutines = s.metric("mcpres_sessions_active"), s.metric("go_goroutines")
		if nowSessions == baseSessions && nowGoroutines <= baseGoroutines+5 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	reaped := time.Since(start) - openTime
	t.Logf("baseline %v goroutines, %v sessions, %.1f MiB resident; %d sessions opened in %v: %v goroutines, %v sessions, %.1f MiB; %v later (idle timeout %v): %v goroutines, %v sessions",
		baseGoroutines, baseSessions, baseRSS/(1<<20), opened, openTime.Round(time.Millisecond), peakGoroutines, peakSessions, peakRSS/(1<<20),
		reaped.Round(time.Millisecond), idle, nowGoroutines, nowSessions)
	if nowSessions != baseSessions || nowGoroutines > baseGoroutines+5 {
		t.Fatalf("after %v: %v sessions and %v goroutines, want the baseline %v and %v", reaped, nowSessions, nowGoroutines, baseSessions, baseGoroutines)
	}
	if peakSessions != float64(sessions) {
		t.Errorf("%v sessions at the peak, want %d", peakSessions, sessions)
	}
	// Once reaped, the cap has room again.
	if code, sid, _ := s.post(initializeBody("1"), ""); code != http.StatusOK || sid == "" {
		t.Errorf("a new session after the reaping: %d", code)
	}
	return true
}

// tokensFor writes a tokens file mapping "<principal>-token" to each
// principal.
func tokensFor(t *testing.T, principals ...string) string {
	t.Helper()
	var b strings.Builder
	for _, p := range principals {
		fmt.Fprintf(&b, "%s %s\n", p, hashToken(p+"-token"))
	}
	path := t.TempDir() + "/tokens"
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOnePrincipalCannotTakeAnothersSessionsOrSubscriptions(t *testing.T) {
	s := startHTTP(t, "--tokens="+tokensFor(t, "demo", "guest"), "--max-sessions=10", "--max-sessions-per-principal=3",
		"--max-subscriptions-per-principal=2")
	auth := func(p string) []string { return []string{"Authorization", "Bearer " + p + "-token"} }
	openAs := func(p string) (int, string, []json.RawMessage) { return s.post(initializeBody("1"), "", auth(p)...) }
	var demo []string
	for range 3 {
		code, sid, _ := openAs("demo")
		if code != http.StatusOK {
			t.Fatalf("demo's session: %d", code)
		}
		demo = append(demo, sid)
	}
	code, _, msgs := openAs("demo")
	if code != http.StatusTooManyRequests || len(msgs) != 1 || !strings.Contains(string(msgs[0]), httpguard.PrincipalLimitMessage) {
		t.Errorf("demo's fourth session: %d %s, want 429 and %q", code, msgs, httpguard.PrincipalLimitMessage)
	}
	code, guest, _ := openAs("guest")
	if code != http.StatusOK {
		t.Fatalf("guest is refused a session while demo is at its cap: %d", code)
	}

	subscribe := func(sid, p, uri string) string {
		t.Helper()
		s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid, auth(p)...)
		_, _, msgs := s.post(`{"jsonrpc":"2.0","id":9,"method":"resources/subscribe","params":{"uri":"`+uri+`"}}`, sid, auth(p)...)
		if len(msgs) != 1 {
			t.Fatalf("subscribe: %s", msgs)
		}
		return string(msgs[0])
	}
	// demo spreads its subscriptions over its sessions; the per-session cap
	// alone would not stop it.
	for i, uri := range []string{demoReadme, demoLogo} {
		if a := subscribe(demo[i], "demo", uri); strings.Contains(a, `"error"`) {
			t.Fatalf("demo subscribes to %s: %s", uri, a)
		}
	}
	if a := subscribe(demo[2], "demo", demoEmpty); !strings.Contains(a, "too many resource subscriptions") {
		t.Errorf("demo's third subscription: %s, want the subscription limit", a)
	}
	if a := subscribe(guest, "guest", demoReadme); strings.Contains(a, `"error"`) {
		t.Errorf("guest is refused a subscription while demo is at its cap: %s", a)
	}
}

func TestSlowBodiesAndIdleConnectionsAreDisconnectedInTime(t *testing.T) {
	t.Parallel() // mostly waits for the timeouts
	const timeout = time.Second
	s := startHTTP(t, "--http-read-timeout="+timeout.String(), "--http-idle-timeout="+timeout.String())
	dial := func() *rawConn {
		t.Helper()
		c, err := dialRaw(s.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	// A body sent at one byte every 100 ms.
	slow := dial()
	start := time.Now()
	fmt.Fprintf(slow, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n", s.addr)
	body := strings.Repeat(" ", 1000)
	closedAfter := time.Duration(0)
	for i := range body {
		if _, err := slow.Write([]byte{body[i]}); err != nil {
			closedAfter = time.Since(start)
			break
		}
		if slow.closed() {
			closedAfter = time.Since(start)
			break
		}
		time.Sleep(100 * time.Millisecond)
		if time.Since(start) > 10*timeout {
			break
		}
	}
	// Without the read timeout the body would take 100 s; the bound leaves
	// a busy machine room to notice the close.
	if closedAfter == 0 || closedAfter > timeout+4*time.Second {
		t.Errorf("a slow body: disconnected after %v, want within %v + 4 s", closedAfter, timeout)
	}
	t.Logf("slow body (1 byte per 100 ms, --http-read-timeout %v): disconnected after %v", timeout, closedAfter.Round(time.Millisecond))

	// A session's SSE stream is not a slow request: it outlives the read
	// timeout, which bounds only the receiving of a request.
	sid := s.open()
	req, _ := http.NewRequest(http.MethodGet, "http://"+s.addr+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(httpguard.SessionHeader, sid)
	req.Header.Set("MCP-Protocol-Version", testProtocol)
	resp, err := (&http.Client{}).Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the session's stream: %v %v", err, resp)
	}
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); ended <- err }()
	select {
	case err := <-ended:
		t.Errorf("a session's SSE stream ended (%v) within %v (--http-read-timeout %v)", err, 2*timeout+500*time.Millisecond, timeout)
	case <-time.After(2*timeout + 500*time.Millisecond):
	}
	resp.Body.Close()

	// Idle keep-alive connections, after one request each.
	const idleConns = 20
	conns := make([]*rawConn, idleConns)
	for i := range conns {
		conns[i] = dial()
		fmt.Fprintf(conns[i], "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", s.addr)
	}
	start = time.Now()
	open := idleConns
	for time.Since(start) < 3*timeout && open > 0 {
		open = 0
		for _, c := range conns {
			if !c.closed() {
				open++
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if open != 0 {
		t.Errorf("%d of %d idle keep-alive connections still open %v after their request", open, idleConns, time.Since(start))
	}
	t.Logf("%d idle keep-alive connections (--http-idle-timeout %v): all closed within %v", idleConns, timeout, time.Since(start).Round(time.Millisecond))
}

func TestA40000RequestBatchIsRefusedWithASmallMemoryRise(t *testing.T) {
	s := startHTTP(t)
	sid := s.open()
	var b strings.Builder
	b.WriteByte('[')
	for i := range 40000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(readBody(strconv.Itoa(i)))
	}
	b.WriteByte(']')
	batch := b.String()
	before, goroutinesBefore := s.metric("process_resident_memory_bytes"), s.metric("go_goroutines")
	// Without MCP-Protocol-Version, which is how the SDK would take it.
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.addr+"/mcp", strings.NewReader(batch))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(httpguard.SessionHeader, sid)
	resp, err := s.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	after, goroutinesAfter := s.metric("process_resident_memory_bytes"), s.metric("go_goroutines")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(answer), httpguard.BatchMessage) {
		t.Fatalf("a %d-byte batch of 40,000 reads: %d %s", len(batch), resp.StatusCode, answer)
	}
	rise := after - before
	t.Logf("a %.1f MiB batch of 40,000 reads: refused (400); resident memory %.1f -> %.1f MiB (%+.1f MiB), goroutines %v -> %v",
		float64(len(batch))/(1<<20), before/(1<<20), after/(1<<20), rise/(1<<20), goroutinesBefore, goroutinesAfter)
	if rise > 16<<20 || goroutinesAfter > goroutinesBefore+5 {
		t.Errorf("memory rose %.1f MiB, goroutines %v -> %v: want at most 16 MiB and no goroutine per request", rise/(1<<20), goroutinesBefore, goroutinesAfter)
	}
	// A body over the limit is refused before it is read whole.
	code, _, msgs := s.post("["+strings.Repeat(readBody("1")+",", 80000)+readBody("1")+"]", sid)
	if code != http.StatusRequestEntityTooLarge || len(msgs) != 1 || !strings.Contains(string(msgs[0]), httpguard.BodyTooLargeMessage) {
		t.Errorf("a body over --max-body-bytes: %d %s, want 413", code, msgs)
	}
	s.readSucceeds(sid, "the batches")
}

func TestOriginsAndOperatorHostsAreChecked(t *testing.T) {
	s := startHTTP(t, "--allowed-origins=https://app.example", "--metrics-addr=127.0.0.1:0")
	for origin, want := range map[string]int{
		"":                       http.StatusOK,
		"http://evil.example":    http.StatusForbidden,
		"http://localhost:3000":  http.StatusOK,
		"http://127.0.0.1:8080":  http.StatusOK,
		"https://app.example":    http.StatusOK,
		"https://app.example.ev": http.StatusForbidden,
		"null":                   http.StatusForbidden,
	} {
		var hdr []string
		if origin != "" {
			hdr = []string{"Origin", origin}
		}
		code, _, msgs := s.post(initializeBody("1"), "", hdr...)
		if code != want {
			t.Errorf("Origin %q: %d %s, want %d", origin, code, msgs, want)
		}
	}
	if s.ops == s.addr {
		t.Fatalf("--metrics-addr did not open its own listener")
	}
	get := func(addr, path, host string) int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		if host != "" {
			req.Host = host
		}
		resp, err := s.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, p := range []string{"/metrics", "/healthz", "/readyz"} {
		if c := get(s.ops, p, ""); c != http.StatusOK {
			t.Errorf("%s on --metrics-addr: %d", p, c)
		}
		if c := get(s.ops, p, "evil.example"); c != http.StatusForbidden {
			t.Errorf("%s on --metrics-addr with Host evil.example: %d, want 403", p, c)
		}
		if c := get(s.addr, p, ""); c == http.StatusOK {
			t.Errorf("%s is still served on the MCP listener", p)
		}
	}
}

// The demo's own comment: guest sees only the readme.
func TestStdioGuestSeesOnlyTheReadme(t *testing.T) {
	s := startStdio(t, "--principal=guest")
	s.send(initializeBody("1"))
	s.await("1")
	s.send(`{"jsonrpc":"2.0","id":2,"method":"resources/list"}`)
	var list struct {
		Result struct{ Resources []struct{ URI string } }
	}
	if err := json.Unmarshal(s.await("2"), &list); err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range list.Result.Resources {
		uris = append(uris, r.URI)
	}
	if strings.Join(uris, ",") != demoReadme {
		t.Errorf("guest lists %q, want only %s", uris, demoReadme)
	}
	s.send(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"demo://logo.png"}}`)
	if a := string(s.await("3")); !strings.Contains(a, `"error"`) {
		t.Errorf("guest reads the logo: %.200s", a)
	}
}

// rawConn is a TCP connection whose answers are read and dropped in the
// background, noting when the server closes it.
type rawConn struct {
	net.Conn
	gone chan struct{}
}

func dialRaw(addr string) (*rawConn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	r := &rawConn{Conn: c, gone: make(chan struct{})}
	go func() {
		_, _ = io.Copy(io.Discard, c)
		close(r.gone)
	}()
	return r, nil
}

func (r *rawConn) closed() bool {
	select {
	case <-r.gone:
		return true
	default:
		return false
	}
}

// Each bound of the hostile-client flags must be positive: the first that
// is not is named with its value, a duration as a duration.
func TestGuardBoundsMustBePositive(t *testing.T) {
	ok := guardFlags{SessionTimeout: time.Minute, MaxSessions: 10, MaxSessionsPerPrincipal: 5, MaxSubscriptionsPerPrincipal: 5,
		MaxListensPerSession: 1, MaxListensPerPrincipal: 1, ReadTimeout: time.Second, WriteTimeout: time.Second, IdleTimeout: time.Second, MaxBodyBytes: 1}
	if err := ok.check(true); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		set  func(*guardFlags)
		want string
	}{
		{func(g *guardFlags) { g.SessionTimeout = 0 }, "--session-timeout must be positive, got 0s"},
		{func(g *guardFlags) { g.IdleTimeout = -time.Second }, "--http-idle-timeout must be positive, got -1s"},
		{func(g *guardFlags) { g.MaxSessions = 0 }, "--max-sessions must be positive, got 0"},
		{func(g *guardFlags) { g.MaxListensPerPrincipal = -3 }, "--max-listens-per-principal must be positive, got -3"},
		{func(g *guardFlags) { g.WriteTimeout, g.MaxListensPerSession = 0, 0 }, "--write-timeout must be positive, got 0s"},
		{func(g *guardFlags) { g.MaxBodyBytes = 0 }, "--max-body-bytes must be positive, got 0"},
	} {
		g := ok
		c.set(&g)
		if err := g.check(true); err == nil || err.Error() != c.want {
			t.Errorf("check = %v, want %q", err, c.want)
		}
	}
}
