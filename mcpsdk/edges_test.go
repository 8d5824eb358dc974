package mcpsdk

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
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

func TestCheckParamsRefusesOnlyParamsTheSDKCannotDecode(t *testing.T) {
	for _, c := range []struct {
		method, params string
		bad            bool
	}{
		{MethodListResources, `{"cursor":"abc","_meta":{"progressToken":1}}`, false},
		{MethodListResources, `{}`, false},
		{MethodListResources, `null`, false},
		{MethodListResources, `{"cursor":5}`, true},
		{MethodReadResource, `{"uri":"demo://readme","_meta":{}}`, false},
		{MethodReadResource, `{"uri":7}`, true},
		{MethodReadResource, `"demo://readme"`, true},
		{MethodComplete, `{"ref":{"type":"ref/resource","uri":"demo://notes/{id}"},"argument":{"name":"id","value":""},"context":{"arguments":{"a":"b"}}}`, false},
		{MethodComplete, `{"ref":5}`, true},
		{MethodSubscriptionsListen, `{"notifications":{"resourceSubscriptions":["demo://readme"]}}`, false},
		{MethodSubscriptionsListen, `{"notifications":{"resourceSubscriptions":"demo://readme"}}`, true},
		{"tools/call", `{"name":"read_resource","arguments":{"uri":"x"}}`, false},
		{"tools/call", `{"name":5}`, true},
		{"initialize", `{"protocolVersion":5}`, false}, // left to the SDK
		{"no/such/method", `{"x":5}`, false},
	} {
		code, msg, bad := CheckParams(c.method, json.RawMessage(c.params))
		if bad != c.bad {
			t.Errorf("%s %s: %d %q, want refused %v", c.method, c.params, code, msg, c.bad)
		}
		if bad && (code != jsonrpc.CodeInvalidParams || strings.Contains(msg, "mcp.")) {
			t.Errorf("%s %s: %d %q", c.method, c.params, code, msg)
		}
	}
}
