package audit

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/log/embedded"

	"go.phpboyscout.uk/mcp/resources/mcpsdk"
)

// recordingLogger keeps every record emitted.
type recordingLogger struct {
	embedded.Logger
	mu      sync.Mutex
	records []log.Record
}

func (l *recordingLogger) Emit(_ context.Context, r log.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
}

func (l *recordingLogger) Enabled(context.Context, log.EnabledParameters) bool { return true }

// refusing is an auditor that accepts nothing.
type refusing struct{}

func (refusing) Audit(context.Context, *mcpsdk.AuditEvent) error { return errors.New("down") }

// Each event is one log record carrying the event as its body and its
// method, result and principal as attributes; the next auditor's answer
// is the answer.
func TestOTelLogEmitsOneRecordPerEvent(t *testing.T) {
	l := &recordingLogger{}
	e := &mcpsdk.AuditEvent{Time: time.Unix(1700000000, 0).UTC(), Method: "resources/read", URI: "doc://a", Principal: "alice", Result: "complete",
		Items: []mcpsdk.AuditItem{{URI: "doc://a", Version: "3", Size: 5}}}
	if err := OTelLog(l, nil).Audit(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	if err := OTelLog(l, refusing{}).Audit(context.Background(), e); err == nil {
		t.Fatal("the next auditor's refusal was lost")
	}
	if len(l.records) != 2 {
		t.Fatalf("%d records, want 2", len(l.records))
	}
	r := l.records[0]
	var got mcpsdk.AuditEvent
	if err := json.Unmarshal([]byte(r.Body().AsString()), &got); err != nil {
		t.Fatal(err)
	}
	if r.EventName() != "mcpres.audit" || !r.Timestamp().Equal(e.Time) || got.URI != "doc://a" || len(got.Items) != 1 || got.Items[0].Version != "3" {
		t.Fatalf("record %q at %v: %s", r.EventName(), r.Timestamp(), r.Body().AsString())
	}
	attrs := map[string]string{}
	r.WalkAttributes(func(kv attribute.KeyValue) bool { attrs[string(kv.Key)] = kv.Value.AsString(); return true })
	if attrs["mcpres.audit.method"] != "resources/read" || attrs["mcpres.audit.result"] != "complete" || attrs["mcpres.audit.principal"] != "alice" {
		t.Fatalf("attributes %v", attrs)
	}
}
