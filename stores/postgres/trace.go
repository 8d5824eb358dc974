package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// TracerName is the instrumentation scope name of [NewTracer]'s spans.
const TracerName = "go.phpboyscout.uk/mcp/resources/stores/postgres"

// Span and attribute names of [NewTracer]'s spans.
const (
	SpanBatch        = "postgres.batch" // one statement batch, as the store sends them
	SpanQuery        = "postgres.query" // one statement outside a batch
	AttrDBSystem     = "db.system.name" // always "postgresql"
	AttrBatchSize    = "db.operation.batch.size"
	AttrBatchFailed  = "db.operation.batch.failed" // statements of the batch that failed
	AttrRowsAffected = "db.response.rows_affected" // a query's command tag count
)

// NewTracer returns a pgx tracer that records one span per statement
// batch and per query outside a batch, a child of the span in the
// context the store's call got (the gateway's plan, decision or item
// span). Set it as the pool's ConnConfig.Tracer:
//
//	cfg, _ := pgxpool.ParseConfig(url)
//	cfg.ConnConfig.Tracer = postgres.NewTracer(otel.GetTracerProvider())
//
// The spans carry no SQL text, argument, principal, URI or connection
// string: only the batch size, failure count and status. It uses only the
// OpenTelemetry API; a nil tp records nothing.
func NewTracer(tp trace.TracerProvider) pgx.QueryTracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return &tracer{t: tp.Tracer(TracerName)}
}

type tracer struct{ t trace.Tracer }

// batchState counts a batch's statements as pgx reports them.
type batchState struct {
	span         trace.Span
	size, failed int
}

type batchKey struct{}

var system = attribute.String(AttrDBSystem, "postgresql")

func (t *tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	ctx, _ = t.t.Start(ctx, SpanQuery, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(system))
	return ctx
}

func (t *tracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	span := trace.SpanFromContext(ctx)
	if d.Err != nil {
		span.SetStatus(codes.Error, "")
	} else {
		span.SetAttributes(attribute.Int64(AttrRowsAffected, d.CommandTag.RowsAffected()))
	}
	span.End()
}

// TraceBatchStart implements pgx.BatchTracer.
func (t *tracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	ctx, span := t.t.Start(ctx, SpanBatch, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(system))
	n := 0
	if d.Batch != nil {
		n = d.Batch.Len()
	}
	return context.WithValue(ctx, batchKey{}, &batchState{span: span, size: n})
}

// TraceBatchQuery implements pgx.BatchTracer.
func (t *tracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	if b, ok := ctx.Value(batchKey{}).(*batchState); ok && d.Err != nil {
		b.failed++
	}
}

// TraceBatchEnd implements pgx.BatchTracer.
func (t *tracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchEndData) {
	b, ok := ctx.Value(batchKey{}).(*batchState)
	if !ok {
		return
	}
	b.span.SetAttributes(attribute.Int(AttrBatchSize, b.size), attribute.Int(AttrBatchFailed, b.failed))
	if d.Err != nil || b.failed > 0 {
		b.span.SetStatus(codes.Error, "")
	}
	b.span.End()
}
