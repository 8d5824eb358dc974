package integration

import (
	"net"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tripProxy is a loopback TCP proxy in front of PostgreSQL that counts
// round trips: a client write that follows a server reply starts one.
type tripProxy struct {
	ln    net.Listener
	trips atomic.Int64
}

func newTripProxy(t *testing.T, upstream string) *tripProxy {
	t.Helper()
	p := &tripProxy{}
	p.ln = proxyTo(t, upstream, nil, func(net.Conn, net.Conn) (func([]byte), func([]byte), bool) {
		var replied atomic.Bool // a reply came since the client last sent: its next chunk is a new trip
		return func([]byte) {
			if replied.Swap(false) {
				p.trips.Add(1)
			}
		}, func([]byte) { replied.Store(true) }, true
	})
	return p
}

// TestServerRoundTripsPerRead counts the PostgreSQL round trips of one MCP
// request of each kind through the reference server binary over the seed
// data (alice: project grants), with its pool behind a counting proxy and
// its LISTEN connection direct. One body read costs at most 4 round trips
// and a bundle of N items at most N + 4.
func TestServerRoundTripsPerRead(t *testing.T) {
	t.Parallel()
	dbURL, _, flags := migratedAndSeeded(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newTripProxy(t, u.Host)
	proxied := *u
	proxied.Host = proxy.ln.Addr().String()
	args := []string{"--listen-postgres=" + dbURL, "--tokens=" + tokensFile(t, "alice")}
	for _, f := range flags {
		if len(f) > len("--postgres=") && f[:len("--postgres=")] == "--postgres=" {
			f = "--postgres=" + proxied.String()
		}
		args = append(args, f)
	}
	srv := startServer(t, args...)
	cs := srv.connect(t, "alice-token")
	ctx := t.Context()

	kinds := []struct {
		name, uri string
		items     int // application items, or -1 for a list page
	}{
		{"index", "asset://projects", 1},
		{"project bundle", "asset://project/handbook", 6},
		{"joined asset", "asset://project/handbook/asset/architecture", 2},
		{"asset body", "asset://project/handbook/asset/welcome/body", 1},
		{"asset object", "asset://project/handbook/asset/architecture/object", 1},
		{"list page", "", -1},
	}
	do := func(uri string, items int) {
		t.Helper()
		if items < 0 {
			if _, err := cs.ListResources(ctx, &mcp.ListResourcesParams{}); err != nil {
				t.Fatalf("list: %v", err)
			}
			return
		}
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(res.Contents) != items {
			t.Fatalf("read %s: %v (%d contents, want %d)", uri, err, len(res.Contents), items)
		}
	}
	for _, k := range kinds { // warm the pool's connections and their statement caches
		do(k.uri, k.items)
		do(k.uri, k.items)
	}
	for _, k := range kinds {
		// The least of three reads: a read that lands on a connection of
		// the pool that has not prepared its statements yet pays for that.
		trips := int64(-1)
		for range 3 {
			before := proxy.trips.Load()
			do(k.uri, k.items)
			if n := proxy.trips.Load() - before; trips < 0 || n < trips {
				trips = n
			}
		}
		t.Logf("%-15s %-52s %d round trips", k.name, k.uri, trips)
		max := int64(max(k.items, 0) + 4)
		if k.items < 0 {
			max = 0
		}
		if trips > max {
			t.Errorf("%s: %d round trips, want at most %d", k.name, trips, max)
		}
	}
}
