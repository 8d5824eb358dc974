package mcpsdk_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
)

// printAuditor prints who read what; a host would write the events to a
// sink of package mcpsdk/audit instead.
type printAuditor struct{}

func (printAuditor) Audit(_ context.Context, e *mcpsdk.AuditEvent) error {
	fmt.Println(e.Method, e.Principal, e.URI, e.Result)
	for _, it := range e.Items {
		fmt.Println("  served", it.URI, it.Size, it.MIMEType)
	}
	return nil // accepted: an error would refuse the read as a retryable outage
}

// A host audits every read with its own [mcpsdk.Auditor].
func ExampleAuditor() {
	binding := core.ResourceBinding{
		Definition: core.ResourceDefinition{URI: "notes://readme", Name: "readme", MIMEType: "text/plain"},
		Resolver: core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
			t, err := core.NewResourceTarget(m.URI(), "note", nil)
			if err != nil {
				return core.ResourceReadPlan{}, err
			}
			return core.NewResourceReadPlan(t, t)
		}),
		Reader: core.ItemReader(func(context.Context, core.ReadItem) (core.ResourcePayload, error) {
			return core.TextPayload("text/plain", "hello"), nil
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
	a := mcpsdk.New(res, &mcpsdk.Options{
		Auditor:   printAuditor{},
		Principal: func(context.Context, mcp.Request) string { return "alice" },
	})
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
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "notes://readme"}); err != nil {
		log.Fatal(err)
	}
	// Output:
	// resources/read alice notes://readme complete
	//   served notes://readme 5 text/plain
}
