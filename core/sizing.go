package core

import (
	"bytes"
	"encoding/json"

	"go.phpboyscout.uk/mcp/resources/internal/itemsize"
	"go.phpboyscout.uk/mcp/resources/internal/jsonsize"
)

// sizer adds up the exact length of JSON as encoding/json writes it with
// HTML escaping off (the go-sdk's encoding): no value is built.
type sizer struct{ n int }

func (s *sizer) lit(x string) { s.n += len(x) }
func (s *sizer) str(x string) { s.n += jsonsize.StringLen(x) }

// appendJSONString appends s as encoding/json writes it with HTML escaping off.
func appendJSONString(dst []byte, s string) []byte {
	b := bytes.NewBuffer(dst)
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// itemEncodedSize is the exact encoded size of one content entry:
// {"uri":U,"mimeType":M,"text":T} or {"uri":U,"mimeType":M,"blob":B}, with
// ,"_meta":META before the closing brace when meta is set. The formula is
// [itemsize.Exact], which the go-sdk adapter's sizer is too.
func itemEncodedSize(uri string, p ResourcePayload, meta []byte) int64 {
	return itemsize.Exact(itemsize.Item{URI: uri, MIMEType: p.mimeType, Text: p.text, Blob: p.blob, IsBlob: p.kind == payloadBlob, Meta: meta})
}

// resultEnvelope is the fixed JSON around a read result's parts:
// {"_meta":META,"contents":[ITEMS]}
const resultEnvelope = `{"_meta":,"contents":[]}`
