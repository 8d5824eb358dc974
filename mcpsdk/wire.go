package mcpsdk

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/itemsize"

	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

// newProtocolVersion is the first protocol version whose results carry
// "resultType"; the SDK sets it on its own results from that version on.
const newProtocolVersion = "2026-07-28"

func resultType(version string) string {
	if version >= newProtocolVersion {
		return "complete"
	}
	return ""
}

// privateCache marks every result: what a caller sees depends on who asks.
var privateCache = mcp.Cacheable{CacheScope: "private"}

// readResult is the resources/read result on the wire, in the item shape
// core sized. Contents are values, not JSON encoded in advance: the SDK
// encodes the result once, and a json.RawMessage in it would be scanned
// and compacted again by encoding/json on its way out (the whole body,
// once more per read).
type readResult struct {
	mcp.ResultBase
	mcp.Cacheable
	Contents   []content `json:"contents"`
	ResultType string    `json:"resultType,omitempty"`
}

// content is one entry of contents: exactly one of Text and Blob is set,
// and an empty one stays on the wire.
type content struct {
	URI      string          `json:"uri"`
	MIMEType string          `json:"mimeType"`
	Text     *string         `json:"text,omitempty"`
	Blob     *[]byte         `json:"blob,omitempty"`
	Meta     json.RawMessage `json:"_meta,omitempty"`
}

func newReadResult(r *core.ResourceResult, version string) (*readResult, error) {
	items := r.Items()
	cs := make([]content, len(items))
	for i, it := range items {
		cs[i] = newContent(it)
	}
	out := &readResult{Cacheable: privateCache, Contents: cs, ResultType: resultType(version)}
	// A fresh map for every result: the SDK writes into it (serverInfo).
	out.Meta = mcp.Meta{wire.ReportMetaKey: json.RawMessage(r.Report())}
	return out, nil
}

// newContent is the content entry of one item, the shape [itemSize] sizes.
func newContent(it core.ResourceItem) content {
	c := content{URI: it.URI(), MIMEType: it.MIMEType(), Meta: it.Meta()}
	if it.IsBlob() {
		b := it.Blob() // never nil: an empty blob encodes as ""
		c.Blob = &b
	} else {
		t := it.Text()
		c.Text = &t
	}
	return c
}

// marshal encodes v as the SDK does: compact, HTML escaping off.
func marshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

// itemSize is the encoded size of the content entry newReadResult writes,
// plus one separating comma: core's own item formula ([itemsize.Exact]),
// which core applies to resources/read without being told. encoding/json
// writes a json.RawMessage _meta compacted; core's item metadata is
// already compact, so its length is exact.
func itemSize(it itemsize.Item) int64 { return itemsize.Exact(it) + 1 }

// description is a listed resource or template in the shape core's page
// sizing counts.
type description struct {
	URI         string          `json:"uri,omitempty"`
	URITemplate string          `json:"uriTemplate,omitempty"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MIMEType    string          `json:"mimeType,omitempty"`
	Annotations *annotations    `json:"annotations,omitempty"`
	Size        *int64          `json:"size,omitempty"`
	Icons       []mcp.Icon      `json:"icons,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// annotations differs from mcp.Annotations in one respect: a priority of 0
// that the host set is listed, not dropped.
type annotations struct {
	Audience     []string `json:"audience,omitempty"`
	Priority     *float64 `json:"priority,omitempty"`
	LastModified string   `json:"lastModified,omitempty"`
}

func newDescriptions(ds []core.ResourceDefinition) []description {
	out := make([]description, len(ds))
	for i, d := range ds {
		w := description{
			URI: d.URI, URITemplate: d.URITemplate, Name: d.Name, Title: d.Title,
			Description: d.Description, MIMEType: d.MIMEType, Size: d.Size, Meta: d.Meta,
		}
		if a := d.Annotations; a != nil {
			w.Annotations = &annotations{Audience: a.Audience, Priority: a.Priority, LastModified: a.LastModified}
		}
		for _, ic := range d.Icons {
			w.Icons = append(w.Icons, mcp.Icon{Source: ic.Src, MIMEType: ic.MIMEType, Sizes: ic.Sizes, Theme: mcp.IconTheme(ic.Theme)})
		}
		out[i] = w
	}
	return out
}

// resourcesResult is the resources/list result on the wire.
type resourcesResult struct {
	mcp.ResultBase
	mcp.Cacheable
	NextCursor string        `json:"nextCursor,omitempty"`
	Resources  []description `json:"resources"`
	ResultType string        `json:"resultType,omitempty"`
}

// templatesResult is the resources/templates/list result on the wire.
type templatesResult struct {
	mcp.ResultBase
	mcp.Cacheable
	NextCursor        string        `json:"nextCursor,omitempty"`
	ResourceTemplates []description `json:"resourceTemplates"`
	ResultType        string        `json:"resultType,omitempty"`
}

func newResourcesResult(p core.ListPage, version string) *resourcesResult {
	return &resourcesResult{Cacheable: privateCache, NextCursor: p.NextCursor, Resources: newDescriptions(p.Descriptions), ResultType: resultType(version)}
}

func newTemplatesResult(p core.ListPage, version string) *templatesResult {
	return &templatesResult{Cacheable: privateCache, NextCursor: p.NextCursor, ResourceTemplates: newDescriptions(p.Descriptions), ResultType: resultType(version)}
}
