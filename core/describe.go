package core

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"go.phpboyscout.uk/mcp/resources/internal/mediatype"
)

// Annotations are the optional client hints that MCP lists with a resource
// or a resource template. The zero value lists as an empty object; leave
// [ResourceDefinition.Annotations] nil to list none.
type Annotations struct {
	// Audience names who the resource is meant for: "user", "assistant" or
	// both, each at most once.
	Audience []string
	// Priority is the importance from 0 (least) to 1 (most), or nil when
	// unset. A set zero is listed as 0.
	Priority *float64
	// LastModified is an RFC 3339 timestamp such as "2025-01-12T15:00:58Z",
	// listed byte for byte, or "" when unknown.
	LastModified string
}

// Icon is one icon that MCP lists with a resource or a resource template.
type Icon struct {
	// Src is the icon's absolute URI (for example https: or data:);
	// required.
	Src string
	// MIMEType is the optional media type of the icon.
	MIMEType string
	// Sizes are optional size hints such as "48x48" or "any".
	Sizes []string
	// Theme is "", "light" or "dark".
	Theme string
}

// Audience values an [Annotations] may name.
const (
	audienceUser      = "user"
	audienceAssistant = "assistant"
)

// cloneAnnotations returns a copy that shares nothing with a.
func cloneAnnotations(a *Annotations) *Annotations {
	if a == nil {
		return nil
	}
	c := *a
	c.Audience = slices.Clone(a.Audience)
	if a.Priority != nil {
		p := *a.Priority
		c.Priority = &p
	}
	return &c
}

// cloneIcons returns a copy that shares nothing with icons.
func cloneIcons(icons []Icon) []Icon {
	c := slices.Clone(icons)
	for i := range c {
		c[i].Sizes = slices.Clone(c[i].Sizes)
	}
	return c
}

// cloneDefinitionExtras makes d own its annotations, size and icons.
func cloneDefinitionExtras(d *ResourceDefinition) {
	d.Annotations = cloneAnnotations(d.Annotations)
	if d.Size != nil {
		n := *d.Size
		d.Size = &n
	}
	d.Icons = cloneIcons(d.Icons)
}

// checkDefinitionExtras validates the annotations, size and icons of d and
// returns the field and rule that a bad one breaks.
func checkDefinitionExtras(d *ResourceDefinition) (field, reason string) {
	if a := d.Annotations; a != nil {
		seen := map[string]bool{}
		for _, role := range a.Audience {
			switch {
			case role != audienceUser && role != audienceAssistant:
				return "Annotations.Audience", `must hold only "user" and "assistant"`
			case seen[role]:
				return "Annotations.Audience", "must not repeat a role"
			}
			seen[role] = true
		}
		if p := a.Priority; p != nil && (math.IsNaN(*p) || *p < 0 || *p > 1) {
			return "Annotations.Priority", "must be between 0 and 1"
		}
		if a.LastModified != "" {
			if _, err := time.Parse(time.RFC3339, a.LastModified); err != nil {
				return "Annotations.LastModified", "must be an RFC 3339 timestamp"
			}
		}
	}
	if d.Size != nil {
		switch {
		case d.URITemplate != "":
			return "Size", "is listed for concrete resources only, not templates"
		case *d.Size < 0:
			return "Size", "must not be negative"
		}
	}
	for _, ic := range d.Icons {
		if err := checkURI(ic.Src, maxDefinitionBytes); err != nil {
			return "Icons.Src", err.Error()
		}
		if ic.MIMEType != "" && !mediatype.Valid(ic.MIMEType) {
			return "Icons.MIMEType", "is not a valid media type"
		}
		for _, s := range ic.Sizes {
			if s == "" || !utf8.ValidString(s) {
				return "Icons.Sizes", "must be non-empty valid UTF-8"
			}
		}
		if ic.Theme != "" && ic.Theme != "light" && ic.Theme != "dark" {
			return "Icons.Theme", `must be "", "light" or "dark"`
		}
	}
	return "", ""
}

// sizeExtras adds the encoded size of the annotations, size and icons of d
// as a listed description carries them:
//
//	,"annotations":{"audience":[..],"priority":P,"lastModified":T}
//	,"size":N
//	,"icons":[{"src":S,"mimeType":M,"sizes":[..],"theme":T}]
//
// Empty parts are left out; annotations appear whenever they are set.
func sizeExtras(s *sizer, d ResourceDefinition) {
	if a := d.Annotations; a != nil {
		s.lit(`,"annotations":{`)
		sep := ""
		if len(a.Audience) > 0 {
			s.lit(`"audience":`)
			sizeStrings(s, a.Audience)
			sep = ","
		}
		if a.Priority != nil {
			s.lit(sep + `"priority":`)
			s.n += len(appendJSONFloat(nil, *a.Priority))
			sep = ","
		}
		if a.LastModified != "" {
			s.lit(sep + `"lastModified":`)
			s.str(a.LastModified)
		}
		s.lit(`}`)
	}
	if d.Size != nil {
		s.lit(`,"size":`)
		s.n += len(strconv.FormatInt(*d.Size, 10))
	}
	if len(d.Icons) > 0 {
		s.lit(`,"icons":[`)
		for i, ic := range d.Icons {
			if i > 0 {
				s.lit(`,`)
			}
			s.lit(`{"src":`)
			s.str(ic.Src)
			if ic.MIMEType != "" {
				s.lit(`,"mimeType":`)
				s.str(ic.MIMEType)
			}
			if len(ic.Sizes) > 0 {
				s.lit(`,"sizes":`)
				sizeStrings(s, ic.Sizes)
			}
			if ic.Theme != "" {
				s.lit(`,"theme":`)
				s.str(ic.Theme)
			}
			s.lit(`}`)
		}
		s.lit(`]`)
	}
}

func sizeStrings(s *sizer, xs []string) {
	s.lit(`[`)
	for i, x := range xs {
		if i > 0 {
			s.lit(`,`)
		}
		s.str(x)
	}
	s.lit(`]`)
}

// appendJSONFloat appends f as encoding/json writes a float64.
func appendJSONFloat(dst []byte, f float64) []byte {
	b, err := json.Marshal(f)
	if err != nil { // NaN and infinities are rejected before sizing
		return append(dst, "null"...)
	}
	return append(dst, b...)
}

// encodeExtras is the canonical encoding of the annotations, size and icons
// of d that the registry revision hashes and listing order compares last.
// Every variable-length part is length- or count-prefixed (big-endian
// uint64), so distinct extras never share an encoding:
//
//	annotations: 0, or 1, audience count and strings, priority 0 or 1 and
//	its IEEE 754 bits, lastModified
//	size: 0, or 1 and the size
//	icons: count, then per icon src, mimeType, sizes count and strings, theme
func encodeExtras(d ResourceDefinition) []byte {
	var b []byte
	u := func(n uint64) { b = binary.BigEndian.AppendUint64(b, n) }
	str := func(s string) { u(uint64(len(s))); b = append(b, s...) }
	if a := d.Annotations; a == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		u(uint64(len(a.Audience)))
		for _, x := range a.Audience {
			str(x)
		}
		if a.Priority == nil {
			b = append(b, 0)
		} else {
			b = append(b, 1)
			u(math.Float64bits(*a.Priority))
		}
		str(a.LastModified)
	}
	if d.Size == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		u(uint64(*d.Size))
	}
	u(uint64(len(d.Icons)))
	for _, ic := range d.Icons {
		str(ic.Src)
		str(ic.MIMEType)
		u(uint64(len(ic.Sizes)))
		for _, x := range ic.Sizes {
			str(x)
		}
		str(ic.Theme)
	}
	return b
}

// hasExtras reports whether d lists annotations, a size or icons.
func hasExtras(d *definition) bool {
	return d.desc.Annotations != nil || d.desc.Size != nil || len(d.desc.Icons) > 0
}
