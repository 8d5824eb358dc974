package core_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"go.phpboyscout.uk/mcp/resources/core"
)

// A store author's Reader bounds the storage read itself by the item's
// Limit: it learns the stored size first (as SQL octet_length or an S3
// Range request would) and returns TooLarge instead of fetching an item
// over the limit. Called directly, a host sets the limit in the request;
// through the gateway the limit is MaxItemBytes or what is left of the
// aggregate budget, and a TooLarge item becomes a budget_exceeded issue
// while its siblings survive.
func ExampleItemReader() {
	blobs := map[string][]byte{
		"store://blobs/small": []byte("tiny"),
		"store://blobs/large": bytes.Repeat([]byte("x"), 64),
	}
	fetched := 0
	reader := core.ItemReader(func(ctx context.Context, item core.ReadItem) (core.ResourcePayload, error) {
		stored, ok := blobs[item.Target.URI()]
		if !ok {
			return core.ResourcePayload{}, core.NewFailure(core.FailureUnavailable, errors.New("no such blob"))
		}
		if size := int64(len(stored)); size > item.Limit {
			return core.ResourcePayload{}, &core.TooLargeError{Size: size} // nothing fetched
		}
		fetched += len(stored) // the body read
		return core.BlobPayload("application/octet-stream", stored), nil
	})

	// A host calling the reader directly.
	large, _ := core.NewResourceTarget("store://blobs/large", "blob", nil)
	out, _ := reader.Read(context.Background(), core.ReadRequest{Items: []core.ReadItem{{Target: large, Limit: 16}}, Budget: 16})
	var tooLarge *core.TooLargeError
	fmt.Println("direct:", errors.As(out[0].Err, &tooLarge), tooLarge.Size)

	// The gateway, with items of at most 16 bytes.
	binding := core.ResourceBinding{
		Definition: core.ResourceDefinition{URI: "store://bundle", Name: "bundle"},
		Resolver: core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
			bundle, _ := core.NewResourceTarget(m.URI(), "bundle", nil)
			small, _ := core.NewResourceTarget("store://blobs/small", "blob", nil)
			return core.NewResourceReadPlan(bundle, small, large)
		}),
		Reader: reader,
	}
	policy := core.PerTarget(core.TargetPolicy{
		Discover: func(context.Context, core.ResourceDefinition) error { return nil },
		Visibility: func(context.Context, core.ResourceTarget) (core.Visibility, error) {
			return core.Visibility{Visible: true, DiscloseIssueURI: true}, nil
		},
		Read: func(context.Context, core.ResourceTarget) error { return nil },
	})
	res, err := core.NewResources([]core.ResourceBinding{binding}, policy,
		core.WithResourceLimits(core.ResourceLimits{MaxItemBytes: 16}))
	if err != nil {
		panic(err)
	}
	result, err := res.Read(context.Background(), "store://bundle")
	if err != nil {
		panic(err)
	}
	fmt.Println("partial:", result.Partial())
	for _, it := range result.Items()[1:] { // Items()[0] is the warning
		fmt.Println("item:", it.URI(), string(it.Blob()))
	}
	for _, is := range result.Issues() {
		fmt.Println("issue:", is.ResourceURI(), is.Code())
	}
	fmt.Println("bytes fetched:", fetched)
	// Output:
	// direct: true 64
	// partial: true
	// item: store://blobs/small tiny
	// issue: store://blobs/large budget_exceeded
	// bytes fetched: 4
}

// A store whose storage answers several items in one request implements
// Reader itself: the gateway hands it the consecutive planned items it
// serves (never more than the item-count limit leaves) in one ReadRequest,
// and it returns one ReadResult per item, keeping the bodies within each
// item's Limit and, together, within the Budget.
func ExampleReader() {
	stored := map[string]string{"store://docs/a": "alpha", "store://docs/b": "beta", "store://docs/c": "gamma"}
	requests := 0
	batch := batchReader(func(_ context.Context, req core.ReadRequest) ([]core.ReadResult, error) {
		requests++ // one storage request for the whole batch
		out := make([]core.ReadResult, len(req.Items))
		left := req.Budget
		for i, it := range req.Items {
			body, ok := stored[it.Target.URI()]
			switch size := int64(len(body)); {
			case !ok:
				out[i].Err = core.NewFailure(core.FailureUnavailable, errors.New("no such document"))
			case size > min(it.Limit, left):
				out[i].Err = &core.TooLargeError{Size: size}
			default:
				out[i].Payload = core.TextPayload("text/plain", body)
				left -= size
			}
		}
		return out, nil
	})
	binding := core.ResourceBinding{
		Definition: core.ResourceDefinition{URI: "store://docs", Name: "docs"},
		Resolver: core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
			bundle, _ := core.NewResourceTarget(m.URI(), "bundle", nil)
			var items []core.ResourceTarget
			for _, u := range []string{"store://docs/a", "store://docs/b", "store://docs/c"} {
				t, _ := core.NewResourceTarget(u, "doc", nil)
				items = append(items, t)
			}
			return core.NewResourceReadPlan(bundle, items...)
		}),
		Reader: batch,
	}
	policy := core.ResourcePolicy{
		Discover: func(context.Context, core.ResourceDefinition) error { return nil },
		Decide: func(_ context.Context, pass core.PolicyPass) ([]core.TargetDecision, error) {
			ds := make([]core.TargetDecision, len(pass.Targets))
			for i := range ds {
				ds[i] = core.TargetDecision{Visibility: core.Visibility{Visible: true}, Read: true}
			}
			return ds, nil
		},
	}
	res, err := core.NewResources([]core.ResourceBinding{binding}, policy)
	if err != nil {
		panic(err)
	}
	result, err := res.Read(context.Background(), "store://docs")
	if err != nil {
		panic(err)
	}
	for _, it := range result.Items() {
		fmt.Println(it.URI(), it.Text())
	}
	fmt.Println("storage requests:", requests)
	// Output:
	// store://docs/a alpha
	// store://docs/b beta
	// store://docs/c gamma
	// storage requests: 1
}

// batchReader adapts a function to core.Reader.
type batchReader func(ctx context.Context, req core.ReadRequest) ([]core.ReadResult, error)

func (f batchReader) Read(ctx context.Context, req core.ReadRequest) ([]core.ReadResult, error) {
	return f(ctx, req)
}
