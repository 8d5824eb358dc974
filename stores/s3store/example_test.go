package s3store_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// A client for an S3-compatible server on the local machine. No request is
// made until the client is used.
func ExampleNewClient() {
	client, err := s3store.NewClient(context.Background(), s3store.ClientConfig{
		Endpoint:        "http://127.0.0.1:7070",
		UsePathStyle:    true,
		AccessKeyID:     "AKIAEXAMPLE",
		SecretAccessKey: "example-secret",
	})
	if err != nil {
		log.Fatal(err)
	}
	o := client.Options()
	fmt.Println(o.Region, o.UsePathStyle, o.RequestChecksumCalculation == aws.RequestChecksumCalculationWhenRequired)
	// Output: us-east-1 true true
}

// A host serves the objects under "public/" of one bucket as
// asset://docs/{name}, with every request signed by the requesting
// principal's own credentials so that S3 decides access.
func ExampleBucket_Binding() {
	ctx := context.Background()
	shared, err := s3store.NewClient(ctx, s3store.ClientConfig{Endpoint: "http://127.0.0.1:7070", UsePathStyle: true,
		AccessKeyID: "service", SecretAccessKey: "service-secret"})
	if err != nil {
		log.Fatal(err)
	}
	perPrincipal := map[string]*s3.Client{} // filled by the host: one client per user
	bucket, err := s3store.OpenBucket(ctx, shared, "assets", &s3store.Options{
		Client: func(ctx context.Context, principal string) (*s3.Client, error) {
			if c, ok := perPrincipal[principal]; ok {
				return c, nil
			}
			return nil, core.NewFailure(core.FailureUnavailable, errors.New("no credentials for this principal"))
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	binding, err := bucket.Binding(core.ResourceDefinition{URITemplate: "asset://docs/{name}", Name: "doc"}, "public/")
	if err != nil {
		log.Fatal(err)
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
	// Reads HEAD public/readme.md as alice, then GETs it if unchanged.
	result, err := res.Read(core.WithCaller(ctx, core.Caller{Principal: "alice"}), "asset://docs/readme.md")
	if err != nil {
		log.Print(err)
		return
	}
	for _, it := range result.Items() {
		fmt.Println(it.URI(), it.MIMEType())
	}
}

// A database row references an object by bucket, key, ETag and version id;
// the object is planned from that identity with no request at all, and
// Bucket.Read later fetches exactly that version.
func ExampleNewObjectTarget() {
	target, err := s3store.NewObjectTarget("asset://project/7/thumbnail", s3store.Object{
		Bucket:      "assets",
		Key:         "projects/7/thumb.png",
		ETag:        `"9b2cf535f27731c974343645a3985328"`,
		VersionID:   "01M8PC4JE8F4HG7CZX4TC23E4J",
		Size:        48213,
		ContentType: "image/png",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(target.URI(), target.Representation())
	// Output: asset://project/7/thumbnail s3-object
}

// Calling the reader directly, as a host that does not use the gateway
// would: the principal and the byte limit travel in the context.
func ExampleBucket_Read() {
	ctx := context.Background()
	client, err := s3store.NewClient(ctx, s3store.ClientConfig{Endpoint: "http://127.0.0.1:7070", UsePathStyle: true,
		AccessKeyID: "service", SecretAccessKey: "service-secret"})
	if err != nil {
		log.Fatal(err)
	}
	bucket, err := s3store.OpenBucket(ctx, client, "assets", nil)
	if err != nil {
		log.Fatal(err)
	}
	obj, err := bucket.Head(core.WithCaller(ctx, core.Caller{Principal: "alice"}), "public/readme.md")
	if err != nil {
		log.Print(err)
		return
	}
	target, err := s3store.NewObjectTarget("asset://docs/readme.md", obj)
	if err != nil {
		log.Fatal(err)
	}
	p, err := bucket.Read(core.WithCaller(ctx, core.Caller{Principal: "alice"}), core.ReadItem{Target: target, Limit: 1 << 20})
	var tooLarge *core.TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		fmt.Println("over 1 MiB:", tooLarge.Size)
	case errors.Is(err, s3store.ErrChanged):
		fmt.Println("changed since HEAD; plan again")
	case err != nil:
		log.Print(err)
	default:
		fmt.Println(p.MIMEType(), p.Len())
	}
}

// Keys are checked before any request: a key that a server could normalize
// into another key is refused with its reason.
func ExampleCheckKey() {
	fmt.Println(s3store.CheckKey("docs/a b+c?.txt"))
	fmt.Println(s3store.CheckKey("docs/../secret.txt"))
	// Output:
	// <nil>
	// s3store: key has a "." or ".." segment
}
