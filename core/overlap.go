package core

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Bounds of the overlap report: pairs of trie positions visited, and
// overlaps returned.
const (
	maxOverlapSteps   = 1 << 20
	maxOverlapReports = 1024
)

// TemplateOverlap names two registered templates that both match at least
// one valid request URI that no exact registration takes first. Such a
// request fails with [FailureAmbiguous]; fix it before a client hits it by
// making the templates disjoint (a distinct literal segment, or a different
// number of segments) or by registering the contested URI exactly.
type TemplateOverlap struct {
	// First is the template of the earlier binding.
	First string
	// FirstBinding is the index of First's binding in [NewResources]' slice.
	FirstBinding int
	// Second is the template of the later binding.
	Second string
	// SecondBinding is the index of Second's binding.
	SecondBinding int
	// Example is a shortest request URI that both templates match (a
	// variable that faces another variable is shown as "x").
	Example string
}

// TemplateOverlaps reports the pairs of templates that some request can
// match at once, ordered by binding indices. Hosts can call it after
// [NewResources] (in a test or at start-up) to catch ambiguity before a
// request does. The first call computes the report, with bounded work: when
// complete is false, the bound was reached and further overlaps may exist.
// A pair whose only shared URI is longer than MaxURIBytes, or is an exact
// registration, is not an overlap. Each call returns a fresh slice.
func (r *Resources) TemplateOverlaps() (overlaps []TemplateOverlap, complete bool) {
	return r.sel.templateOverlaps()
}

func (s *selector) templateOverlaps() ([]TemplateOverlap, bool) {
	s.overlapOnce.Do(func() {
		w := overlapWalk{s: s}
		for _, o := range slices.Sorted(maps.Keys(s.origins)) {
			w.origin = o
			n := s.origins[o]
			if !w.walk(n, n) {
				break
			}
		}
		slices.SortFunc(w.out, func(a, b TemplateOverlap) int {
			return cmp.Or(cmp.Compare(a.FirstBinding, b.FirstBinding), cmp.Compare(a.SecondBinding, b.SecondBinding))
		})
		s.overlaps, s.overlapsAll = w.out, !w.stopped
	})
	return slices.Clone(s.overlaps), s.overlapsAll
}

// overlapWalk walks pairs of trie positions that one request can reach at
// the same time. A pair (a, a) stands for two templates in the same subtree;
// it leads to pairs of distinct subtrees only as (literal, variable), so
// every pair of templates is met once.
type overlapWalk struct {
	s       *selector
	origin  string
	path    []overlapSeg
	steps   int
	out     []TemplateOverlap
	stopped bool
}

// overlapSeg is one segment of the example URI; free when both templates
// have a variable there.
type overlapSeg struct {
	lit  string
	free bool
}

// walk returns false once a bound is reached.
func (w *overlapWalk) walk(a, b *node) bool {
	if w.steps++; w.steps > maxOverlapSteps {
		w.stopped = true
		return false
	}
	if !w.leaves(a, b) {
		return false
	}
	same := a == b
	for _, k := range a.keys {
		if d := b.lit[k]; d != nil {
			if !w.step(a.lit[k], d, overlapSeg{lit: k}) {
				return false
			}
		}
	}
	if a.v != nil && b.v != nil {
		if !w.step(a.v, b.v, overlapSeg{free: true}) {
			return false
		}
	}
	// A variable never matches an empty segment, so it faces only
	// non-empty literals.
	if b.v != nil {
		for _, k := range a.keys {
			if k != "" && !w.step(a.lit[k], b.v, overlapSeg{lit: k}) {
				return false
			}
		}
	}
	if a.v != nil && !same {
		for _, k := range b.keys {
			if k != "" && !w.step(a.v, b.lit[k], overlapSeg{lit: k}) {
				return false
			}
		}
	}
	return true
}

func (w *overlapWalk) step(a, b *node, seg overlapSeg) bool {
	w.path = append(w.path, seg)
	ok := w.walk(a, b)
	w.path = w.path[:len(w.path)-1]
	return ok
}

// leaves records the overlaps of templates that end at a and b.
func (w *overlapWalk) leaves(a, b *node) bool {
	for _, suffix := range a.ends {
		ta, tb := a.end[suffix], b.end[suffix]
		for i, x := range ta {
			from := 0
			if a == b {
				from = i + 1
			}
			for _, y := range tb[from:] {
				if !w.record(x, y, suffix) {
					return false
				}
			}
		}
	}
	return true
}

func (w *overlapWalk) record(x, y *template, suffix string) bool {
	example, ok := w.example(suffix)
	if !ok {
		return true
	}
	if len(w.out) == maxOverlapReports {
		w.stopped = true
		return false
	}
	if x.def.index > y.def.index {
		x, y = y, x
	}
	w.out = append(w.out, TemplateOverlap{
		First: x.raw, FirstBinding: x.def.index,
		Second: y.raw, SecondBinding: y.def.index,
		Example: example,
	})
	return true
}

// example builds a shortest URI on the current path that no exact
// registration takes first; ok is false when none exists within the URI
// limit.
func (w *overlapWalk) example(suffix string) (string, bool) {
	build := func(alt string) string {
		var b strings.Builder
		b.WriteString(w.origin)
		first := true
		for i, seg := range w.path {
			if i > 0 {
				b.WriteByte('/')
			}
			switch {
			case !seg.free:
				b.WriteString(seg.lit)
			case first:
				b.WriteString(alt)
				first = false
			default:
				b.WriteString("x")
			}
		}
		b.WriteString(suffix)
		return b.String()
	}
	free := slices.ContainsFunc(w.path, func(s overlapSeg) bool { return s.free })
	ex := build("x")
	for i := 0; ; i++ {
		if len(ex) > w.s.maxURI {
			return "", false
		}
		if _, shadowed := w.s.exact[ex]; !shadowed {
			return ex, true
		}
		if !free || i > len(w.s.exact) {
			return "", false
		}
		ex = build("x" + strconv.Itoa(i))
	}
}
