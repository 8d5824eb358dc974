package linetransport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestClassifyAnswersEveryLineThatIsNotOneMessage(t *testing.T) {
	cases := []struct {
		line string
		code int64 // 0: a message (or, for blank lines, nothing)
		msg  bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, 0, true},
		{"  {\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\r\n", 0, true},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, 0, true},
		{"", 0, false},
		{"   \r\n", 0, false},
		{`garbage{`, jsonrpc.CodeParseError, false},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"} trailing`, jsonrpc.CodeParseError, false},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}{}`, jsonrpc.CodeParseError, false},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, jsonrpc.CodeInvalidRequest, false},
		{`[]`, jsonrpc.CodeInvalidRequest, false},
		{`42`, jsonrpc.CodeInvalidRequest, false},
		{`"ping"`, jsonrpc.CodeInvalidRequest, false},
		{`null`, jsonrpc.CodeInvalidRequest, false},
		{`{}`, jsonrpc.CodeInvalidRequest, false},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, jsonrpc.CodeInvalidRequest, false},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, jsonrpc.CodeInvalidRequest, false},
		{`{"jsonrpc":"2.0","id":1e999,"method":"ping"}`, jsonrpc.CodeInvalidRequest, false},
		{strings.Repeat("[", 100000) + strings.Repeat("]", 100000), jsonrpc.CodeParseError, false},
	}
	for _, c := range cases {
		m, code, text := Classify([]byte(c.line))
		if (m != nil) != c.msg || code != c.code || (code != 0) != (text != "") {
			t.Errorf("%.60q: message %v, code %d %q; want message %v, code %d", c.line, m != nil, code, text, c.msg, c.code)
		}
	}
	if m, code, _ := Classify(nil); m != nil || code != jsonrpc.CodeInvalidRequest {
		t.Errorf("a line that was too long: %v %d", m, code)
	}
}

// A server on the transport answers every bad line with one error line and
// keeps serving: a request after them is answered.
func TestServerOnTheTransportSurvivesBadLines(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(context.Background(), &Transport{In: inR, Out: outW, MaxMessageBytes: 1 << 10})
	}()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() map[string]any {
		t.Helper()
		select {
		case l := <-lines:
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("the server wrote %q: %v", l, err)
			}
			return m
		case <-time.After(5 * time.Second):
			t.Fatal("no answer within 5 s")
		}
		return nil
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	if m := next(); m["id"] != 1.0 || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for bad, code := range map[string]float64{
		"not json": jsonrpc.CodeParseError,
		`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`: jsonrpc.CodeInvalidRequest,
		`{"id":3}`:                jsonrpc.CodeInvalidRequest,
		strings.Repeat("x", 5000): jsonrpc.CodeInvalidRequest, // over MaxMessageBytes
	} {
		send(bad)
		m := next()
		e, _ := m["error"].(map[string]any)
		if e == nil || e["code"] != code || m["id"] != nil {
			t.Fatalf("%.20q: answered %v, want error %v with a null id", bad, m, code)
		}
	}
	send(`{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	if m := next(); m["id"] != 9.0 || m["result"] == nil {
		t.Fatalf("ping after the bad lines: %v", m)
	}
	inW.Close()
	select {
	case err := <-done:
		if err != nil && err != io.EOF {
			t.Logf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not end at EOF")
	}
}

func FuzzClassify(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `[1]`, `x`, `{"jsonrpc":"2.0","id":"a","result":1}`, "\xff", `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, code, text := Classify(line)
		switch {
		case m != nil:
			if code != 0 {
				t.Fatalf("a message and code %d", code)
			}
			if _, err := jsonrpc.EncodeMessage(m); err != nil {
				t.Fatalf("a message that does not encode: %v", err)
			}
		case code == 0:
			if len(bytes.TrimSpace(line)) != 0 {
				t.Fatalf("%q: neither a message nor an answer", line)
			}
		case code != jsonrpc.CodeParseError && code != jsonrpc.CodeInvalidRequest || text == "":
			t.Fatalf("%q: code %d %q", line, code, text)
		}
	})
}

// FuzzFraming feeds arbitrary byte streams through the connection: every
// line becomes one message, one answer or (blank) nothing, and nothing
// panics. The target answers each request it reads, as a server does, so
// the end of input is reported at once rather than after DrainTimeout (a
// request left unanswered would hold every input for 30 s, past the
// fuzzer's hang limit).
func FuzzFraming(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\nxx\n\n[1]\r\n"), 16)
	f.Add([]byte(strings.Repeat("a", 300)+"\n{}"), 8)
	f.Fuzz(func(t *testing.T, stream []byte, max int) {
		if max < 1 || max > 1<<12 {
			max = 64
		}
		var out bytes.Buffer
		c, _ := (&Transport{In: bytes.NewReader(stream), Out: &out, MaxMessageBytes: max}).Connect(context.Background())
		msgs, ours := 0, 0
		for {
			m, err := c.Read(context.Background())
			if err != nil {
				break
			}
			if m == nil {
				t.Fatal("nil message without an error")
			}
			msgs++
			if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
				if err := c.Write(context.Background(), &jsonrpc.Response{ID: r.ID, Result: json.RawMessage(`{}`)}); err != nil {
					t.Fatalf("answering %v: %v", r.ID, err)
				}
				ours++
			}
		}
		answers := bytes.Count(out.Bytes(), []byte("\n")) - ours
		// Every line longer than the bound (with its line ending, up to
		// "\r\n") is answered unread; every other non-blank line is one
		// message or one answer.
		want := 0
		for _, l := range bytes.SplitAfter(stream, []byte("\n")) {
			if len(l) > max+2 || len(bytes.TrimSpace(l)) > 0 {
				want++
			}
		}
		if msgs+answers != want {
			t.Fatalf("%d messages and %d answers for %d lines that need one", msgs, answers, want)
		}
	})
}

// TestInputEndReportedOnlyAfterEveryRequestIsAnswered: a client that pipes
// its requests in and closes its input still gets every answer: the
// connection reports the end of input only once each request it has read
// has been answered (a notification needs no answer), and a request never
// answered holds it no longer than DrainTimeout.
func TestInputEndReportedOnlyAfterEveryRequestIsAnswered(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + `{"jsonrpc":"2.0","id":"b","method":"ping"}` + "\n"
	var out bytes.Buffer
	c, err := (&Transport{In: strings.NewReader(in), Out: &out, DrainTimeout: time.Minute}).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ids []jsonrpc.ID
	for range 3 {
		msg, err := c.Read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := msg.(*jsonrpc.Request); ok && r.IsCall() {
			ids = append(ids, r.ID)
		}
	}
	ended := make(chan error, 1)
	go func() { _, err := c.Read(t.Context()); ended <- err }()
	for i, id := range ids {
		select {
		case err := <-ended:
			t.Fatalf("Read ended (%v) with %d of %d requests unanswered", err, len(ids)-i, len(ids))
		case <-time.After(20 * time.Millisecond):
		}
		if err := c.Write(t.Context(), &jsonrpc.Response{ID: id, Result: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-ended:
		if err != io.EOF {
			t.Fatalf("Read after the answers: %v, want io.EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read did not report the end of input after every request was answered")
	}
	if n := strings.Count(out.String(), "\n"); n != 2 {
		t.Fatalf("wrote %d lines, want the 2 answers:\n%s", n, out.String())
	}

	c, err = (&Transport{In: strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"ping"}` + "\n"), Out: io.Discard, DrainTimeout: 50 * time.Millisecond}).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(t.Context()); err != io.EOF {
		t.Fatalf("Read with a request never answered: %v, want io.EOF after DrainTimeout", err)
	}
}

// TestInputEndedLetsTheHostAnswerWhatWouldWaitForEver: InputEnded is
// called once when In ends, before the wait for the pending answers, so
// that the host can answer a request that would otherwise hold the drain
// for its whole timeout (an open subscriptions/listen).
func TestInputEndedLetsTheHostAnswerWhatWouldWaitForEver(t *testing.T) {
	var c mcp.Connection
	var id jsonrpc.ID
	calls := 0
	tr := &Transport{In: strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen"}` + "\n"), Out: io.Discard, DrainTimeout: time.Minute,
		InputEnded: func() {
			calls++
			// The host answers the listen here.
			if err := c.Write(context.Background(), &jsonrpc.Response{ID: id, Result: json.RawMessage(`{}`)}); err != nil {
				t.Error(err)
			}
		}}
	c, err := tr.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	msg, err := c.Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	id = msg.(*jsonrpc.Request).ID
	ended := make(chan error, 1)
	go func() { _, err := c.Read(t.Context()); ended <- err }()
	select {
	case err := <-ended:
		if err != io.EOF {
			t.Fatalf("Read at the end of input: %v, want io.EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the end of input was not reported 10 s after InputEnded answered the last request (drain 1 min)")
	}
	if _, err := c.Read(t.Context()); err != io.EOF {
		t.Fatalf("a second Read: %v, want io.EOF", err)
	}
	if calls != 1 {
		t.Fatalf("InputEnded called %d times, want 1", calls)
	}
}
