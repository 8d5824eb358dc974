package audit

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"

	"go.phpboyscout.uk/mcp/resources/mcpsdk"
)

// OTelLog returns an [mcpsdk.Auditor] that emits each event as one
// OpenTelemetry log record through logger, then hands it to next (nil:
// none) and returns next's answer. The record is emitted with the
// request's context, so that an SDK links it to the request's span; its
// timestamp is the event's Time, its event name "mcpres.audit", its body
// the event's JSON (the form [JSONFile] writes) and its attributes the
// method, result, error kind and principal, to filter on. Like every
// event it holds no body, token or secret, but it does hold principals
// and URIs: send it to a log pipeline kept apart from the others.
//
// Emitting never refuses a read: in Refuse mode put the [Trail] as next,
// whose answer then decides.
func OTelLog(logger log.Logger, next mcpsdk.Auditor) mcpsdk.Auditor {
	return otelLog{logger: logger, next: next}
}

type otelLog struct {
	logger log.Logger
	next   mcpsdk.Auditor
}

// Audit implements [mcpsdk.Auditor].
func (o otelLog) Audit(ctx context.Context, e *mcpsdk.AuditEvent) error {
	if b, err := json.Marshal(e); err == nil {
		var r log.Record
		r.SetEventName("mcpres.audit")
		r.SetTimestamp(e.Time)
		r.SetSeverity(log.SeverityInfo)
		r.SetBody(attribute.StringValue(string(b)))
		r.AddAttributes(attribute.String("mcpres.audit.method", e.Method), attribute.String("mcpres.audit.result", e.Result))
		if e.ErrorKind != "" {
			r.AddAttributes(attribute.String("mcpres.audit.error_kind", e.ErrorKind))
		}
		if e.Principal != "" {
			r.AddAttributes(attribute.String("mcpres.audit.principal", e.Principal))
		}
		o.logger.Emit(ctx, r)
	}
	if o.next == nil {
		return nil
	}
	return o.next.Audit(ctx, e)
}
