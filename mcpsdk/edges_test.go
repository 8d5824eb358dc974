package mcpsdk

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const discoverBody = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` +
	`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},` +
	`"io.modelcontextprotocol/clientCapabilities":{}}}}`

// Issue 39, defect 4: a stateful streamable HTTP server answered
// server/discover at 2026-07-28 with success (its supportedVersions
// lacking 2026-07-28) and then refused every 2026-07-28 request with
// -32022. It refuses the discover request alike; a stateless server,
// which serves 2026-07-28, answers it.
func TestDiscoverAnswersOnlyWhatTheTransportServes(t *testing.T) {
	st, res := liveStore(t)
	for _, stateless := range []bool{false, true} {
		s, a := listenAdapter(t, st, res, Options{ListenOnly: stateless})
		srv := httptest.NewServer(a.HTTPHandler(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
			&mcp.StreamableHTTPOptions{Stateless: stateless})))
		t.Cleanup(srv.Close)
		answer := rawPost(t, context.Background(), srv.URL, "", ListenProtocolVersion, discoverBody).answerTo(t, "1")
		var m struct {
			Result *mcp.DiscoverResult
			Error  *jsonrpc.Error
		}
		if err := json.Unmarshal(answer, &m); err != nil {
			t.Fatal(err)
		}
		switch {
		case stateless && (m.Result == nil || !slices.Contains(m.Result.SupportedVersions, ListenProtocolVersion)):
			t.Errorf("stateless discover at %s: %s, want a result that lists it", ListenProtocolVersion, answer)
		case !stateless && (m.Error == nil || m.Error.Code != mcp.CodeUnsupportedProtocolVersion):
			t.Errorf("stateful discover at %s: %s, want %d", ListenProtocolVersion, answer, mcp.CodeUnsupportedProtocolVersion)
		case !stateless:
			var d mcp.UnsupportedProtocolVersionData
			if json.Unmarshal(m.Error.Data, &d); d.Requested != ListenProtocolVersion || len(d.Supported) == 0 || slices.Contains(d.Supported, ListenProtocolVersion) {
				t.Errorf("stateful discover's error data %s, want the versions it serves", m.Error.Data)
			}
		}
	}
}
