package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/internal/httpguard"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
)

func listenRequest(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["` + demoReadme + `"]}}}`
}

// listenOnce POSTs a listen request on session and reads its stream until
// the first message, which it returns; then it goes away (ctx) unless keep
// is set, in which case the response is returned open.
func (s *httpServer) listenOnce(ctx context.Context, session, id string, header ...string) (string, *http.Response, *bufio.Scanner) {
	s.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.addr+"/mcp", strings.NewReader(listenRequest(id)))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(httpguard.SessionHeader, session)
	req.Header.Set("MCP-Protocol-Version", testProtocol)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		s.t.Fatalf("POST listen: %v (exited: %v)", err, s.exited())
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return d, resp, sc
		}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			return sc.Text(), resp, sc
		}
	}
	resp.Body.Close()
	s.t.Fatalf("listen %s: no message (status %d)", id, resp.StatusCode)
	return "", nil, nil
}

// Issue 39, defect 1: every subscriptions/listen request on a stateful
// session parked a goroutine that outlived its HTTP connection; 20,000 of
// them took the process from 13 to 20,018 goroutines and 28 to 443 MiB.
func TestTwentyThousandAbandonedListenRequestsLeaveGoroutinesAndMemoryBounded(t *testing.T) {
	s := startHTTP(t)
	sid := s.open()
	baseG, baseRSS := s.metric("go_goroutines"), s.metric("process_resident_memory_bytes")
	const requests, workers = 20000, 4
	var next, acked, refused atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > requests {
					return
				}
				ctx, cancel := context.WithCancel(context.Background())
				first, resp, _ := s.listenOnce(ctx, sid, strconv.FormatInt(i, 10))
				switch {
				case strings.Contains(first, "notifications/subscriptions/acknowledged"):
					acked.Add(1)
				case strings.Contains(first, mcpsdk.ListenLimitMessage):
					refused.Add(1)
				default:
					t.Errorf("listen %d: %s", i, first)
				}
				cancel() // the client goes away with the stream open
				resp.Body.Close()
				if t.Failed() {
					return
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	// The streams end with their connections; wait for the last ones.
	for deadline := time.Now().Add(10 * time.Second); s.metric("mcpres_listen_streams_active") != 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	g, rss, open := s.metric("go_goroutines"), s.metric("process_resident_memory_bytes"), s.metric("mcpres_listen_streams_active")
	t.Logf("%d listen requests abandoned once acknowledged (%d workers) in %v: %d acknowledged, %d refused; goroutines %v -> %v, resident memory %.1f -> %.1f MiB, listen streams open %v, ended with their connection %v",
		requests, workers, took.Round(time.Millisecond), acked.Load(), refused.Load(), baseG, g, baseRSS/(1<<20), rss/(1<<20), open,
		s.labelled("mcpres_listen_streams_ended_total", `reason="disconnected"`))
	if open != 0 {
		t.Errorf("%v listen streams still open after their connections closed", open)
	}
	if g > baseG+20 {
		t.Errorf("goroutines %v -> %v: want no goroutine left per abandoned listen", baseG, g)
	}
	if rss-baseRSS > 48<<20 {
		t.Errorf("resident memory rose %.1f MiB: want at most 48", (rss-baseRSS)/(1<<20))
	}
	if acked.Load() < requests/2 {
		t.Errorf("only %d of %d listens acknowledged: abandoned streams kept counting against the session's bound", acked.Load(), requests)
	}
	// The session's bound holds streams kept open, and the session goes on.
	var kept []*http.Response
	for i := range 5 {
		first, resp, _ := s.listenOnce(context.Background(), sid, "\"kept-"+strconv.Itoa(i)+"\"")
		kept = append(kept, resp)
		if want := i < 4; strings.Contains(first, "acknowledged") != want {
			t.Errorf("kept listen %d: %s (want acknowledged: %v)", i, first, want)
		}
	}
	if n := s.metric("mcpres_listen_streams_refused_total"); n < 1 {
		t.Errorf("mcpres_listen_streams_refused_total %v after a refusal", n)
	}
	for _, r := range kept {
		r.Body.Close()
	}
	s.readSucceeds(sid, "20,000 listen requests")
}

// labelled returns the value of metric name with the given label.
func (s *httpServer) labelled(name, label string) float64 {
	s.t.Helper()
	resp, err := s.hc.Get("http://" + s.ops + "/metrics")
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+"{"+label+"} "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	s.t.Fatalf("no metric %s{%s}", name, label)
	return 0
}

// Over stdio, listens beyond the session's bound are refused: 20,000 of
// them leave four open.
func TestStdioListenRequestsAreBoundedPerSession(t *testing.T) {
	s := startStdio(t)
	s.patience = time.Minute // 20,000 answers under -race beside the other packages' tests
	s.send(initializeBody("0"))
	s.await("0")
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	const requests = 20000
	for i := 1; i <= requests; i++ {
		s.send(listenRequest(strconv.Itoa(i)))
	}
	s.send(readBody(`"after"`))
	readSucceeds(t, s.await(`"after"`), "20,000 listen requests")
	// Every listen beyond the first four is answered with the bound's error.
	refused := 0
	for i := 5; i <= requests; i++ {
		a := s.await(strconv.Itoa(i))
		var m struct{ Error struct{ Message string } }
		if json.Unmarshal(a, &m); m.Error.Message != mcpsdk.ListenLimitMessage {
			t.Fatalf("listen %d: %s, want %q", i, a, mcpsdk.ListenLimitMessage)
		}
		refused++
	}
	t.Logf("%d listen requests over stdio: %d refused by the session's bound, 4 open", requests, refused)
}

// Issue 39, defect 3: SIGTERM waited out the whole --grace while a listen
// stream was open. The stream is answered at once and the server exits.
func TestSIGTERMAnswersOpenListenStreamsAndExitsWithoutWaitingOutTheGrace(t *testing.T) {
	s := startHTTP(t, "--grace=20s")
	sid := s.open()
	first, resp, sc := s.listenOnce(context.Background(), sid, "7")
	defer resp.Body.Close()
	if !strings.Contains(first, "acknowledged") {
		t.Fatalf("listen: %s", first)
	}
	start := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	answered := false
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, `"id":7`) && strings.Contains(d, `"result"`) {
			answered = true
			break
		}
	}
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("the server had not exited 15 s after SIGTERM (grace 20 s)")
	}
	took := time.Since(start)
	t.Logf("SIGTERM with an open listen stream: answered %v, exited after %v", answered, took.Round(time.Millisecond))
	if !answered {
		t.Errorf("the open listen stream was not answered with its result")
	}
	if took > 5*time.Second {
		t.Errorf("exit took %v after SIGTERM, want well under the 20 s grace", took)
	}
}
