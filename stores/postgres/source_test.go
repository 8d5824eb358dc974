package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
)

func allowAllPolicy() core.ResourcePolicy { return DatabaseDecides() }

// TestSourceStatementsServeNothingUntilChecked: a binding built but not
// accepted by Source.Check fails its reads with ErrNotChecked behind the
// gateway's failure, and sends no statement: a forgotten Check is loud at
// the first read, never a silent unchecked statement.
func TestSourceStatementsServeNothingUntilChecked(t *testing.T) {
	db := &countingDB{}
	src, err := NewSource(db, SourceOptions{Role: "docs_reader"})
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
	_, err = res.Read(core.WithCaller(context.Background(), core.Caller{Principal: "alice"}), "doc://t/1")
	if !errors.Is(err, ErrNotChecked) {
		t.Fatalf("read: %v, want a failure whose cause is ErrNotChecked", err)
	}
	if n := db.sent.Load(); n != 0 {
		t.Fatalf("%d batches sent before Check", n)
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
