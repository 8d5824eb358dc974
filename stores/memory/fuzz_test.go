package memory_test

import (
	"encoding/json"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/memory"
)

// FuzzReadRefusesTargetsItDidNotPlan: whatever authorization data a target
// carries, the reader never panics, and it hands out a body only for the
// exact key and version it planned, to a principal with a read grant.
func FuzzReadRefusesTargetsItDidNotPlan(f *testing.F) {
	f.Add(`{"store":"memory","key":"k","version":1}`, "alice")
	f.Add(`{"store":"memory","key":"k","version":2}`, "alice")
	f.Add(`{"store":"memory","key":"other","version":1}`, "alice")
	f.Add(`{"store":"memory","key":"k","version":1}`, "bob")
	f.Add(`{"store":"memory","key":"k","version":-1}`, "")
	f.Add(`[1,2]`, "alice")
	f.Add(`"memory"`, "alice")
	f.Fuzz(func(t *testing.T, authz, principal string) {
		st := memory.New(nil)
		version, err := st.Put("k", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("body")})
		if err != nil {
			t.Fatal(err)
		}
		st.Grant("k", "alice", memory.Access{Read: true})
		target, err := core.NewResourceTarget("mem://k", "item", json.RawMessage(authz))
		if err != nil {
			return // not a target the gateway would pass
		}
		p, err := st.Read(core.WithCaller(t.Context(), core.Caller{Principal: principal}), whole(target))
		if err != nil {
			if !p.IsZero() {
				t.Fatalf("an error came with a payload")
			}
			return
		}
		var pin struct {
			Store   string
			Key     string
			Version uint64
		}
		if json.Unmarshal([]byte(authz), &pin) != nil || pin.Store != "memory" || pin.Key != "k" || pin.Version != version || principal != "alice" {
			t.Fatalf("served %q for authz %s as %q", p.Text(), authz, principal)
		}
	})
}
