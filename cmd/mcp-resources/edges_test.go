package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"go.phpboyscout.uk/mcp/resources/internal/httpguard"
	"go.phpboyscout.uk/mcp/resources/internal/jsonrpcid"
)

// Issue 39, defects 5 and 6: an id of 2^64 came back as
// -9223372036854775808 and -0.5 as 0, and an HTTP body with bytes after
// its message was served (stdio refused such a line). Both transports now
// refuse both, alike.
func TestInexactIDsAndTrailingBytesAreRefusedOnBothTransports(t *testing.T) {
	cases := []struct {
		name, body string
		code       int64
		msg        string
	}{
		{"id 2^64", strings.Replace(readBody("1"), `"id":1`, `"id":18446744073709551616`, 1), -32600, jsonrpcid.Message},
		{"id -0.5", strings.Replace(readBody("1"), `"id":1`, `"id":-0.5`, 1), -32600, jsonrpcid.Message},
		{"id 1e0", strings.Replace(readBody("1"), `"id":1`, `"id":1e0`, 1), -32600, jsonrpcid.Message},
		{"trailing bytes", readBody("1") + ` {"x":1}`, -32700, ""},
	}
	check := func(t *testing.T, transport, name string, answer []byte, code int64, msg string) {
		t.Helper()
		var m struct {
			ID    json.RawMessage
			Error struct {
				Code    int64
				Message string
			}
		}
		if err := json.Unmarshal(answer, &m); err != nil || m.Error.Code != code || !strings.Contains(m.Error.Message, msg) || string(m.ID) != "null" {
			t.Errorf("%s, %s: %s, want %d with a null id", transport, name, answer, code)
		}
	}
	t.Run("http", func(t *testing.T) {
		s := startHTTP(t)
		sid := s.open()
		for _, c := range cases {
			code, _, msgs := s.post(c.body, sid)
			if code != http.StatusBadRequest || len(msgs) != 1 {
				t.Errorf("%s: %d %s, want 400 and one error", c.name, code, msgs)
				continue
			}
			check(t, "http", c.name, msgs[0], c.code, c.msg)
		}
		// The largest exact id comes back as it was sent.
		_, _, msgs := s.post(readBody("9007199254740991"), sid)
		if len(msgs) != 1 || !strings.Contains(string(msgs[0]), `"id":9007199254740991,`) {
			t.Errorf("id 2^53-1: %s", msgs)
		}
		s.readSucceeds(sid, "refused ids")
	})
	t.Run("stdio", func(t *testing.T) {
		s := startStdio(t)
		s.send(initializeBody("0"))
		s.await("0")
		s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		for _, c := range cases {
			s.mu.Lock()
			before := s.nullIDs
			s.mu.Unlock()
			s.send(c.body)
			probe := `"after ` + c.name + `"`
			s.send(readBody(probe))
			readSucceeds(t, s.await(probe), c.name)
			s.mu.Lock()
			n := s.nullIDs
			_, asOne := s.answers["1"]
			delete(s.answers, "1")
			s.mu.Unlock()
			if n != before+1 {
				t.Errorf("stdio, %s: %d answers with a null id, want 1", c.name, n-before)
			}
			if asOne {
				t.Errorf("stdio, %s: answered as id 1", c.name)
			}
		}
		s.send(readBody("9007199254740991"))
		if a := s.await("9007199254740991"); !strings.Contains(string(a), `"id":9007199254740991,`) {
			t.Errorf("id 2^53-1: %s", a)
		}
	})
}

// Issue 39, defect 7: with two Authorization headers the first decided.
func TestTwoAuthorizationHeadersAreRefused(t *testing.T) {
	s := startHTTP(t, "--tokens="+tokensFor(t, "demo", "guest"))
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.addr+"/mcp", strings.NewReader(initializeBody("1")))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Add("Authorization", "Bearer demo-token")
	req.Header.Add("Authorization", "Bearer guest-token")
	resp, err := s.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), httpguard.TwoAuthorizationsMessage) {
		t.Errorf("two Authorization headers: %d %s, want 400 %q", resp.StatusCode, body, httpguard.TwoAuthorizationsMessage)
	}
	if code, _, _ := s.post(initializeBody("2"), "", "Authorization", "Bearer demo-token"); code != http.StatusOK {
		t.Errorf("one Authorization header: %d", code)
	}
}

// Issue 39, defect 8: a wrongly typed parameter got the SDK's message,
// which names Go types (*mcp.ListResourcesParams) and quotes the params.
// Both transports answer it with a fixed message and the request's id.
func TestWronglyTypedParamsGetFixedMessagesOnBothTransports(t *testing.T) {
	cases := []struct{ body, msg string }{
		{`{"jsonrpc":"2.0","id":11,"method":"resources/list","params":{"cursor":5}}`, "invalid resource request"},
		{`{"jsonrpc":"2.0","id":12,"method":"resources/read","params":{"uri":7}}`, "invalid resource request"},
		{`{"jsonrpc":"2.0","id":13,"method":"resources/read","params":7}`, "invalid resource request"},
		{`{"jsonrpc":"2.0","id":14,"method":"resources/subscribe","params":{"uri":["demo://readme"]}}`, "invalid resource request"},
		{`{"jsonrpc":"2.0","id":15,"method":"completion/complete","params":{"ref":5}}`, "invalid resource request"},
		{`{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":5}}`, "invalid params"},
	}
	check := func(t *testing.T, transport string, id int, answer []byte, msg string) {
		t.Helper()
		var m struct {
			ID    int
			Error struct {
				Code    int64
				Message string
			}
		}
		if err := json.Unmarshal(answer, &m); err != nil || m.ID != id || m.Error.Code != -32602 || m.Error.Message != msg {
			t.Errorf("%s, request %d: %s, want -32602 %q", transport, id, answer, msg)
		}
	}
	t.Run("http", func(t *testing.T) {
		s := startHTTP(t)
		sid := s.open()
		for i, c := range cases {
			_, _, msgs := s.post(c.body, sid)
			if len(msgs) != 1 {
				t.Fatalf("%s: %s", c.body, msgs)
			}
			check(t, "http", 11+i, msgs[0], c.msg)
		}
		s.readSucceeds(sid, "wrongly typed params")
	})
	t.Run("stdio", func(t *testing.T) {
		s := startStdio(t)
		s.send(initializeBody("0"))
		s.await("0")
		s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		for i, c := range cases {
			s.send(c.body)
			check(t, "stdio", 11+i, s.await(strconv.Itoa(11+i)), c.msg)
		}
	})
}
