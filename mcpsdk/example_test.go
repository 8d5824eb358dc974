package mcpsdk_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
)

// A complete host: a gateway with one template binding, an MCP server that
// serves it through the adapter, and a client that reads one note and
// fails to read a missing one.
func Example() {
	notes := map[string]string{"1": "first note", "2": "second note"}
	binding := core.ResourceBinding{
		Definition: core.ResourceDefinition{URITemplate: "notes://all/{id}", Name: "note", MIMEType: "text/plain"},
		Resolver: core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
			id, _ := m.Var("id")
			if _, ok := notes[id]; !ok {
				return core.ResourceReadPlan{}, core.NewFailure(core.FailureUnavailable, errors.New("no note "+id))
			}
			t, err := core.NewResourceTarget(m.URI(), "note", nil)
			if err != nil {
				return core.ResourceReadPlan{}, err
			}
			return core.NewResourceReadPlan(t, t)
		}),
		Reader: core.ItemReader(func(ctx context.Context, item core.ReadItem) (core.ResourcePayload, error) {
			t := item.Target
			return core.TextPayload("text/plain", notes[t.URI()[len("notes://all/"):]]), nil
		}),
	}
	allow := core.PerTarget(core.TargetPolicy{
		Discover: func(context.Context, core.ResourceDefinition) error { return nil },
		Visibility: func(context.Context, core.ResourceTarget) (core.Visibility, error) {
			return core.Visibility{Visible: true}, nil
		},
		Read: func(context.Context, core.ResourceTarget) error { return nil },
	})
	res, err := core.NewResources([]core.ResourceBinding{binding}, allow)
	if err != nil {
		log.Fatal(err)
	}

	a := mcpsdk.New(res, nil)
	server := a.NewServer(&mcp.Implementation{Name: "notes", Version: "v1.0.0"}, nil)

	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1.0.0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	templates, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(templates.ResourceTemplates[0].URITemplate)

	got, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://all/2"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.Contents[0].Text, got.CacheScope)

	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://all/3"})
	fmt.Println(err)
	// Output:
	// notes://all/{id}
	// second note private
	// calling "resources/read": resource unavailable
}
