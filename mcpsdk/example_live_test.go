package mcpsdk_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/live"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
	"go.phpboyscout.uk/mcp/resources/stores/memory"
)

// Live resources: a memory store is both the storage and the change
// source; the client completes a note id, subscribes to the note and is
// told when it changes.
func ExampleSubscriptions() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := memory.New(nil)
	for _, key := range []string{"note/1", "note/2"} {
		st.Put(key, memory.Item{MIMEType: "text/plain", Text: true, Body: []byte("draft")})
		st.Grant(key, "alice", memory.Access{Read: true})
	}
	res, err := core.NewResources([]core.ResourceBinding{
		st.KeyBinding(core.ResourceDefinition{URITemplate: "mem://notes/{id}", Name: "note"}, "id", "note/"),
	}, st.Policy())
	if err != nil {
		log.Fatal(err)
	}

	a := mcpsdk.New(res, &mcpsdk.Options{
		Principal:   func(context.Context, mcp.Request) string { return "alice" },
		Live:        &live.Options{}, // subscriptions, with live's default bounds
		Sources:     []core.ChangeSource{st},
		Completions: true,
	})
	server := a.NewServer(&mcp.Implementation{Name: "notes", Version: "v1"}, nil)
	go a.Run(ctx)

	updated := make(chan string, 100)
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
	})
	st1, st2 := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, st1, nil); err != nil {
		log.Fatal(err)
	}
	cs, err := client.Connect(ctx, st2, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	c, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "mem://notes/{id}"},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: ""},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("ids:", c.Completion.Values)

	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://notes/1"}); err != nil {
		log.Fatal(err)
	}
	// A 2026-07-28 client subscribes in the background, and the hub's Run
	// starts watching the store in its own goroutine: wait for both.
	for a.Subscriptions().Hub().Stats().Subscriptions == 0 || st.Watching() == 0 {
		time.Sleep(time.Millisecond)
	}
	// The listen stream opens in the background too: a change made before
	// it is acknowledged is held for it, but nothing tells this client when
	// the stream is open, so change again until it hears one.
	for i := 0; ; i++ {
		st.Put("note/1", memory.Item{MIMEType: "text/plain", Text: true, Body: []byte(fmt.Sprint("final ", i))})
		select {
		case uri := <-updated:
			fmt.Println("updated:", uri)
			return
		case <-time.After(time.Second):
			if i == 20 {
				log.Fatal("no update after 20 changes")
			}
		}
	}
	// Output:
	// ids: [1 2]
	// updated: mem://notes/1
}
