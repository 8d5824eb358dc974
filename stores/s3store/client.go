package s3store

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"go.phpboyscout.uk/mcp/resources/core"
)

// defaultRegion is the signing region [NewClient] uses for a custom endpoint
// when [ClientConfig.Region] is empty.
const defaultRegion = "us-east-1"

// idleConnections is how many idle connections to the S3 server the
// default HTTP client of [NewClient] keeps for reuse. A store talks to one
// host, so it is also the bound over all hosts. The SDK's own default
// keeps 10 per host: under more concurrent reads than that, each read past
// the tenth opened a connection and closed it after one request.
const idleConnections = 100

// ClientConfig says how [NewClient] reaches an S3 server.
type ClientConfig struct {
	// Endpoint is the base URL of an S3-compatible server, with scheme,
	// such as http://127.0.0.1:7070. Empty means AWS S3 itself.
	Endpoint string
	// Region is the signing region. Empty means us-east-1 for a custom
	// endpoint, and the default chain's region (AWS_REGION, the shared
	// configuration files) for AWS S3.
	Region string
	// UsePathStyle addresses buckets as http://host/bucket/key instead of
	// http://bucket.host/key. MinIO, versitygw and most S3-compatible
	// servers need it.
	UsePathStyle bool
	// AccessKeyID and SecretAccessKey are static credentials; set both or
	// neither. Without them the SDK's default credential chain (environment,
	// shared files, web identity, container and instance roles) is used.
	AccessKeyID string
	// SecretAccessKey is the secret that belongs to AccessKeyID.
	SecretAccessKey string
	// SessionToken is the optional session token of temporary static
	// credentials.
	SessionToken string
	// HTTPClient sends the requests; nil means the SDK's default client,
	// keeping up to 100 idle connections to the server (the SDK keeps 10).
	HTTPClient s3.HTTPClient
	// RetryMaxAttempts bounds the attempts of one operation (throttling,
	// 5xx and connection errors are retried with backoff, always inside the
	// caller's context deadline). Zero means the SDK default of 3.
	RetryMaxAttempts int
}

// NewClient returns an [*s3.Client] for cfg, set up the way the S3 store
// needs it against AWS S3 and S3-compatible servers alike: the configured
// endpoint and addressing style, checksums calculated and validated only
// when an operation requires them (S3-compatible servers reject the SDK's
// newer defaults, and a ranged GET has no whole-object checksum to
// validate), and the SDK's "response has no supported checksum" log
// silenced. With static credentials no shared AWS configuration is read, so
// nothing outside cfg changes what the client talks to; without them the
// SDK's default chain is loaded, which may block on ctx. optFns adjust the
// options last, as in [s3.New].
//
// Errors are *core.ConfigError values naming the offending field, or the
// default chain's loading error.
func NewClient(ctx context.Context, cfg ClientConfig, optFns ...func(*s3.Options)) (*s3.Client, error) {
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return nil, core.ConfigPath{Field: "ClientConfig.Endpoint"}.Reject("must be an http or https URL with a host and no credentials", err)
		}
	}
	if (cfg.AccessKeyID == "") != (cfg.SecretAccessKey == "") {
		return nil, core.ConfigPath{Field: "ClientConfig.AccessKeyID"}.Reject("set both AccessKeyID and SecretAccessKey, or neither for the default chain", nil)
	}
	if cfg.RetryMaxAttempts < 0 {
		return nil, core.ConfigPath{Field: "ClientConfig.RetryMaxAttempts"}.Reject("must not be negative", nil)
	}
	region := cfg.Region
	if region == "" && cfg.Endpoint != "" {
		region = defaultRegion
	}
	settings := func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		if region != "" {
			o.Region = region
		}
		o.UsePathStyle = cfg.UsePathStyle
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		o.DisableLogOutputChecksumValidationSkipped = true
		keepIdle := func(tr *http.Transport) { tr.MaxIdleConns, tr.MaxIdleConnsPerHost = idleConnections, idleConnections }
		switch bc, buildable := o.HTTPClient.(*awshttp.BuildableClient); {
		case cfg.HTTPClient != nil:
			o.HTTPClient = cfg.HTTPClient
		case o.HTTPClient == nil:
			o.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(keepIdle)
		case buildable:
			// The default chain's client (with AWS_CA_BUNDLE's roots, say):
			// kept, with the idle bound.
			o.HTTPClient = bc.WithTransportOptions(keepIdle)
		}
		if cfg.RetryMaxAttempts > 0 {
			o.RetryMaxAttempts = cfg.RetryMaxAttempts
		}
	}
	fns := append([]func(*s3.Options){settings}, optFns...)
	if cfg.AccessKeyID != "" {
		if region == "" {
			return nil, core.ConfigPath{Field: "ClientConfig.Region"}.Reject("required with static credentials and no endpoint", nil)
		}
		var o s3.Options
		o.Credentials = credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)
		return s3.New(o, fns...), nil
	}
	var loadOpts []func(*config.LoadOptions) error
	if region != "" {
		loadOpts = append(loadOpts, config.WithRegion(region))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("s3store: load the default AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, core.ConfigPath{Field: "ClientConfig.Region"}.Reject("no region configured and the default chain has none", nil)
	}
	return s3.NewFromConfig(awsCfg, fns...), nil
}
