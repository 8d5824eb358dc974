package core

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"
)

// minCursorKeyBytes is the shortest signing key WithCursorKey accepts.
const minCursorKeyBytes = 32

// listEntry is a definition in listing order with its cost in a page: its
// encoded size plus one separating comma.
type listEntry struct {
	def  *definition
	cost int64
}

// listing holds what List and ListTemplates need: both sorted views, the
// registry revision and the cursor key and clock. It is immutable after init.
type listing struct {
	resources []listEntry
	templates []listEntry
	revision  [sha256.Size]byte
	key       []byte
	now       func() time.Time
}

// init sorts the definitions for listing, computes the registry revision and
// sets the cursor key (a fresh random 32-byte key when key is nil) and clock.
func (l *listing) init(defs []*definition, key []byte, now func() time.Time) error {
	switch {
	case key == nil:
		key = make([]byte, minCursorKeyBytes)
		if _, err := rand.Read(key); err != nil {
			return configErr("WithCursorKey", "no key given and crypto/rand failed: "+err.Error())
		}
	case len(key) < minCursorKeyBytes:
		return configErr("WithCursorKey", fmt.Sprintf("key must be at least %d bytes, got %d", minCursorKeyBytes, len(key)))
	default:
		key = bytes.Clone(key)
	}
	if now == nil {
		now = time.Now
	}
	var resources, templates []*definition
	for _, d := range defs {
		if d.desc.URITemplate != "" {
			templates = append(templates, d)
		} else {
			resources = append(resources, d)
		}
	}
	slices.SortFunc(resources, listCompare)
	slices.SortFunc(templates, listCompare)
	*l = listing{
		resources: listEntries(resources),
		templates: listEntries(templates),
		revision:  registryRevision(resources, templates),
		key:       key,
		now:       now,
	}
	return nil
}

func listEntries(defs []*definition) []listEntry {
	out := make([]listEntry, len(defs))
	for i, d := range defs {
		out[i] = listEntry{def: d, cost: int64(definitionSize(d.desc)) + 1}
	}
	return out
}

// Revision returns the registry revision in hex: a deterministic hash of
// every listed field of every definition. Two Resources values with the same
// definitions have the same revision; it is meant for logs and operations.
func (r *Resources) Revision() string { return hex.EncodeToString(r.list.revision[:]) }
