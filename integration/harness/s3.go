package harness

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/testcontainers/testcontainers-go/modules/minio"

	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// S3Env says how to reach an S3-compatible server and which bucket a test
// owns.
type S3Env struct {
	// Endpoint is the server's base URL with scheme, e.g. http://127.0.0.1:7070.
	Endpoint string
	// Region is the signing region.
	Region string
	// AccessKey and SecretKey are the credentials of a user that may create
	// buckets (the root user of the throwaway server).
	AccessKey string
	// SecretKey is the secret that belongs to AccessKey.
	SecretKey string
	// Bucket is a fresh bucket, with versioning enabled, that belongs to the
	// test alone. Empty in the server-only value used internally.
	Bucket string
	// AdminEndpoint is the versitygw admin API base URL when known (from
	// EnvS3AdminEndpoint, or the versitygw container of [S3Users]); empty
	// otherwise, for example under MinIO from testcontainers.
	AdminEndpoint string

	// admin runs a `versitygw admin` subcommand against this server; set
	// only in values from [S3Users], for [S3Env.NewUser].
	admin adminFunc
}

// NewS3Client returns a client for env's endpoint and credentials, built by
// the S3 store's own constructor (s3store.NewClient), so the tests talk to
// the server exactly as the store and the command do: path-style
// addressing, the given endpoint, checksums calculated and validated only
// when an operation requires them (S3-compatible servers reject the SDK's
// newer defaults), and the "response has no supported checksum" log
// silenced. Static credentials mean no shared AWS configuration (files,
// profiles, AWS_* variables) is consulted, so a developer's AWS setup cannot
// change what the tests talk to. optFns adjust the options last, as in
// [s3.New].
//
// For a per-principal client, copy env, set AccessKey and SecretKey, and
// call NewS3Client with the copy.
func NewS3Client(env S3Env, optFns ...func(*s3.Options)) *s3.Client {
	region := env.Region
	if region == "" {
		region = DefaultRegion
	}
	c, err := s3store.NewClient(context.Background(), s3store.ClientConfig{
		Endpoint:        env.Endpoint,
		Region:          region,
		UsePathStyle:    true,
		AccessKeyID:     env.AccessKey,
		SecretAccessKey: env.SecretKey,
	}, optFns...)
	if err != nil {
		// Only a malformed endpoint or missing credentials get here, which
		// s3ServerEnv and the container setup already rule out.
		panic(fmt.Sprintf("harness: S3 client: %v", err))
	}
	return c
}

// Client is shorthand for NewS3Client(e, optFns...).
func (e S3Env) Client(optFns ...func(*s3.Options)) *s3.Client {
	return NewS3Client(e, optFns...)
}

var (
	s3Once   sync.Once
	s3Server S3Env  // server from testcontainers
	s3Reason string // why no server is available, when it is not
	s3Err    error  // a server should have started and did not
)

// S3 returns the server's address and credentials with a fresh bucket that
// belongs to t alone, with versioning enabled. When t and its subtests have
// finished, every object version, delete marker and unfinished multipart
// upload in it is removed and the bucket is deleted. Without a server, t is
// skipped or fails as the package doc describes.
func S3(t testing.TB) S3Env {
	t.Helper()
	return withBucket(t, s3ServerEnv(t))
}

// withBucket returns env with a fresh versioned bucket that belongs to t,
// removed when t ends.
func withBucket(t testing.TB, env S3Env) S3Env {
	t.Helper()
	env.Bucket = uniqueName(t, "mcpres", '-', 63)
	client := NewS3Client(env)

	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	in := &s3.CreateBucketInput{Bucket: aws.String(env.Bucket)}
	if env.Region != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{
			LocationConstraint: types.BucketLocationConstraint(env.Region),
		}
	}
	if _, err := client.CreateBucket(ctx, in); err != nil {
		t.Fatalf("harness: create bucket %s: %v", env.Bucket, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if err := removeBucket(ctx, client, env.Bucket); err != nil {
			t.Errorf("harness: remove bucket %s: %v", env.Bucket, err)
		}
	})
	_, err := client.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{
		Bucket:                  aws.String(env.Bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled},
	})
	if err != nil {
		t.Fatalf("harness: enable versioning on %s: %v", env.Bucket, err)
	}
	return env
}

// removeBucket empties bucket of every version, delete marker and pending
// multipart upload, then deletes it.
func removeBucket(ctx context.Context, client *s3.Client, bucket string) error {
	var errs []error
	uploads := s3.NewListMultipartUploadsPaginator(client, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	for uploads.HasMorePages() {
		page, err := uploads.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list multipart uploads: %w", err)
		}
		for _, u := range page.Uploads {
			if _, err := client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
				Bucket: aws.String(bucket), Key: u.Key, UploadId: u.UploadId,
			}); err != nil {
				errs = append(errs, fmt.Errorf("abort upload %s: %w", aws.ToString(u.Key), err))
			}
		}
	}
	// Each round lists the first page again, after the previous round
	// deleted its versions: over versitygw, a paginator over a bucket of
	// 1,100 versions, deleting as it went, stopped early and left the
	// bucket not empty.
	for round := 0; round < 1000; round++ {
		page, err := client.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
		if err != nil {
			return errors.Join(append(errs, fmt.Errorf("list object versions: %w", err))...)
		}
		if len(page.Versions) == 0 && len(page.DeleteMarkers) == 0 {
			break
		}
		del := func(key, version *string) {
			if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{
				Bucket: aws.String(bucket), Key: key, VersionId: version,
			}); err != nil {
				errs = append(errs, fmt.Errorf("delete %s@%s: %w", aws.ToString(key), aws.ToString(version), err))
			}
		}
		for _, v := range page.Versions {
			del(v.Key, v.VersionId)
		}
		for _, m := range page.DeleteMarkers {
			del(m.Key, m.VersionId)
		}
		if len(errs) > 0 {
			break
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return fmt.Errorf("delete bucket: %w", err)
	}
	return nil
}

// s3ServerEnv returns the server part of S3Env (no bucket), starting a
// container on first use when needed.
func s3ServerEnv(t testing.TB) S3Env {
	t.Helper()
	if endpoint := os.Getenv(EnvS3Endpoint); endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			t.Fatalf("harness: %s must be an http(s)://host:port URL", EnvS3Endpoint)
		}
		env := S3Env{
			Endpoint:      endpoint,
			Region:        os.Getenv(EnvS3Region),
			AccessKey:     os.Getenv(EnvS3AccessKey),
			SecretKey:     os.Getenv(EnvS3SecretKey),
			AdminEndpoint: os.Getenv(EnvS3AdminEndpoint),
		}
		if env.AccessKey == "" || env.SecretKey == "" {
			t.Fatalf("harness: %s is set, so %s and %s must be set too", EnvS3Endpoint, EnvS3AccessKey, EnvS3SecretKey)
		}
		if env.Region == "" {
			env.Region = DefaultRegion
		}
		return env
	}
	s3Once.Do(startMinio)
	if s3Reason != "" {
		Unavailable(t, s3Reason)
	}
	if s3Err != nil {
		t.Fatalf("harness: %v", s3Err)
	}
	return s3Server
}

func startMinio() {
	if err := dockerHealth(); err != nil {
		s3Reason = fmt.Sprintf("no S3 server: %s is unset and Docker is unavailable; run `eval \"$(scripts/services.sh up)\"` or start Docker (docker: %s)",
			EnvS3Endpoint, oneLine(err))
		return
	}
	image := os.Getenv(EnvMinioImage)
	if image == "" {
		image = DefaultMinioImage
	}
	ctx, cancel := context.WithTimeout(context.Background(), containerStartTimeout)
	defer cancel()
	ctr, err := minio.Run(ctx, image)
	if ctr != nil {
		keepContainer(ctr)
	}
	if err != nil {
		s3Err = fmt.Errorf("start MinIO container %s: %w", image, err)
		return
	}
	hostPort, err := ctr.ConnectionString(ctx) // host:port, no scheme
	if err != nil {
		s3Err = fmt.Errorf("MinIO container address: %w", err)
		return
	}
	s3Server = S3Env{
		Endpoint:  "http://" + hostPort,
		Region:    DefaultRegion,
		AccessKey: ctr.Username,
		SecretKey: ctr.Password,
	}
}
