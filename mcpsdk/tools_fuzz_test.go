package mcpsdk

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
)

// FuzzToolCall feeds arbitrary argument bytes to each surface tool (the
// argument decoding, the list_resources cursor parser, the read and the
// completion behind them). Every call must answer a result that encodes
// as valid JSON, never panic, and, when it fails, say one of the fixed
// public messages with no private data.
func FuzzToolCall(f *testing.F) {
	r, _ := newResources(f, core.ResourceLimits{ReadTimeout: 100 * time.Millisecond, ItemTimeout: 50 * time.Millisecond}, toolBindings(f)...)
	a := &adapter{r: r, timeout: r.Limits().ReadTimeout, principal: TokenPrincipal, complete: true, tools: newToolSurface(&ToolOptions{}, true)}
	names := []string{ToolReadResource, ToolListResources, ToolCompleteResourceURI}
	messages := map[string]bool{internalMessage: true}
	for k := core.FailureUnavailable; k <= core.FailureOutage; k++ {
		messages[core.NewFailure(k, nil).Error()] = true
	}
	for _, seed := range []string{`{"uri":"notes://readme"}`, `{"uri":"bundle://partial"}`, `{"uri":"notes://items/%2e%2e"}`, `{"cursor":"t:"}`,
		`{"cursor":"r:AQGV"}`, `{"cursor":"x:"}`, `{"template":"docs://d/{id}","argument":"id","value":"a","arguments":{"id":"q"}}`,
		`null`, ``, `[]`, `{"uri":42}`, `{"uri":"\u0000\u007f"}`, "{\"uri\":\"a://\xff\"}", `{"cursor":"t:` + string(bytes.Repeat([]byte("A"), 5000)) + `"}`} {
		for i := range names {
			f.Add(uint8(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, args []byte) {
		name := names[int(which)%len(names)]
		res := a.callTool(context.Background(), name, json.RawMessage(args), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name}})
		if res == nil {
			t.Fatal("no result")
		}
		enc, err := json.Marshal(res)
		if err != nil || !json.Valid(enc) {
			t.Fatalf("%s %q: result does not encode: %v", name, args, err)
		}
		if bytes.Contains(enc, []byte("CANARY")) {
			t.Fatalf("%s %q: private data in %s", name, args, enc)
		}
		if res.IsError {
			var c []textContent
			if json.Unmarshal(res.Content, &c) != nil || len(c) != 1 || !messages[c[0].Text] {
				t.Fatalf("%s %q: failure %s", name, args, res.Content)
			}
		}
	})
}
