package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
	"go.phpboyscout.uk/mcp/resources/stores/storetest"
)

// TestS3StoreConformance runs the storetest suite against the S3 store on
// versitygw: each suite principal is a versitygw user of its own, and an
// item's readers are the users a bucket policy lets s3:GetObject its key,
// so Revoke and Restore rewrite the policy and S3 enforces them.
func TestS3StoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, newS3Harness)
}

// s3Harness implements storetest.Harness over one fresh versioned bucket.
type s3Harness struct {
	env   harness.S3Env
	root  *s3.Client
	store *s3store.Bucket
	wire  *wire
	users map[string]string // suite principal -> versitygw access key
	next  atomic.Int64

	mu     sync.Mutex
	types  map[string]string   // key -> content type
	grants map[string][]string // key -> suite principals
}

var (
	_ storetest.Harness     = (*s3Harness)(nil)
	_ storetest.BodyCounter = (*s3Harness)(nil)
)

func newS3Harness(ctx context.Context, t *testing.T) (storetest.Harness, error) {
	env := harness.S3Users(t)
	h := &s3Harness{env: env, root: s3Client(t, env, nil), wire: &wire{}, users: map[string]string{},
		types: map[string]string{}, grants: map[string][]string{}}
	clients := map[string]*s3.Client{}
	for _, p := range storetest.Principals() {
		user := env.NewUser(t, uniqueUser(t, p))
		h.users[p] = user.AccessKey
		clients[p] = s3Client(t, user, h.wire)
	}
	store, err := s3store.OpenBucket(ctx, h.root, env.Bucket, &s3store.Options{
		Client: func(_ context.Context, principal string) (*s3.Client, error) {
			c, ok := clients[principal]
			if !ok {
				return nil, core.NewFailure(core.FailureUnavailable, errors.New("no S3 user for this principal"))
			}
			return c, nil
		},
	})
	if err != nil {
		return nil, err
	}
	h.store = store
	return h, nil
}

const conformancePrefix = "s3conf://items/"

func (h *s3Harness) Binding() core.ResourceBinding {
	b, err := h.store.Binding(core.ResourceDefinition{URITemplate: conformancePrefix + "{name}", Name: "item"}, "items/")
	if err != nil {
		panic(err) // a constant, valid configuration
	}
	return b
}

func (h *s3Harness) key(uri string) (string, error) {
	name, ok := strings.CutPrefix(uri, conformancePrefix)
	if !ok {
		return "", fmt.Errorf("not an item URI of this harness: %q", uri)
	}
	return "items/" + name, nil
}

func (h *s3Harness) Create(ctx context.Context, it storetest.Item) (string, error) {
	name := fmt.Sprintf("item-%d", h.next.Add(1))
	key := "items/" + name
	if _, err := h.put(ctx, key, it.MIMEType, it.Body); err != nil {
		return "", err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.types[key] = it.MIMEType
	h.grants[key] = slices.Clone(it.Readers)
	return conformancePrefix + name, h.writePolicy(ctx)
}

func (h *s3Harness) put(ctx context.Context, key, ct string, body []byte) (*s3.PutObjectOutput, error) {
	return h.root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(h.env.Bucket), Key: aws.String(key),
		Body: bytes.NewReader(body), ContentType: aws.String(ct)})
}

func (h *s3Harness) Change(ctx context.Context, uri string, body []byte) error {
	key, err := h.key(uri)
	if err != nil {
		return err
	}
	h.mu.Lock()
	ct := h.types[key]
	h.mu.Unlock()
	_, err = h.put(ctx, key, ct, body)
	return err
}

func (h *s3Harness) Revoke(ctx context.Context, uri, principal string) error {
	return h.setReader(ctx, uri, principal, false)
}

func (h *s3Harness) Restore(ctx context.Context, uri, principal string) error {
	return h.setReader(ctx, uri, principal, true)
}

func (h *s3Harness) setReader(ctx context.Context, uri, principal string, allowed bool) error {
	key, err := h.key(uri)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	readers := slices.DeleteFunc(h.grants[key], func(p string) bool { return p == principal })
	if allowed {
		readers = append(readers, principal)
	}
	h.grants[key] = readers
	return h.writePolicy(ctx)
}

func (h *s3Harness) Delete(ctx context.Context, uri string) error {
	key, err := h.key(uri)
	if err != nil {
		return err
	}
	_, err = h.root.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(h.env.Bucket), Key: aws.String(key)})
	return err
}

func (h *s3Harness) Context(ctx context.Context, principal string) context.Context {
	return core.WithCaller(ctx, core.Caller{Principal: principal})
}

// BodyReads counts the GETs that the principals' clients sent: the only
// requests that fetch a body.
func (h *s3Harness) BodyReads() int64 { return h.wire.gets.Load() }

// writePolicy replaces the bucket policy with the current grants; h.mu is
// held.
func (h *s3Harness) writePolicy(ctx context.Context) error {
	byUser := map[string][]string{}
	for key, readers := range h.grants {
		for _, p := range readers {
			user, ok := h.users[p]
			if !ok {
				return fmt.Errorf("principal %q has no versitygw user", p)
			}
			byUser[user] = append(byUser[user], key)
		}
	}
	for _, keys := range byUser {
		slices.Sort(keys)
	}
	return setGrants(ctx, h.root, h.env.Bucket, byUser)
}
