package core

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
)

// selector picks the definition of a request URI: an exact registration
// first, else the only matching template; a request that two or more
// templates match is ambiguous, never an arbitrary pick. Templates live in a
// segment trie per origin (scheme and authority), so a match costs one map
// lookup per path segment and at most two branches (literal, variable) per
// segment, whatever the number of templates.
type selector struct {
	exact     map[string]*definition
	origins   map[string]*node
	templates []*template // binding order
	maxURI    int

	overlapOnce sync.Once
	overlaps    []TemplateOverlap
	overlapsAll bool
}

// node is a position between path segments. A template ends at the node of
// its last segment, keyed by its literal suffix (query and fragment).
type node struct {
	lit  map[string]*node
	v    *node // the whole-segment variable child, shared by every name
	end  map[string][]*template
	keys []string // sorted keys of lit, for deterministic overlap walks
	ends []string // sorted keys of end
}

// errNoMatch is the private cause of a FailureUnavailable for a request
// that no registration matches.
var errNoMatch = errors.New("no registered URI or template matches the request")

// ambiguousMatchError is the private cause (reachable with errors.As from
// the [FailureAmbiguous] failure) of a request that two or more templates
// match. The public message of the failure names no template.
type ambiguousMatchError struct {
	// Templates holds two of the matching templates.
	Templates []string
}

// Error names the matching templates; it is meant for logs, not clients.
func (e *ambiguousMatchError) Error() string {
	return "request matches templates " + strings.Join(e.Templates, " and ")
}

func newSelector(defs []*definition, maxURI int) (*selector, error) {
	s := &selector{exact: map[string]*definition{}, origins: map[string]*node{}, maxURI: maxURI}
	seen := map[string]struct{}{}
	for _, d := range defs {
		if d.desc.URI != "" {
			if _, dup := s.exact[d.desc.URI]; dup {
				return nil, definitionError(d.index, d.desc, "URI", "is registered twice", nil)
			}
			s.exact[d.desc.URI] = d
			continue
		}
		raw := d.desc.URITemplate
		t, err := parseTemplate(raw, maxURI)
		if err != nil {
			return nil, definitionError(d.index, d.desc, "URITemplate", err.Error(), errors.Unwrap(err))
		}
		if _, dup := seen[raw]; dup {
			return nil, definitionError(d.index, d.desc, "URITemplate", "is registered twice", nil)
		}
		seen[raw] = struct{}{}
		t.def = d
		s.insert(t)
	}
	for _, n := range s.origins {
		n.freeze()
	}
	return s, nil
}

func (s *selector) insert(t *template) {
	n := s.origins[t.origin]
	if n == nil {
		n = &node{}
		s.origins[t.origin] = n
	}
	for _, seg := range t.segs {
		if seg.name != "" {
			if n.v == nil {
				n.v = &node{}
			}
			n = n.v
			continue
		}
		c := n.lit[seg.lit]
		if c == nil {
			if n.lit == nil {
				n.lit = map[string]*node{}
			}
			c = &node{}
			n.lit[seg.lit] = c
		}
		n = c
	}
	if n.end == nil {
		n.end = map[string][]*template{}
	}
	n.end[t.suffix] = append(n.end[t.suffix], t)
	s.templates = append(s.templates, t)
}

// freeze records sorted keys below n. It uses an explicit stack: a trie
// is as deep as its longest template.
func (n *node) freeze() {
	stack := []*node{n}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n.keys = slices.Sorted(maps.Keys(n.lit))
		stack = slices.AppendSeq(stack, maps.Values(n.lit))
		n.ends = slices.Sorted(maps.Keys(n.end))
		if n.v != nil {
			stack = append(stack, n.v)
		}
	}
}

func (s *selector) match(uri string) (ResourceMatch, error) {
	if err := checkURI(uri, s.maxURI); err != nil {
		return ResourceMatch{}, NewFailure(FailureInvalidRequest, err)
	}
	if d, ok := s.exact[uri]; ok {
		return ResourceMatch{uri: uri, def: d}, nil
	}
	origin, path, suffix := splitURI(uri)
	var found [2]*template
	k := 0
	if root := s.origins[origin]; root != nil {
		k = find(root, path, suffix, &found, 0)
	}
	switch k {
	case 0:
		return ResourceMatch{}, NewFailure(FailureUnavailable, errNoMatch)
	case 2:
		return ResourceMatch{}, NewFailure(FailureAmbiguous, &ambiguousMatchError{Templates: []string{found[0].raw, found[1].raw}})
	}
	t := found[0]
	var vars []capture
	rest := path
	for _, seg := range t.segs {
		raw := rest
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			raw, rest = rest[:i], rest[i+1:]
		}
		if seg.name == "" {
			continue
		}
		v, bad := decodeCapture(raw)
		if bad != 0 {
			return ResourceMatch{}, NewFailure(FailureInvalidRequest, &captureError{Variable: seg.name, Reason: bad})
		}
		if vars == nil {
			vars = make([]capture, 0, len(t.segs))
		}
		vars = append(vars, capture{name: seg.name, value: v})
	}
	return ResourceMatch{uri: uri, def: t.def, vars: vars}, nil
}

// find counts (up to two) the templates below n that match the remaining
// path segments and the suffix, storing them in found. A variable matches
// any non-empty segment here; captures are checked once one template is
// selected, so a bad capture fails the request instead of silently not
// matching.
func find(n *node, rest, suffix string, found *[2]*template, k int) int {
	seg, more := rest, false
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		seg, rest, more = rest[:i], rest[i+1:], true
	}
	if c := n.lit[seg]; c != nil {
		k = descend(c, rest, more, suffix, found, k)
	}
	if k < 2 && seg != "" && n.v != nil {
		k = descend(n.v, rest, more, suffix, found, k)
	}
	return k
}

func descend(c *node, rest string, more bool, suffix string, found *[2]*template, k int) int {
	if more {
		return find(c, rest, suffix, found, k)
	}
	for _, t := range c.end[suffix] {
		if k == 2 {
			break
		}
		found[k] = t
		k++
	}
	return k
}
