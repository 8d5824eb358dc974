package s3store

import (
	"context"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// TracerName is the instrumentation scope name of [WithTracing]'s spans.
const TracerName = "go.phpboyscout.uk/mcp/resources/stores/s3store"

// Span and attribute names of [WithTracing]'s spans.
const (
	// SpanPrefix prefixes a request span's name: "s3." and the operation,
	// for example "s3.GetObject".
	SpanPrefix     = "s3."
	attrRPCSystem  = "rpc.system"  // always "aws-api"
	attrRPCService = "rpc.service" // always "S3"
	attrRPCMethod  = "rpc.method"  // the operation, for example "GetObject"
	attrHTTPStatus = "http.response.status_code"
)

// WithTracing returns an S3 client option (for [NewClient]'s optFns or
// [s3.New]) that records one span per S3 operation, retries included, as
// a child of the span in the context the store's call got (the gateway's
// plan, decision or item span). The spans name the operation and the HTTP
// status only: never the bucket, the object key, the endpoint or any
// credential. It uses only the OpenTelemetry API; a nil tp leaves the
// client unchanged.
func WithTracing(tp trace.TracerProvider) func(*s3.Options) {
	return func(o *s3.Options) {
		if tp == nil {
			return
		}
		t := tp.Tracer(TracerName)
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("mcpresTrace",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					op := awsmiddleware.GetOperationName(ctx)
					ctx, span := t.Start(ctx, SpanPrefix+op, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
						attribute.String(attrRPCSystem, "aws-api"), attribute.String(attrRPCService, "S3"), attribute.String(attrRPCMethod, op)))
					defer span.End()
					out, md, err := next.HandleInitialize(ctx, in)
					if r, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && r != nil {
						span.SetAttributes(attribute.Int(attrHTTPStatus, r.StatusCode))
					}
					if err != nil {
						span.SetStatus(codes.Error, "")
					}
					return out, md, err
				}), middleware.After)
		})
	}
}
