package integration

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	mcpgo "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	gomcp "github.com/mark3labs/mcp-go/mcp"
)

// Issue 46, defect 1, with mcp-go v1.2.1 and its client defaults: a
// stateful session that never opens the standalone GET stream subscribes,
// a row changes in PostgreSQL, and the session still answers. The
// notification had nowhere to go: the server counts it as undelivered
// (as the go-sdk server drops its own), instead of ending the session,
// whose next request got 404 "session not found".
func TestMcpGoClientDefaultsKeepTheirSessionThroughANotification(t *testing.T) {
	t.Parallel()
	dbURL, _, flags := migratedAndSeeded(t)
	srv := startServer(t, append(flags, "--tokens="+tokensFile(t, "alice"))...)
	ctx := t.Context()
	c, err := mcpgo.NewStreamableHttpClient("http://"+srv.addr+"/mcp",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer alice-token"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	var heard atomic.Int64
	c.OnNotification(func(n gomcp.JSONRPCNotification) {
		if n.Method == "notifications/resources/updated" {
			heard.Add(1)
		}
	})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init, err := c.Initialize(ctx, gomcp.InitializeRequest{Params: gomcp.InitializeParams{
		ClientInfo: gomcp.Implementation{Name: "mcp-go-defaults", Version: "1"}}})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	session := c.GetSessionId()
	if session == "" {
		t.Fatalf("no session (protocol %s): the server is stateful", init.ProtocolVersion)
	}
	if init.Capabilities.Resources == nil || !init.Capabilities.Resources.Subscribe {
		t.Fatalf("protocol %s, capabilities %+v: want resources.subscribe", init.ProtocolVersion, init.Capabilities)
	}
	const welcome = "asset://project/handbook/asset/welcome/body"
	if err := c.Subscribe(ctx, gomcp.SubscribeRequest{Params: gomcp.SubscribeParams{URI: welcome}}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	srv.waitGauges(t, "subscribed", func(g map[string]int) bool { return g["mcpres_subscriptions_active"] == 1 })
	changes, _ := srv.liveCounts(t)
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `UPDATE mcpres.assets SET title = title || '!' WHERE project_id = 'handbook' AND id = 'welcome'`); err != nil {
		t.Fatal(err)
	}
	// The server's own sequence: the change counted and handled, its one
	// notification sent to the transport and refused there.
	srv.settled(t, "the change", changes+1)
	g := srv.waitGauges(t, "the notification", func(g map[string]int) bool {
		return g["mcpres_live_notifications_undelivered_total"] >= 1
	})
	r, err := c.ReadResource(ctx, gomcp.ReadResourceRequest{Params: gomcp.ReadResourceParams{URI: welcome}})
	if err != nil {
		t.Fatalf("the session no longer answers after the notification: %v\nserver stderr:\n%s", err, srv.stderr.String())
	}
	if len(r.Contents) == 0 || c.GetSessionId() != session {
		t.Fatalf("read after the notification: %d contents, session %q (was %q)", len(r.Contents), c.GetSessionId(), session)
	}
	if strings.Contains(srv.stderr.String(), "write deadline missed") {
		t.Errorf("the server ended a session:\n%s", srv.stderr.String())
	}
	t.Logf("mcp-go %s defaults, protocol %s: subscribed, %d notification undelivered (no GET stream), %d heard, session %s still answers",
		"v1.2.1", init.ProtocolVersion, g["mcpres_live_notifications_undelivered_total"], heard.Load(), session[:4]+"…")
}
