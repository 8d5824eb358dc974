package mcpsdk

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/live"
	"go.phpboyscout.uk/mcp/resources/stores/memory"
)

// TestAdapterServerOptionsDeclareWhatItServesOnce proves that the options
// the one value builds its server with declare resources, subscribe (with the handlers)
// only when Live asks for subscriptions, and completions only with
// Completions, keep the host's own capabilities and leave base alone; and
// that Run without subscriptions returns when its context ends.
func TestAdapterServerOptionsDeclareWhatItServesOnce(t *testing.T) {
	st := memory.New(nil)
	res, err := core.NewResources([]core.ResourceBinding{st.KeyBinding(core.ResourceDefinition{URITemplate: liveTemplate, Name: "doc"}, "id", "")}, st.Policy())
	if err != nil {
		t.Fatal(err)
	}
	base := &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{
		Resources: &mcp.ResourceCapabilities{ListChanged: true}, Prompts: &mcp.PromptCapabilities{}}}
	for _, c := range []struct {
		name              string
		opts              *Options
		subscribe, compls bool
	}{
		{"defaults", nil, false, false},
		{"completions", &Options{Completions: true}, false, true},
		{"live", &Options{Live: &live.Options{}, Sources: []core.ChangeSource{st}}, true, false},
		{"live and completions", &Options{Live: &live.Options{}, Completions: true}, true, true},
	} {
		a := New(res, c.opts)
		o := a.serverOptions(base)
		caps := o.Capabilities
		if caps.Resources == nil || caps.Resources.Subscribe != c.subscribe || !caps.Resources.ListChanged || caps.Prompts == nil {
			t.Errorf("%s: resources %+v, prompts %v; want subscribe=%v and the host's listChanged and prompts kept", c.name, caps.Resources, caps.Prompts, c.subscribe)
		}
		if (caps.Completions != nil) != c.compls {
			t.Errorf("%s: completions declared = %v, want %v", c.name, caps.Completions != nil, c.compls)
		}
		if (o.SubscribeHandler != nil) != c.subscribe || (o.UnsubscribeHandler != nil) != c.subscribe || (a.Subscriptions() != nil) != c.subscribe {
			t.Errorf("%s: subscription handlers set = %v, want %v", c.name, o.SubscribeHandler != nil, c.subscribe)
		}
	}
	if base.Capabilities.Resources.Subscribe || base.Capabilities.Completions != nil || base.SubscribeHandler != nil {
		t.Fatal("serverOptions modified base")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := New(res, nil).Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run without subscriptions = %v, want context.Canceled", err)
	}
}
