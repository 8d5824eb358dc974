package core

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

type pair struct{ a, b int }

func overlapPairs(t *testing.T, s *selector) map[pair]string {
	t.Helper()
	got, complete := s.templateOverlaps()
	if !complete {
		t.Fatal("report incomplete")
	}
	m := map[pair]string{}
	for _, o := range got {
		if o.FirstBinding >= o.SecondBinding {
			t.Fatalf("overlap %+v not ordered by binding", o)
		}
		m[pair{o.FirstBinding, o.SecondBinding}] = o.Example
	}
	return m
}

func TestTemplateOverlaps(t *testing.T) {
	tests := []struct {
		rule     string
		entries  []string
		maxBytes int
		want     map[pair]string
	}{
		{"same shape with different names overlap", []string{"a://x/{id}/y", "a://x/{name}/y"}, 0, map[pair]string{{0, 1}: "a://x/x/y"}},
		{"literal and variable that cross overlap", []string{"a://x/{id}/y", "a://x/z/{k}"}, 0, map[pair]string{{0, 1}: "a://x/z/y"}},
		{"a variable-free template overlaps a variable", []string{"a://x/{id}/y", "T a://x/2/y"}, 0, map[pair]string{{0, 1}: "a://x/2/y"}},
		{"an exact registration of the only shared URI removes the overlap", []string{"a://x/{id}/y", "a://x/z/{k}", "a://x/z/y"}, 0, map[pair]string{}},
		{"an exact registration moves the example", []string{"a://x/{a}", "a://x/{b}", "a://x/x"}, 0, map[pair]string{{0, 1}: "a://x/x0"}},
		{"distinct literals are disjoint", []string{"a://x/{id}/y", "a://x/{id}/z"}, 0, map[pair]string{}},
		{"different segment counts are disjoint", []string{"a://x/{id}", "a://x/{id}/y", "a://x/{id}/"}, 0, map[pair]string{}},
		{"different suffixes are disjoint", []string{"a://x/{id}", "a://x/{k}?v=1", "a://x/{j}#f"}, 0, map[pair]string{}},
		{"different origins are disjoint", []string{"a://x/{id}", "a://y/{id}", "b://x/{id}", "a:/{id}"}, 0, map[pair]string{}},
		{"shared suffix overlaps", []string{"a://x/{id}?v=1", "a://x/{k}?v=1"}, 0, map[pair]string{{0, 1}: "a://x/x?v=1"}},
		{"three templates give three pairs", []string{"a://x/{a}/{b}", "a://x/p/{c}", "a://x/{d}/q", "a://x/r/s/t"}, 0,
			map[pair]string{{0, 1}: "a://x/p/x", {0, 2}: "a://x/x/q", {1, 2}: "a://x/p/q"}},
		{"a shared URI over the limit is no overlap", []string{
			"a://x/{a}/" + strings.Repeat("b", 40),
			"a://x/" + strings.Repeat("c", 40) + "/{d}",
		}, 64, map[pair]string{}},
	}
	for _, tc := range tests {
		t.Run(tc.rule, func(t *testing.T) {
			maxBytes := tc.maxBytes
			if maxBytes == 0 {
				maxBytes = 2048
			}
			s, err := newSelector(selDefs(tc.entries...), maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			got := overlapPairs(t, s)
			if len(got) != len(tc.want) {
				t.Fatalf("overlaps %v, want %v", got, tc.want)
			}
			for p, ex := range tc.want {
				if got[p] != ex {
					t.Fatalf("overlap %v example %q, want %q (all: %v)", p, got[p], ex, got)
				}
				if _, err := s.match(ex); KindOf(err) != FailureAmbiguous {
					t.Fatalf("example %q: %v, want ambiguous", ex, err)
				}
			}
		})
	}
}

// TestTemplateOverlapsAgreesWithPairwiseCheck compares the trie walk with
// a direct check of every pair on random small registries.
func TestTemplateOverlapsAgreesWithPairwiseCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	origins := []string{"a://x", "a://y", "a:"}
	segs := []string{"", "p", "q", "{v}"}
	suffixes := []string{"", "?s", "#f"}
	for round := 0; round < 200; round++ {
		seen := map[string]bool{}
		var entries []string
		for len(entries) < 12 {
			var b strings.Builder
			b.WriteString(origins[rng.IntN(len(origins))])
			n := 1 + rng.IntN(3)
			for i := 0; i < n; i++ {
				if i > 0 || !strings.HasSuffix(b.String(), ":") {
					b.WriteByte('/')
				}
				s := segs[rng.IntN(len(segs))]
				if s == "{v}" {
					s = fmt.Sprintf("{v%d}", i)
				}
				b.WriteString(s)
			}
			b.WriteString(suffixes[rng.IntN(len(suffixes))])
			e := "T " + b.String()
			if rng.IntN(4) == 0 && !strings.Contains(e, "{") {
				e = b.String() // an exact registration
			}
			if _, err := parseTemplate(b.String(), 2048); err != nil {
				continue // "a:" + "" + "/{v}" is an authority
			}
			if !seen[b.String()] {
				seen[b.String()] = true
				entries = append(entries, e)
			}
		}
		s, err := newSelector(selDefs(entries...), 2048)
		if err != nil {
			t.Fatalf("%q: %v", entries, err)
		}
		got := overlapPairs(t, s)
		want := map[pair]bool{}
		for i := range entries {
			for j := i + 1; j < len(entries); j++ {
				if pairwiseOverlap(s, entries[i], entries[j]) {
					want[pair{i, j}] = true
				}
			}
		}
		if len(got) != len(want) {
			t.Fatalf("registry %q: walk %v, pairwise %v", entries, got, want)
		}
		for p, ex := range got {
			if !want[p] {
				t.Fatalf("registry %q: walk reports %v, pairwise does not", entries, p)
			}
			a, _ := strings.CutPrefix(entries[p.a], "T ")
			b, _ := strings.CutPrefix(entries[p.b], "T ")
			if _, ok := oracleMatches(a, ex); !ok {
				t.Fatalf("example %q does not match %q", ex, a)
			}
			if _, ok := oracleMatches(b, ex); !ok {
				t.Fatalf("example %q does not match %q", ex, b)
			}
		}
	}
}

// pairwiseOverlap: both templates, aligned segment by segment, with every
// variable that faces another variable free; shadowed only when no segment
// is free and the single shared URI is an exact registration.
func pairwiseOverlap(s *selector, x, y string) bool {
	a, okA := strings.CutPrefix(x, "T ")
	b, okB := strings.CutPrefix(y, "T ")
	if !okA || !okB {
		return false
	}
	ta, _ := parseTemplate(a, 2048)
	tb, _ := parseTemplate(b, 2048)
	if ta.origin != tb.origin || ta.suffix != tb.suffix || len(ta.segs) != len(tb.segs) {
		return false
	}
	free := false
	parts := make([]string, len(ta.segs))
	for i := range ta.segs {
		sa, sb := ta.segs[i], tb.segs[i]
		switch {
		case sa.name != "" && sb.name != "":
			free, parts[i] = true, "x"
		case sa.name != "":
			parts[i] = sb.lit
			if sb.lit == "" {
				return false
			}
		case sb.name != "":
			parts[i] = sa.lit
			if sa.lit == "" {
				return false
			}
		case sa.lit != sb.lit:
			return false
		default:
			parts[i] = sa.lit
		}
	}
	_, shadowed := s.exact[ta.origin+strings.Join(parts, "/")+ta.suffix]
	return free || !shadowed
}

func TestTemplateOverlapsIsBounded(t *testing.T) {
	entries := make([]string, 2000)
	for i := range entries {
		entries[i] = fmt.Sprintf("a://x/{v%d}", i)
	}
	s, err := newSelector(selDefs(entries...), 2048)
	if err != nil {
		t.Fatal(err)
	}
	got, complete := s.templateOverlaps()
	if complete || len(got) != maxOverlapReports {
		t.Fatalf("got %d overlaps, complete %v; want %d, false", len(got), complete, maxOverlapReports)
	}
	got[0].First = "changed"
	if again, _ := s.templateOverlaps(); again[0].First == "changed" {
		t.Fatal("report shares its slice with the caller")
	}
}

func TestResourcesTemplateOverlaps(t *testing.T) {
	b := []ResourceBinding{
		selBinding(ResourceDefinition{URITemplate: "asset://p/{id}/thumb", Name: "a"}),
		selBinding(ResourceDefinition{URI: "asset://p/special/thumb", Name: "b"}),
		selBinding(ResourceDefinition{URITemplate: "asset://p/{id}/{size}", Name: "c"}),
		selBinding(ResourceDefinition{URITemplate: "asset://p/{id}", Name: "d"}),
	}
	r, err := NewResources(b, selPolicy())
	if err != nil {
		t.Fatal(err)
	}
	got, complete := r.TemplateOverlaps()
	want := TemplateOverlap{First: "asset://p/{id}/thumb", FirstBinding: 0, Second: "asset://p/{id}/{size}", SecondBinding: 2, Example: "asset://p/x/thumb"}
	if !complete || len(got) != 1 || got[0] != want {
		t.Fatalf("TemplateOverlaps() = %+v, %v; want [%+v], true", got, complete, want)
	}
}
