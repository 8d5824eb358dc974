package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"go.phpboyscout.uk/mcp/resources/config"
	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/bigfile"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
)

// wireCount counts what a pool's connections send: each write is one
// flush of the client, so one round trip of a request and its answer.
type wireCount struct {
	drop   atomic.Bool // once set, nothing more reaches the server
	mu     sync.Mutex
	writes int
	sent   bytes.Buffer
}

func (w *wireCount) reset() {
	w.mu.Lock()
	w.writes = 0
	w.sent.Reset()
	w.mu.Unlock()
}

func (w *wireCount) count() (int, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes, w.sent.String()
}

type countedConn struct {
	net.Conn
	w *wireCount
}

func (c countedConn) Write(p []byte) (int, error) {
	if c.w.drop.Load() {
		return len(p), nil
	}
	c.w.mu.Lock()
	c.w.writes++
	c.w.sent.Write(p)
	c.w.mu.Unlock()
	return c.Conn.Write(p)
}

// bigSource is a source over the schema of internal/bigfile with a
// binding of plan and body for each of n templates, template i of shape
// i mod shapes (shapes 0: each its own), each statement bounded by
// timeout (0: the default), and what its pool sends.
func bigSource(t *testing.T, n, shapes int, timeout time.Duration) (*postgres.Source, *wireCount) {
	t.Helper()
	url := bigDatabase(t, "mcpres_bigfile", max(shapes, n))
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	w := &wireCount{}
	dialer := &net.Dialer{}
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countedConn{c, w}, nil
	}
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := pool.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	src, err := postgres.NewSource(pool, postgres.SourceOptions{Name: "big", Role: "mcpres_bigfile", StatementTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		shape := i
		if shapes > 0 {
			shape = i % shapes
		}
		if _, err := src.Binding(postgres.SQLBinding{Definition: core.ResourceDefinition{Name: fmt.Sprintf("item-%d", i), URITemplate: fmt.Sprintf("big%d://items/{id}", i)},
			Plan: bigfile.Plan(shape), Body: bigfile.Body(shape)}); err != nil {
			t.Fatal(err)
		}
	}
	return src, w
}

// TestCheckIsBatched counts the round trips of Source.Check of 300
// templates (600 statements, each text its own): a few for the batches of
// statements and the proof, not several for each statement, as a check
// of one statement after another costs (6 a statement).
func TestCheckIsBatched(t *testing.T) {
	const n = 300
	src, w := bigSource(t, n, 0, 0)
	w.reset()
	if err := src.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	writes, _ := w.count()
	t.Logf("Check of %d templates (%d statements): %d round trips, %.3f a template", n, 2*n, writes, float64(writes)/n)
	// 600 statements are 5 batches of 3 pipelines each, the proof some 6,
	// the role's check and the connections a few more.
	if writes > 40 {
		t.Errorf("Check of %d templates sent %d round trips, want at most 40: its statements are not batched", n, writes)
	}
}

// TestCheckSendsEachStatementTextOnce counts how often a statement text
// of a file of 300 templates of one shape reaches the server during
// Source.Check: a fixed few times (prepared, prepared as the store sends
// it, run once, proved), not a few times for each of the 300.
func TestCheckSendsEachStatementTextOnce(t *testing.T) {
	const n = 300
	src, w := bigSource(t, n, 1, 0)
	w.reset()
	if err := src.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, sent := w.count()
	plan := strings.Count(sent, "'text/plain' AS mime")
	t.Logf("the plan statement of %d templates was sent %d times", n, plan)
	if plan > 5 {
		t.Errorf("the one plan statement of %d templates was sent %d times during the check, want at most 5", n, plan)
	}
	// Every template serves once checked.
	if _, ok := src.Proof(fmt.Sprintf("item-%d", n-1)); !ok {
		t.Errorf("the last template was not proved")
	}
}

// TestBatchedCheckNamesTheFirstMistakeAsOneAfterAnother proves that the
// batched check of a file of 300 templates, whose templates 200 and 250
// (in one batch) have a body naming a missing column and template 260 a
// plan naming another, reports the one line of the first, at its
// FILE:LINE:COL, exactly as the check of one statement after another does.
func TestBatchedCheckNamesTheFirstMistakeAsOneAfterAnother(t *testing.T) {
	const n = 300
	url := bigDatabase(t, "mcpres_bigfile", n)
	data := string(bigfile.File(n, 0, "mcpres_bigfile"))
	data = strings.Replace(data, bigfile.Body(200), strings.Replace(bigfile.Body(200), "i.body", "i.nobody", 1), 1)
	data = strings.Replace(data, bigfile.Body(250), strings.Replace(bigfile.Body(250), "i.body", "i.nobody", 1), 1)
	data = strings.Replace(data, "i.shape = 260 AND i.id = $id", "i.shapeless = 260 AND i.id = $id", 1)
	lines := strings.Split(data, "\n")
	want := ""
	for i, l := range lines {
		if strings.Contains(l, "i.nobody") {
			want = fmt.Sprintf("big.yaml:%d:%d: ", i+1, strings.Index(l, "SELECT")+1) // the body's value
			break
		}
	}
	env := map[string]string{"BIG_DATABASE_URL": url}
	f, err := config.Parse("big.yaml", []byte(data), &config.Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	open := func() string {
		served, err := f.Open(t.Context(), nil)
		if err == nil {
			served.Close()
			t.Fatal("a file with a broken body opened")
		}
		return err.Error()
	}
	batched := open()
	postgres.SetPipelined(false)
	defer postgres.SetPipelined(true)
	sequential := open()
	if batched != sequential {
		t.Errorf("the batched check says\n%s\nthe sequential one\n%s", batched, sequential)
	}
	if !strings.HasPrefix(batched, want) || !strings.Contains(batched, "item-200") || strings.Contains(batched, "\n") {
		t.Errorf("error %q is not one line at %q naming item-200", batched, want)
	}
}

// TestCheckOfAStalledDatabaseEndsAfterOneStatementTimeout proves that the
// deadline of a check belongs to each statement: a check under a context
// without a deadline, whose database stops answering, ends with an error
// that says so once one statement timeout (300 ms here) has passed
// without an answer, rather than waiting for ever.
func TestCheckOfAStalledDatabaseEndsAfterOneStatementTimeout(t *testing.T) {
	src, w := bigSource(t, 50, 0, 300*time.Millisecond)
	w.drop.Store(true)
	t.Cleanup(func() { w.drop.Store(false) }) // before the pool closes
	done := make(chan error, 1)
	go func() { done <- src.Check(context.Background()) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "answered no statement of the check within the statement timeout (300ms)") {
			t.Errorf("Check of a database that stopped answering: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Check of a database that stopped answering has not ended in a minute")
	}
}
