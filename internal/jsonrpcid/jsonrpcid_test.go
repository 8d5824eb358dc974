package jsonrpcid

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestExactAcceptsOnlyIDsTheSDKEchoesUnchanged(t *testing.T) {
	for id, want := range map[string]bool{
		`1`: true, `0`: true, `-7`: true, `"x"`: true, `""`: true, `null`: true,
		`9007199254740991`: true, `-9007199254740991`: true,
		`9007199254740992`: false, `18446744073709551616`: false, `-0.5`: false, `1.0`: false,
		`1e3`: false, `-0`: false, `1E3`: false, `true`: false, `{}`: false, `[1]`: false,
	} {
		msg := `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`
		if got := Exact([]byte(msg)); got != want {
			t.Errorf("id %s: Exact %v, want %v", id, got, want)
		}
	}
	if Exact([]byte(`{"jsonrpc":"2.0","id":1,"id":1.5,"method":"ping"}`)) {
		t.Error("a second, inexact id was let through")
	}
	if !Exact([]byte(`{"jsonrpc":"2.0","method":"ping","params":{"id":1.5}}`)) {
		t.Error("an id inside params was checked")
	}
}

// FuzzExact checks the rule against the SDK's own decoding and encoding:
// an id that Exact accepts comes back as the very JSON value it was.
func FuzzExact(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":"a","method":"x"}`,
		`{"jsonrpc":"2.0","id":18446744073709551616,"method":"x"}`, `{"jsonrpc":"2.0","id":-0.5,"method":"x"}`,
		`{"jsonrpc":"2.0","id":9007199254740991,"id":2,"method":"x"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		if !Exact(msg) || !json.Valid(msg) {
			return
		}
		m, err := jsonrpc.DecodeMessage(msg)
		if err != nil {
			return
		}
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.ID.IsValid() {
			return
		}
		var sent map[string]any
		d := json.NewDecoder(bytes.NewReader(msg))
		d.UseNumber()
		if d.Decode(&sent) != nil {
			return
		}
		echoed, _ := json.Marshal(req.ID.Raw())
		var back any
		d = json.NewDecoder(bytes.NewReader(echoed))
		d.UseNumber()
		_ = d.Decode(&back)
		sentJSON, _ := json.Marshal(sent["id"])
		backJSON, _ := json.Marshal(back)
		if string(sentJSON) != string(backJSON) {
			t.Fatalf("id %s accepted but echoed as %s", sentJSON, echoed)
		}
	})
}
