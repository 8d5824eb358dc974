package core

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"slices"
	"strings"
)

// revisionDomain separates registry revisions from every other SHA-256 use
// and names the encoding, so that a change of encoding changes every
// revision instead of silently colliding with the old one.
const revisionDomain = "go.phpboyscout.uk/mcp/resources registry revision v1\x00"

// registryRevision is a deterministic hash of the listed definitions: every
// field a list returns, never a callback. Concrete definitions and templates
// are hashed as two counted sections, each in listing order, so the revision
// does not depend on the order of the bindings when their listing order is
// the same, and two processes with the same bindings agree on it.
//
// Encoding (all integers big-endian uint64): the domain string; the number of
// concrete definitions, then each one; the number of templates, then each
// one. A definition is its URI or template, Name, Title, Description and
// MIMEType, each as length then bytes, then a Meta presence byte (0 or 1)
// and, when present, Meta as length then bytes. Every variable-length field
// is length-prefixed, so no two distinct registries share an encoding.
//
// Only when some definition lists annotations, a size or icons does a third
// section follow: for every definition of both sections, in the same order,
// its extras as encodeExtras writes them. A registry without extras keeps
// the revision it had before extras existed, so replicas of an older build
// keep accepting its cursors; the encoding stays unambiguous because the
// first two sections delimit themselves and the third is never empty.
func registryRevision(resources, templates []*definition) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(revisionDomain))
	for _, section := range [...][]*definition{resources, templates} {
		revisionUint(h, uint64(len(section)))
		for _, d := range section {
			revisionString(h, listKey(d))
			revisionString(h, d.desc.Name)
			revisionString(h, d.desc.Title)
			revisionString(h, d.desc.Description)
			revisionString(h, d.desc.MIMEType)
			if d.desc.Meta == nil {
				h.Write([]byte{0})
			} else {
				h.Write([]byte{1})
				revisionUint(h, uint64(len(d.desc.Meta)))
				h.Write(d.desc.Meta)
			}
		}
	}
	if slices.ContainsFunc(resources, hasExtras) || slices.ContainsFunc(templates, hasExtras) {
		for _, section := range [...][]*definition{resources, templates} {
			for _, d := range section {
				h.Write(d.extras)
			}
		}
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

func revisionUint(h hash.Hash, n uint64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	h.Write(b[:])
}

func revisionString(h hash.Hash, s string) {
	revisionUint(h, uint64(len(s)))
	h.Write([]byte(s))
}

// listKey is the URI of a concrete definition or the template of a
// template definition: the first sort key of its listing.
func listKey(d *definition) string {
	if d.desc.URI != "" {
		return d.desc.URI
	}
	return d.desc.URITemplate
}

// listCompare orders definitions for listing: by URI or template, then by
// name, in byte order. The remaining listed fields break any further tie, so
// the order is total over everything a list shows and does not depend on
// the order of the bindings.
func listCompare(a, b *definition) int {
	x, y := &a.desc, &b.desc
	return cmp.Or(
		strings.Compare(listKey(a), listKey(b)),
		strings.Compare(x.Name, y.Name),
		strings.Compare(x.Title, y.Title),
		strings.Compare(x.Description, y.Description),
		strings.Compare(x.MIMEType, y.MIMEType),
		cmp.Compare(btoi(x.Meta != nil), btoi(y.Meta != nil)), // no metadata first
		bytes.Compare(x.Meta, y.Meta),
		bytes.Compare(a.extras, b.extras), // annotations, size and icons
	)
}

// btoi is 1 for true and 0 for false.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
