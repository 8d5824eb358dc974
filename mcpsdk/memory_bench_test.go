package mcpsdk

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/live"
	"go.phpboyscout.uk/mcp/resources/stores/memory"
)

// sessionMemoryN is how many stateful sessions BenchmarkSessionMemory
// holds open at once.
const sessionMemoryN = 1000

// BenchmarkSessionMemory opens 1,000 stateful streamable-HTTP sessions, one
// subscription each, against an in-process server (the adapter over the
// memory store, the go-sdk's HTTP handler on loopback), and reports what
// they hold once open: B/session is the growth of the live heap and of the
// goroutine stacks (both after a GC) divided by the sessions, heap-B/session
// the heap's share alone, goroutines/session the goroutines they keep, and
// sdk-, module-, http- and other-heap-B/session that heap by who
// allocated it (owners). The client is raw HTTP over a few keep-alive
// connections, so the figure is the server's: the SDK's session, its
// stream state and the adapter's per-session state. Run it with
// -benchtime=1x (one iteration is 1,000 sessions). With MCPRES_SESSION_HEAP
// set to a path, each sub-benchmark writes the heap profile taken while its
// sessions are open to that path, the sub-benchmark's name appended.
func BenchmarkSessionMemory(b *testing.B) {
	b.Run("subscribed", func(b *testing.B) { benchSessionMemory(b, false) })
	b.Run("subscribed+stream", func(b *testing.B) { benchSessionMemory(b, true) })
}

// benchSessionMemory is BenchmarkSessionMemory, each session with its
// standalone GET stream open when stream is set (what the go-sdk client
// opens): the client end of that stream is a bare TCP connection that
// sends the request and reads nothing, so it holds no client buffers or
// goroutines in the process.
func benchSessionMemory(b *testing.B, stream bool) {
	st := memory.New(nil)
	if _, err := st.Put("a", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("v1")}); err != nil {
		b.Fatal(err)
	}
	st.Grant("a", "alice", memory.Access{Read: true})
	res, err := core.NewResources([]core.ResourceBinding{
		st.KeyBinding(core.ResourceDefinition{URITemplate: liveTemplate, Name: "doc"}, "id", ""),
	}, st.Policy())
	if err != nil {
		b.Fatal(err)
	}
	a := New(res, &Options{Principal: func(context.Context, mcp.Request) string { return "alice" },
		Live: &live.Options{MaxPerPrincipal: 2 * sessionMemoryN, MaxTotal: 2 * sessionMemoryN}, Sources: []core.ChangeSource{st}})
	s := a.NewServer(&mcp.Implementation{Name: "mem", Version: "v0"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	subs := a.Subscriptions()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()

	post := func(sid, body string) (string, error) {
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := hc.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil {
			return "", err
		}
		if resp.StatusCode/100 != 2 {
			return "", fmt.Errorf("%s: %s", resp.Status, out)
		}
		if strings.Contains(string(out), `"error"`) {
			return "", fmt.Errorf("answered with an error: %s", out)
		}
		return resp.Header.Get("Mcp-Session-Id"), nil
	}
	open := func() (string, error) {
		sid, err := post("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		if err != nil || sid == "" {
			return "", fmt.Errorf("initialize: %q %v", sid, err)
		}
		if _, err := post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
			return "", err
		}
		_, err = post(sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":%q}}`, liveDoc("a")))
		if err != nil || !stream {
			return sid, err
		}
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			return "", err
		}
		conns = append(conns, c)
		_, err = fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n",
			srv.Listener.Addr(), sid)
		if err != nil {
			return "", err
		}
		// The answer's header: the stream is open once it is sent.
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReaderSize(c, 16)
		if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, " 200 ") {
			return "", fmt.Errorf("GET stream: %q %v", line, err)
		}
		return sid, nil
	}
	closeSession := func(sid string) {
		req, _ := http.NewRequest(http.MethodDelete, srv.URL, nil)
		req.Header.Set("Mcp-Session-Id", sid)
		if resp, err := hc.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	held := func() (heap, stack uint64) {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc, m.StackInuse
	}
	// One session first, so that what every server allocates once (the
	// SDK's lazily built tables, the HTTP client's connections) is not
	// counted against the 1,000.
	warm, err := open()
	if err != nil {
		b.Fatal(err)
	}
	defer closeSession(warm)

	// Every allocation is sampled from here on, so that the heap by owner
	// is exact: a live object is counted once, to the owner of the first
	// frame of its allocation's stack that names one (heapOwners).
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1
	var perHeap, perAll, perG float64
	var perOwner map[string]float64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		h0, s0 := held()
		o0 := heapOwners()
		g0 := runtime.NumGoroutine()
		b.StartTimer()
		sids := make([]string, 0, sessionMemoryN)
		for range sessionMemoryN {
			sid, err := open()
			if err != nil {
				b.Fatal(err)
			}
			sids = append(sids, sid)
		}
		b.StopTimer()
		if n := subs.Hub().Stats().Subscriptions; n != sessionMemoryN+1 {
			b.Fatalf("%d subscriptions held, want %d", n, sessionMemoryN+1)
		}
		h1, s1 := held()
		o1 := heapOwners()
		perOwner = map[string]float64{}
		for name := range o1 {
			perOwner[name] = float64(o1[name]-o0[name]) / sessionMemoryN
		}
		perG = float64(runtime.NumGoroutine()-g0) / sessionMemoryN
		if path := os.Getenv("MCPRES_SESSION_HEAP"); path != "" {
			writeHeapProfile(b, path+"."+strings.ReplaceAll(b.Name(), "/", "_"))
		}
		perHeap = float64(int64(h1)-int64(h0)) / sessionMemoryN
		perAll = float64(int64(h1+s1)-int64(h0+s0)) / sessionMemoryN
		for _, sid := range sids {
			closeSession(sid)
		}
		for _, c := range conns {
			c.Close()
		}
		conns = conns[:0]
		b.StartTimer()
	}
	b.ReportMetric(perAll, "B/session")
	b.ReportMetric(perHeap, "heap-B/session")
	b.ReportMetric(perG, "goroutines/session")
	for _, o := range owners {
		b.ReportMetric(perOwner[o.name], o.name+"-heap-B/session")
	}
	b.ReportMetric(perOwner["other"], "other-heap-B/session")
}

// owners are who the heap of a session is counted to, by the package
// path of a frame of an allocation's stack: the go-sdk's session and
// stream state, this module's (the adapter, the live hub, the gateway),
// and net/http's connections; an allocation none of their frames made is
// "other".
var owners = []struct{ name, prefix string }{
	{"sdk", "github.com/modelcontextprotocol/go-sdk/"},
	{"module", "go.phpboyscout.uk/mcp/resources/"},
	{"http", "net/http."},
}

// heapOwners returns the live heap bytes of the last completed GC's
// profile by owner: each record to the owner of the innermost frame of
// its stack that names one.
func heapOwners() map[string]int64 {
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, true)
	for {
		recs = make([]runtime.MemProfileRecord, n+64)
		var ok bool
		if n, ok = runtime.MemProfile(recs, true); ok {
			recs = recs[:n]
			break
		}
	}
	out := map[string]int64{}
	for _, r := range recs {
		owner := "other"
		frames := runtime.CallersFrames(r.Stack())
	walk:
		for {
			f, more := frames.Next()
			for _, o := range owners {
				if strings.HasPrefix(f.Function, o.prefix) {
					owner = o.name
					break walk
				}
			}
			if !more {
				break
			}
		}
		out[owner] += r.InUseBytes()
	}
	return out
}

// writeHeapProfile writes the heap profile to path while the sessions are
// open (go test -memprofile writes it after they are closed): see where
// a session's memory goes with go tool pprof -sample_index=inuse_space.
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}
