package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"go.phpboyscout.uk/mcp/resources/core"
)

// ErrChanged is the cause of a read whose object no longer has the planned
// identity: S3 answered 412 to If-Match, or the ETag, version id or size it
// reported differs from the plan. The gateway reports it as read_failed
// (retryable: a fresh read plans the new version).
var ErrChanged = errors.New("s3store: object changed since it was planned")

// errEmptyRange is classify's answer to 416 on the ranged GET: S3 and
// versitygw answer a range starting at 0 with 416 only when the object is
// empty (and after If-Match passed: 412 comes first), so the read is an
// empty body.
var errEmptyRange = errors.New("s3store: range not satisfiable (empty object)")

// errServer wraps throttling, 5xx, connection failures and other answers
// that a later read may not get.
var errServer = errors.New("s3store: S3 request failed")

// throttleCodes are the error codes S3 and S3-compatible servers answer
// when they shed load (with 503 or 429, or on their own).
var throttleCodes = map[string]bool{
	"SlowDown": true, "Throttling": true, "ThrottlingException": true, "RequestLimitExceeded": true,
	"TooManyRequests": true, "RequestThrottled": true, "ServiceUnavailable": true,
}

// classify maps an error of an S3 operation to what the gateway branches on:
// core.FailureUnavailable for 403, 404, a missing version or key, a missing bucket
// and 405 (a version that is a delete marker); ErrChanged for 412;
// errEmptyRange for 416; the error itself for cancellation and deadlines
// (the gateway reports the item's deadline as timeout); core.FailureOutage
// wrapping errServer for an S3 that is down or shedding load (5xx,
// throttling, the SDK's retry quota spent, a request that could not be
// sent or whose answer was cut off; all after the SDK's bounded retries),
// which the gateway reports as FailureOutage while planning and as
// read_failed for a body; and a plain error wrapping errServer for
// everything else (other 4xx), which is read_failed, or FailureInvalidPlan
// while planning. The cause stays behind Unwrap for logs; the gateway never
// shows a cause to a client.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	code := ""
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code = apiErr.ErrorCode()
	}
	status := 0
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	switch code {
	case "NoSuchKey", "NoSuchVersion", "NoSuchBucket", "AccessDenied", "NotFound":
		return core.NewFailure(core.FailureUnavailable, err)
	case "PreconditionFailed":
		return fmt.Errorf("%w: %w", ErrChanged, err)
	case "InvalidRange":
		return fmt.Errorf("%w: %w", errEmptyRange, err)
	}
	switch status {
	case http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed:
		return core.NewFailure(core.FailureUnavailable, err)
	case http.StatusPreconditionFailed:
		return fmt.Errorf("%w: %w", ErrChanged, err)
	case http.StatusRequestedRangeNotSatisfiable:
		return fmt.Errorf("%w: %w", errEmptyRange, err)
	}
	if status >= 500 || status == http.StatusTooManyRequests || throttleCodes[code] || unreachable(err) {
		return core.NewFailure(core.FailureOutage, fmt.Errorf("%w: %w", errServer, err))
	}
	return fmt.Errorf("%w: %w", errServer, err)
}

// unreachable reports whether err says that S3 did not answer: the request
// could not be sent or its answer was cut off (smithy's RequestSendError
// and a network error, EOF or a closed connection under it), or the SDK's
// client-side retry quota refused another attempt during an outage.
func unreachable(err error) bool {
	var send *smithyhttp.RequestSendError
	var quota *ratelimit.QuotaExceededError
	var netErr net.Error
	return errors.As(err, &send) || errors.As(err, &quota) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

// classifyVersioned is classify for a request that names a version id: S3
// answers a version id it cannot parse with 400 InvalidArgument, and such a
// version can never be read, so it is a missing version (unavailable), not
// a retryable failure. The store's own requests carry no other argument
// that S3 could call invalid.
func classifyVersioned(err error) error {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode() == "InvalidArgument" {
		return core.NewFailure(core.FailureUnavailable, err)
	}
	return classify(err)
}
