package main

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/mcpsdk"
)

// TestMetricsCountEachFailureKindApartWithAFixedVocabulary proves that the
// request counter's kind label names each failure kind on its own (a
// storage outage is not counted as an invalid plan or a policy failure),
// that an error without a kind is "internal", and that the store-call
// counter tells an outage from another error; no label carries a cause.
func TestMetricsCountEachFailureKindApartWithAFixedVocabulary(t *testing.T) {
	m := newMetrics()
	canary := errors.New("CANARY 10.1.2.3 secret")
	for _, err := range []error{
		core.NewFailure(core.FailureOutage, canary),
		core.NewFailure(core.FailureOutage, canary),
		core.NewFailure(core.FailureInvalidPlan, canary),
		core.NewFailure(core.FailurePolicy, canary),
		core.NewFailure(core.FailureNoItems, canary),
		core.NewFailure(core.FailureUnavailable, canary),
		canary,
	} {
		m.observe(context.Background(), mcpsdk.Observation{Method: mcpsdk.MethodReadResource, Duration: time.Millisecond, Err: err})
	}
	m.storeCall("postgres", "resolve", time.Now(), core.Outage(canary))
	m.storeCall("postgres", "resolve", time.Now(), canary)
	m.storeCall("s3", "read", time.Now(), core.Unavailable(canary))

	rec := httptest.NewRecorder()
	m.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	text := string(body)
	for _, want := range []string{
		`mcpres_requests_total{kind="storage outage",method="resources/read",outcome="failed"} 2`,
		`mcpres_requests_total{kind="invalid plan",method="resources/read",outcome="failed"} 1`,
		`mcpres_requests_total{kind="policy failure",method="resources/read",outcome="failed"} 1`,
		`mcpres_requests_total{kind="no item survived",method="resources/read",outcome="failed"} 1`,
		`mcpres_requests_total{kind="unavailable",method="resources/read",outcome="failed"} 1`,
		`mcpres_requests_total{kind="internal",method="resources/read",outcome="failed"} 1`,
		`mcpres_store_calls_total{op="resolve",outcome="outage",store="postgres"} 1`,
		`mcpres_store_calls_total{op="resolve",outcome="error",store="postgres"} 1`,
		`mcpres_store_calls_total{op="read",outcome="unavailable",store="s3"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(text, "CANARY") || strings.Contains(text, "FailureKind(") {
		t.Errorf("a label carries a cause or an unnamed kind")
	}
}
