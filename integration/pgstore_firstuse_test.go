package integration

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// lockedBuffer is a log sink that concurrent reads may write to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// neverChecked is a gateway of one document binding on the documents
// schema whose host, like a host that forgot a step, never calls
// Source.Check; role is the role its statements run as.
func neverChecked(t *testing.T, role string) (*core.Resources, *lockedBuffer, string) {
	t.Helper()
	url, admin := newDocsDB(t)
	pool := newPool(t, url, nil)
	id := acmeDocument(t, admin)
	logs := &lockedBuffer{}
	src, err := postgres.NewSource(pool, postgres.SourceOptions{Name: "docs", Role: role, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	b, err := src.Binding(postgres.SQLBinding{
		Definition: core.ResourceDefinition{URITemplate: "doc://tenants/{tenant}/documents/{id}", Name: "document"},
		Plan: `SELECT d.id AS key, d.xmin AS version, d.content_type AS mime
			FROM documents d WHERE d.tenant_id = $tenant AND d.id::text = $id`,
		Body: `SELECT d.body, d.xmin AS version FROM documents d WHERE d.id::text = $key`,
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := core.NewResources([]core.ResourceBinding{b}, postgres.DatabaseDecides())
	if err != nil {
		t.Fatal(err)
	}
	return res, logs, docURI("acme", id)
}

// TestSourceNeverCheckedServesAfterItsCheckAtFirstUse: a host that never
// calls Source.Check is served: the first reads, at once, wait for the one
// check the source runs itself, and then read the document; nothing is
// logged.
func TestSourceNeverCheckedServesAfterItsCheckAtFirstUse(t *testing.T) {
	t.Parallel()
	res, logs, uri := neverChecked(t, "docs_reader")
	cs := connectAs(t, res, "alice")
	var wg sync.WaitGroup
	errs := make([]string, 8)
	for i := range errs {
		wg.Go(func() {
			got, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
			switch {
			case err != nil:
				errs[i] = err.Error()
			case len(got.Contents) != 1 || got.Contents[0].Text != "the plan":
				errs[i] = "contents " + got.Contents[0].Text
			}
		})
	}
	wg.Wait()
	for i, e := range errs {
		if e != "" {
			t.Errorf("read %d: %s", i, e)
		}
	}
	if s := logs.String(); s != "" {
		t.Errorf("a source that serves logged:\n%s", s)
	}
}

// TestSourceNeverCheckedThatCannotServeLogsOnceWhy: a host that never calls
// Source.Check on a source that cannot serve (its role does not exist)
// gets the typed storage outage for every read, not "could not be
// planned", and the log has exactly one ERROR line, naming the source and
// why, however many reads there were.
func TestSourceNeverCheckedThatCannotServeLogsOnceWhy(t *testing.T) {
	t.Parallel()
	res, logs, uri := neverChecked(t, "no_such_reader")
	cs := connectAs(t, res, "alice")
	var wg sync.WaitGroup
	errs := make([]string, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = readErr(t, cs, uri) })
	}
	wg.Wait()
	for range 3 {
		errs = append(errs, readErr(t, cs, uri))
	}
	for i, e := range errs {
		if !strings.Contains(e, "resource storage is temporarily unavailable") {
			t.Errorf("read %d: %s, want the storage outage", i, e)
		}
		if strings.Contains(e, "no_such_reader") {
			t.Errorf("read %d: the client got the private reason: %s", i, e)
		}
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d log lines, want exactly one:\n%s", len(lines), logs.String())
	}
	for _, want := range []string{"level=ERROR", "source=docs", `role \"no_such_reader\" does not exist`, "Source.Check"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("the log line lacks %s:\n%s", want, lines[0])
		}
	}
}
