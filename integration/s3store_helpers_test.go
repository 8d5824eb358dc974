package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// wire counts what an S3 client sends and receives: requests by method at
// the round tripper, and bytes read from the network at the connection.
type wire struct {
	gets, heads, others atomic.Int64
	received            atomic.Int64
	// afterResponse, when set, runs after each response's headers arrive
	// and before the client sees them.
	afterResponse atomic.Pointer[func(*http.Request)]
}

// httpClient returns an HTTP client whose traffic w counts.
func (w *wire) httpClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, n: &w.received}, nil
	}
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		switch r.Method {
		case http.MethodGet:
			w.gets.Add(1)
		case http.MethodHead:
			w.heads.Add(1)
		default:
			w.others.Add(1)
		}
		resp, err := tr.RoundTrip(r)
		if f := w.afterResponse.Load(); f != nil && err == nil {
			(*f)(r)
		}
		return resp, err
	})}
}

func (w *wire) reset() {
	w.gets.Store(0)
	w.heads.Store(0)
	w.others.Store(0)
	w.received.Store(0)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// s3Client returns a client of env (root credentials unless env says
// otherwise) built by s3store.NewClient, whose traffic w counts when w is
// not nil.
func s3Client(t testing.TB, env harness.S3Env, w *wire, optFns ...func(*s3.Options)) *s3.Client {
	t.Helper()
	cfg := s3store.ClientConfig{Endpoint: env.Endpoint, Region: env.Region, UsePathStyle: true,
		AccessKeyID: env.AccessKey, SecretAccessKey: env.SecretKey}
	if w != nil {
		cfg.HTTPClient = w.httpClient()
	}
	c, err := s3store.NewClient(context.Background(), cfg, optFns...)
	if err != nil {
		t.Fatalf("s3store.NewClient: %v", err)
	}
	return c
}

// putObject stores body at key with content type ct and returns its
// identity as PutObject reported it.
func putObject(t testing.TB, c *s3.Client, bucket, key, ct string, body []byte) s3store.Object {
	t.Helper()
	out, err := c.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body), ContentType: aws.String(ct),
	})
	if err != nil {
		t.Fatalf("put %q: %v", key, err)
	}
	return s3store.Object{Bucket: bucket, Key: key, ETag: aws.ToString(out.ETag), VersionID: aws.ToString(out.VersionId),
		Size: int64(len(body)), ContentType: ct}
}

// allowAll is a policy under which everything is visible and readable, so
// that what a test proves is the store's own enforcement.
func allowAll() core.ResourcePolicy { return core.PerTarget(allowTargets()) }

// allowTargets is allowAll as the per-target callbacks, for a test that
// replaces one of them.
func allowTargets() core.TargetPolicy {
	return core.TargetPolicy{
		Discover: func(context.Context, core.ResourceDefinition) error { return nil },
		Visibility: func(context.Context, core.ResourceTarget) (core.Visibility, error) {
			return core.Visibility{Visible: true, DiscloseIssueURI: true}, nil
		},
		Read: func(context.Context, core.ResourceTarget) error { return nil },
	}
}

// gateway registers bindings under policy.
func gateway(t testing.TB, policy core.ResourcePolicy, limits core.ResourceLimits, bindings ...core.ResourceBinding) *core.Resources {
	t.Helper()
	res, err := core.NewResources(bindings, policy, core.WithResourceLimits(limits))
	if err != nil {
		t.Fatalf("NewResources: %v", err)
	}
	return res
}

// bundleBinding registers uri as a bundle of the current objects at keys,
// planned with Bucket.Head and pinned by ETag, whose items are
// s3item://bundle/0, s3item://bundle/1, ... in key order.
func bundleBinding(b *s3store.Bucket, uri string, keys ...string) core.ResourceBinding {
	return core.ResourceBinding{
		Definition: core.ResourceDefinition{URI: uri, Name: "bundle"},
		Resolver: core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
			req, err := core.NewResourceTarget(m.URI(), "bundle", nil)
			if err != nil {
				return core.ResourceReadPlan{}, err
			}
			items := make([]core.ResourceTarget, len(keys))
			for i, key := range keys {
				obj, err := b.Head(ctx, key)
				if err != nil {
					return core.ResourceReadPlan{}, err
				}
				obj.VersionID = ""
				if items[i], err = s3store.NewObjectTarget(fmt.Sprintf("s3item://bundle/%d", i), obj); err != nil {
					return core.ResourceReadPlan{}, err
				}
			}
			return core.NewResourceReadPlan(req, items...)
		}),
		Reader: core.ItemReader(b.Read),
	}
}

// codes returns the issue codes of res by disclosed URI.
func codes(res *core.ResourceResult) map[string]core.IssueCode {
	m := map[string]core.IssueCode{}
	for _, is := range res.Issues() {
		m[is.ResourceURI()] = is.Code()
	}
	return m
}

// bodies returns the bodies of res's application items by URI.
func bodies(res *core.ResourceResult) map[string]string {
	m := map[string]string{}
	for _, it := range res.Items() {
		if strings.HasPrefix(it.URI(), "mcp-warning:") {
			continue
		}
		if it.IsBlob() {
			m[it.URI()] = string(it.Blob())
		} else {
			m[it.URI()] = it.Text()
		}
	}
	return m
}

// versitygwBinary finds the versitygw binary as the harness does, or skips
// (fails under MCPRES_INTEGRATION=require) through the harness's count.
func versitygwBinary(t testing.TB) string {
	t.Helper()
	return harness.VersitygwBinary(t)
}

// setGrants replaces the bucket policy with one that lets each user
// s3:GetObject the keys listed for it; no grants deletes the policy.
func setGrants(ctx context.Context, c *s3.Client, bucket string, grants map[string][]string) error {
	type statement struct {
		Effect    string              `json:"Effect"`
		Principal map[string][]string `json:"Principal"`
		Action    []string            `json:"Action"`
		Resource  []string            `json:"Resource"`
	}
	var stmts []statement
	for user, keys := range grants {
		if len(keys) == 0 {
			continue
		}
		var arns []string
		for _, k := range keys {
			arns = append(arns, "arn:aws:s3:::"+bucket+"/"+k)
		}
		stmts = append(stmts, statement{Effect: "Allow", Principal: map[string][]string{"AWS": {user}},
			Action: []string{"s3:GetObject"}, Resource: arns})
	}
	if len(stmts) == 0 {
		_, err := c.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String(bucket)})
		return err
	}
	doc, err := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": stmts})
	if err != nil {
		return err
	}
	_, err = c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(string(doc))})
	return err
}

// uniqueUser returns a user name unique to this run (versitygw users are
// global to the server that the tests share).
func uniqueUser(t testing.TB, base string) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s%x", base, b)
}

// pinnedBundle is a binding of the concrete URI uri whose plan is always
// targets, in order, read by reader: a bundle of objects whose identity the
// test already pinned.
func pinnedBundle(uri, name string, reader core.Reader, targets []core.ResourceTarget) core.ResourceBinding {
	return core.ResourceBinding{
		Definition: core.ResourceDefinition{URI: uri, Name: name},
		Resolver: core.ResolverFunc(func(context.Context, core.ResourceMatch) (core.ResourceReadPlan, error) {
			requested, err := core.NewResourceTarget(uri, "bundle", nil)
			if err != nil {
				return core.ResourceReadPlan{}, err
			}
			return core.NewResourceReadPlan(requested, targets...)
		}),
		Reader: reader,
	}
}

// whole asks for target with the default item limit.
func whole(target core.ResourceTarget) core.ReadItem {
	return core.ReadItem{Target: target, Limit: core.DefaultResourceLimits().MaxItemBytes}
}
