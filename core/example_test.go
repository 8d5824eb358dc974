package core_test

import (
	"context"
	"errors"
	"fmt"

	"go.phpboyscout.uk/mcp/resources/core"
)

// A template binding that serves one note per id, and a policy under which
// the caller may read every note but "secret".
func Example() {
	notes := map[string]string{"1": "first note", "2": "second note", "secret": "hidden"}
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
			id := t.URI()[len("notes://all/"):]
			return core.TextPayload("text/plain", notes[id]), nil
		}),
	}
	policy := core.PerTarget(core.TargetPolicy{
		Discover: func(ctx context.Context, d core.ResourceDefinition) error { return nil },
		Visibility: func(ctx context.Context, t core.ResourceTarget) (core.Visibility, error) {
			return core.Visibility{Visible: true}, nil
		},
		Read: func(ctx context.Context, t core.ResourceTarget) error {
			if t.URI() == "notes://all/secret" {
				return core.NewFailure(core.FailureUnavailable, errors.New("not for this caller"))
			}
			return nil
		},
	})
	res, err := core.NewResources([]core.ResourceBinding{binding}, policy)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	got, err := res.Read(ctx, "notes://all/2")
	fmt.Println(got.Items()[0].Text(), got.Partial(), err)

	_, err = res.Read(ctx, "notes://all/secret")
	fmt.Println(core.KindOf(err), err)

	_, err = res.Read(ctx, "notes://all/%2e%2e")
	fmt.Println(core.KindOf(err), err)
	// Output:
	// second note false <nil>
	// unavailable resource unavailable
	// invalid request invalid resource request
}
