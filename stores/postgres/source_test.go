package postgres

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
)

func allowAllPolicy() core.ResourcePolicy { return DatabaseDecides() }

// TestSourceStatementsServeNothingUntilChecked: a binding whose statements
// no check accepted sends none of them. Its host called Source.Check (which
// failed): the read fails with ErrNotChecked behind the gateway's failure
// and the source does not check again. Its host never called Check: the
// read runs the check itself, which fails here (the DB is neither a pool
// nor a connection), so the read is the typed outage, and one ERROR line
// says why, however many reads.
func TestSourceStatementsServeNothingUntilChecked(t *testing.T) {
	for _, hostChecks := range []bool{true, false} {
		db := &countingDB{}
		var logs bytes.Buffer
		src, err := NewSource(db, SourceOptions{Role: "docs_reader", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		b, err := src.Binding(SQLBinding{
			Definition: core.ResourceDefinition{URITemplate: "doc://t/{id}", Name: "doc"},
			Plan:       `SELECT id AS key, v AS version, m AS mime FROM t WHERE id = $id`,
			Body:       `SELECT body, v AS version FROM t WHERE id = $key`,
		})
		if err != nil {
			t.Fatal(err)
		}
		res, err := core.NewResources([]core.ResourceBinding{b}, allowAllPolicy())
		if err != nil {
			t.Fatal(err)
		}
		if hostChecks && src.Check(context.Background()) == nil {
			t.Fatal("Check passed on a DB it cannot check")
		}
		want := core.FailureInvalidPlan
		if !hostChecks {
			want = core.FailureOutage
		}
		for range 3 {
			_, err = res.Read(core.WithCaller(context.Background(), core.Caller{Principal: "alice"}), "doc://t/1")
			if !errors.Is(err, ErrNotChecked) || core.KindOf(err) != want {
				t.Fatalf("host checks %v: read: %v (%v), want a %v whose cause is ErrNotChecked", hostChecks, err, core.KindOf(err), want)
			}
		}
		if n := db.sent.Load(); n != 0 {
			t.Fatalf("%d batches sent before a check passed", n)
		}
		lines := strings.Count(logs.String(), "level=ERROR")
		if hostChecks && lines != 0 || !hostChecks && (lines != 1 || !strings.Contains(logs.String(), "cannot be checked")) {
			t.Fatalf("host checks %v: the log:\n%s", hostChecks, logs.String())
		}
	}
}

// TestSourceRequiresARoleAndNamesItself: nothing defaults to the reference
// schema's role; the error names the source.
func TestSourceRequiresARoleAndNamesItself(t *testing.T) {
	_, err := NewSource(&countingDB{}, SourceOptions{Name: "billing"})
	var ce *core.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "source billing: Role") {
		t.Fatalf("got %v, want a ConfigError about source billing's Role", err)
	}
	if _, err := NewSource(&countingDB{}, SourceOptions{LoginRole: true}); err != nil {
		t.Fatalf("LoginRole without Role: %v", err)
	}
}

func TestURIPatternEscapesEachValueAsOneSegment(t *testing.T) {
	p, err := parseURIPattern("doc://tenants/{tenant_id}/documents/{id}")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.columns(); strings.Join(got, ",") != "tenant_id,id" {
		t.Fatalf("columns %v", got)
	}
	got, err := p.expand(row{"tenant_id": "a/b", "id": "x y?#%"})
	if err != nil || got != "doc://tenants/a%2Fb/documents/x%20y%3F%23%25" {
		t.Fatalf("expand: %q, %v", got, err)
	}
	if _, err := p.expand(row{"tenant_id": "a"}); err == nil {
		t.Fatal("a missing column expanded")
	}
	for _, bad := range []string{"doc://{", "doc://{a-b}", "doc://{}", "doc://x}/{a}"} {
		if _, err := parseURIPattern(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// FuzzURIPattern: the pattern parser never panics, and whatever it accepts
// expands to its literal text with each placeholder replaced by one
// escaped segment.
func FuzzURIPattern(f *testing.F) {
	for _, s := range []string{"doc://t/{a}/{b}", "{a}", "x{a}y", "{", "}", "{{a}}", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parseURIPattern(s)
		if err != nil {
			return
		}
		r := row{}
		for _, c := range p.columns() {
			r[c] = "v/"
		}
		got, err := p.expand(r)
		if err != nil {
			t.Fatalf("%q: expand: %v", s, err)
		}
		want := s
		for _, c := range p.columns() {
			want = strings.Replace(want, "{"+c+"}", "v%2F", 1)
		}
		if got != want {
			t.Fatalf("%q expanded to %q, want %q", s, got, want)
		}
	})
}

// whole asks for target with the default item limit.
func whole(target core.ResourceTarget) core.ReadItem {
	return core.ReadItem{Target: target, Limit: core.DefaultResourceLimits().MaxItemBytes}
}
