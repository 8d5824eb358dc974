package s3store

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"go.phpboyscout.uk/mcp/resources/core"
)

// sdkError wraps err the way the SDK returns an S3 error response: an
// OperationError around an AWS response error with the HTTP status.
func sdkError(status int, err error) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject",
		Err: &awshttp.ResponseError{RequestID: "req-1", ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
			Err:      err,
		}}}
}

func apiError(status int, code string) error {
	return sdkError(status, &smithy.GenericAPIError{Code: code, Message: "secret-cause-canary"})
}

// sendError wraps err the way the SDK returns a failure to send a request.
func sendError(err error) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject",
		Err: &smithyhttp.RequestSendError{Err: &url.Error{Op: "Get", URL: "http://127.0.0.1:1/b/k", Err: err}}}
}

type outcome int

const (
	unavailable outcome = iota + 1
	changed
	empty
	retryable
	ctxErr
	outage
)

func (o outcome) String() string {
	return [...]string{"", "unavailable", "changed", "empty", "retryable", "context", "outage"}[o]
}

func outcomeOf(t *testing.T, err error) outcome {
	t.Helper()
	switch {
	case core.KindOf(err) == core.FailureUnavailable:
		return unavailable
	case errors.Is(err, ErrChanged):
		return changed
	case errors.Is(err, errEmptyRange):
		return empty
	case core.KindOf(err) == core.FailureOutage:
		if !errors.Is(err, errServer) {
			t.Fatalf("an outage that does not match errServer: %v", err)
		}
		return outage
	case errors.Is(err, errServer):
		return retryable
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ctxErr
	}
	t.Fatalf("classify returned an error of no known class: %v", err)
	return 0
}

// TestClassifyMapsEveryS3AnswerToOneGatewayOutcome proves the one mapping of
// S3 answers: denial and absence are unavailable, a failed If-Match is a
// change (read_failed), 416 on the ranged GET is the empty object,
// throttling, 5xx and transport failures are core.FailureOutage (the gateway's
// FailureOutage while planning, read_failed for a body) that still match
// errServer, other 4xx are plain retryable errors, and cancellation and
// deadlines stay context errors for the gateway.
func TestClassifyMapsEveryS3AnswerToOneGatewayOutcome(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want outcome
	}{
		{"403 AccessDenied", apiError(403, "AccessDenied"), unavailable},
		{"403 from HEAD without a code", sdkError(403, &smithy.GenericAPIError{Code: "Forbidden"}), unavailable},
		{"404 NoSuchKey typed", sdkError(404, &types.NoSuchKey{}), unavailable},
		{"404 NotFound from HEAD", sdkError(404, &types.NotFound{}), unavailable},
		{"404 NoSuchVersion", apiError(404, "NoSuchVersion"), unavailable},
		{"400 NoSuchVersion", apiError(400, "NoSuchVersion"), unavailable},
		{"404 NoSuchBucket", apiError(404, "NoSuchBucket"), unavailable},
		{"405 version is a delete marker", apiError(405, "MethodNotAllowed"), unavailable},
		{"412 PreconditionFailed", apiError(412, "PreconditionFailed"), changed},
		{"412 without a code", sdkError(412, &smithy.GenericAPIError{}), changed},
		{"416 InvalidRange on an empty object", apiError(416, "InvalidRange"), empty},
		{"416 without a code", sdkError(416, &smithy.GenericAPIError{}), empty},
		{"503 SlowDown after the retries", &retry.MaxAttemptsError{Attempt: 3, Err: apiError(503, "SlowDown")}, outage},
		{"503 SlowDown", apiError(503, "SlowDown"), outage},
		{"500 InternalError", apiError(500, "InternalError"), outage},
		{"502 from a proxy without a code", sdkError(502, &smithy.GenericAPIError{}), outage},
		{"429 throttled", apiError(429, "TooManyRequests"), outage},
		{"400 SlowDown from a server that sheds load so", apiError(400, "SlowDown"), outage},
		{"retry quota spent", &ratelimit.QuotaExceededError{Available: 0, Requested: 5}, outage},
		{"connection refused", sendError(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), outage},
		{"connection refused, bare", syscall.ECONNREFUSED, outage},
		{"answer cut off", sendError(io.ErrUnexpectedEOF), outage},
		{"400 InvalidArgument", apiError(400, "InvalidArgument"), retryable},
		{"409 another 4xx", apiError(409, "OperationAborted"), retryable},
		{"not an SDK error", errors.New("something else"), retryable},
		{"canceled", sendError(context.Canceled), ctxErr},
		{"deadline", sendError(context.DeadlineExceeded), ctxErr},
		{"bare deadline", context.DeadlineExceeded, ctxErr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classify(tt.err)
			if o := outcomeOf(t, got); o != tt.want {
				t.Fatalf("classify(%v) is %v, want %v", tt.err, o, tt.want)
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("classify(%v) = %v lost its cause for logs", tt.err, got)
			}
		})
	}
	if classify(nil) != nil {
		t.Error("classify(nil) is not nil")
	}
}

// TestClassifiedErrorsShowOnlyFixedTextPublicly proves that the unavailable
// answer's public text is the gateway's fixed message, never S3's.
func TestClassifiedErrorsShowOnlyFixedTextPublicly(t *testing.T) {
	err := classify(apiError(403, "AccessDenied"))
	var f *core.Failure
	if !errors.As(err, &f) || f.Error() != "resource unavailable" {
		t.Fatalf("public text %q, want the fixed unavailable message", err.Error())
	}
}

// TestClassifyVersionedTreatsAnUnparsableVersionAsMissing proves that a
// version id S3 cannot parse (400 InvalidArgument, as versitygw and AWS
// answer) is unavailable when the request named a version, and that every
// other answer is classified as without one.
func TestClassifyVersionedTreatsAnUnparsableVersionAsMissing(t *testing.T) {
	if got := classifyVersioned(apiError(400, "InvalidArgument")); outcomeOf(t, got) != unavailable {
		t.Errorf("400 InvalidArgument with a version: %v, want unavailable", got)
	}
	for _, err := range []error{apiError(404, "NoSuchVersion"), apiError(412, "PreconditionFailed"), apiError(503, "SlowDown"), apiError(416, "InvalidRange")} {
		if a, b := outcomeOf(t, classifyVersioned(err)), outcomeOf(t, classify(err)); a != b {
			t.Errorf("%v: %v with a version, %v without", err, a, b)
		}
	}
}
