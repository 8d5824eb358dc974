package integration

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"go.phpboyscout.uk/mcp/resources/integration/harness"
)

// httpStatus returns the HTTP status code carried by an SDK error, or 0.
func httpStatus(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func getBody(t *testing.T, c *s3.Client, in *s3.GetObjectInput) (string, *s3.GetObjectOutput) {
	t.Helper()
	out, err := c.GetObject(t.Context(), in)
	if err != nil {
		t.Fatalf("get %s: %v", aws.ToString(in.Key), err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("read %s: %v", aws.ToString(in.Key), err)
	}
	return string(b), out
}

// TestS3Smoke proves the harness hands out a versioned bucket of the test's
// own on a server that honours what the S3 store relies on: put and get,
// reads of an older version by VersionId, and If-Match refusing a wrong ETag
// with 412.
func TestS3Smoke(t *testing.T) {
	t.Parallel()
	env := harness.S3(t)
	c := env.Client()
	ctx := t.Context()
	bucket, key := aws.String(env.Bucket), aws.String("smoke/hello.txt")

	v, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: bucket})
	if err != nil {
		t.Fatalf("get versioning: %v", err)
	}
	if v.Status != types.BucketVersioningStatusEnabled {
		t.Fatalf("versioning status %q, want Enabled", v.Status)
	}

	first, err := c.PutObject(ctx, &s3.PutObjectInput{
		Bucket: bucket, Key: key, Body: strings.NewReader("first"), ContentType: aws.String("text/plain"),
	})
	if err != nil {
		t.Fatalf("put: %v", err)
	}
	if aws.ToString(first.ETag) == "" || aws.ToString(first.VersionId) == "" {
		t.Fatalf("put returned ETag %q, VersionId %q; want both set", aws.ToString(first.ETag), aws.ToString(first.VersionId))
	}

	body, out := getBody(t, c, &s3.GetObjectInput{Bucket: bucket, Key: key, IfMatch: first.ETag})
	if body != "first" || aws.ToString(out.ETag) != aws.ToString(first.ETag) {
		t.Fatalf("get returned %q with ETag %q, want %q with ETag %q", body, aws.ToString(out.ETag), "first", aws.ToString(first.ETag))
	}

	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: bucket, Key: key, Body: strings.NewReader("second")}); err != nil {
		t.Fatalf("put second version: %v", err)
	}
	if body, _ := getBody(t, c, &s3.GetObjectInput{Bucket: bucket, Key: key, VersionId: first.VersionId}); body != "first" {
		t.Fatalf("get by first VersionId returned %q, want %q", body, "first")
	}

	// The current version has a new ETag, so the first one no longer matches.
	for _, etag := range []string{aws.ToString(first.ETag), `"00000000000000000000000000000000"`} {
		_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: bucket, Key: key, IfMatch: aws.String(etag)})
		if got := httpStatus(err); got != http.StatusPreconditionFailed {
			t.Fatalf("get with If-Match %s: status %d (err %v), want 412", etag, got, err)
		}
	}
}

// TestS3BucketRemovedAtCleanup proves a test's bucket is gone once the test
// ends, even with several object versions, a delete marker and an
// unfinished multipart upload in it.
func TestS3BucketRemovedAtCleanup(t *testing.T) {
	t.Parallel()
	probe := harness.S3(t).Client() // same server and credentials; skips here when there is none
	var inner string
	t.Run("owner", func(t *testing.T) {
		env := harness.S3(t)
		inner = env.Bucket
		c := env.Client()
		ctx := t.Context()
		b := aws.String(env.Bucket)
		for _, s := range []string{"v1", "v2"} {
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("k"), Body: strings.NewReader(s)}); err != nil {
				t.Fatalf("put: %v", err)
			}
		}
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String("k")}); err != nil {
			t.Fatalf("delete (marker): %v", err)
		}
		if _, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("pending")}); err != nil {
			t.Fatalf("create multipart upload: %v", err)
		}
	})
	if inner == "" {
		t.Fatal("subtest did not get a bucket")
	}

	_, err := probe.HeadBucket(t.Context(), &s3.HeadBucketInput{Bucket: aws.String(inner)})
	if got := httpStatus(err); got != http.StatusNotFound {
		t.Fatalf("head bucket %s after its test ended: status %d (err %v), want 404", inner, got, err)
	}
}
