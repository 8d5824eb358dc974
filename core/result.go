package core

import (
	"bytes"
	"encoding/json"
	"strconv"

	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

// IssueCode classifies why a visible item is missing from a result.
type IssueCode string

// The fixed issue codes. Only [IssueReadFailed] is retryable; nothing is
// retried automatically.
const (
	IssueUnavailable    IssueCode = "unavailable"
	IssueReadFailed     IssueCode = "read_failed"
	IssueTimeout        IssueCode = "timeout"
	IssueInvalidContent IssueCode = "invalid_content"
	IssueBudgetExceeded IssueCode = "budget_exceeded"
)

var issueMessages = map[IssueCode]string{
	IssueUnavailable:    "The resource is unavailable.",
	IssueReadFailed:     "The resource could not be read.",
	IssueTimeout:        "The resource read timed out.",
	IssueInvalidContent: "The resource returned invalid content.",
	IssueBudgetExceeded: "The resource did not fit the response budget.",
}

// ResourceIssue is the bounded, safe detail of one visible item that a
// partial result omits. It carries no private cause.
type ResourceIssue struct {
	code IssueCode
	uri  string
}

// Code returns the issue's fixed code.
func (i ResourceIssue) Code() IssueCode { return i.code }

// Message returns the fixed message of the issue's code.
func (i ResourceIssue) Message() string { return issueMessages[i.code] }

// Retryable reports whether a fresh read may succeed (read_failed only).
func (i ResourceIssue) Retryable() bool { return i.code == IssueReadFailed }

// ResourceURI returns the item's URI when the final visibility decision set
// DiscloseIssueURI and the URI is at most 256 bytes; otherwise "".
func (i ResourceIssue) ResourceURI() string { return i.uri }

// ResourceItem is one content entry of a result: an admitted application
// item bound to its authorized target URI, or the generated warning.
type ResourceItem struct {
	uri     string
	payload ResourcePayload
	meta    []byte
}

// URI returns the item's URI.
func (it ResourceItem) URI() string { return it.uri }

// MIMEType returns the item's own MIME type.
func (it ResourceItem) MIMEType() string { return it.payload.mimeType }

// IsBlob reports whether the item is binary.
func (it ResourceItem) IsBlob() bool { return it.payload.kind == payloadBlob }

// Text returns the text of a text item.
func (it ResourceItem) Text() string { return it.payload.text }

// Blob returns a copy of the bytes of a blob item (empty, not nil, for an
// explicit empty blob).
func (it ResourceItem) Blob() []byte {
	if it.payload.kind != payloadBlob {
		return nil
	}
	return append([]byte{}, it.payload.blob...)
}

// Meta returns a copy of the item's _meta object, or nil.
func (it ResourceItem) Meta() json.RawMessage { return bytes.Clone(it.meta) }

// ResourceResult is a read's bundle. A complete result has no warning; a
// partial one (a nil error with Partial true) starts with the warning item.
type ResourceResult struct {
	items   []ResourceItem // warning first when partial
	partial bool
	issues  []ResourceIssue
	omitted int
	report  []byte
}

// Partial reports whether visible items are missing.
func (r *ResourceResult) Partial() bool { return r.partial }

// Items returns the content entries in order: the warning first when
// partial, then the admitted application items in plan order.
func (r *ResourceResult) Items() []ResourceItem { return append([]ResourceItem(nil), r.items...) }

// Issues returns the detailed issues, in plan order.
func (r *ResourceResult) Issues() []ResourceIssue { return append([]ResourceIssue(nil), r.issues...) }

// IssuesOmitted counts visible failures and unattempted visible items that
// have no detailed issue.
func (r *ResourceResult) IssuesOmitted() int { return r.omitted }

// Report returns a copy of the version-one report JSON.
func (r *ResourceResult) Report() json.RawMessage { return bytes.Clone(r.report) }

// Meta returns a fresh copy of the result metadata: the report under
// "go.phpboyscout.uk/mcp.resourceRead".
func (r *ResourceResult) Meta() json.RawMessage { return resultMeta(r.report) }

func resultMeta(report []byte) []byte {
	b := make([]byte, 0, len(wire.ReportMetaKey)+len(report)+6)
	b = append(b, `{"`...)
	b = append(b, wire.ReportMetaKey...)
	b = append(b, `":`...)
	b = append(b, report...)
	return append(b, '}')
}

// appendReport appends the compact version-one report with its keys in the
// contract's order.
func appendReport(dst []byte, partial bool, issues []ResourceIssue, omitted int) []byte {
	dst = append(dst, `{"version":1,"partial":`...)
	dst = strconv.AppendBool(dst, partial)
	dst = append(dst, `,"issues":`...)
	dst = appendIssues(dst, issues)
	dst = append(dst, `,"issuesOmitted":`...)
	dst = strconv.AppendInt(dst, int64(omitted), 10)
	return append(dst, '}')
}

// appendIssues appends issues as a JSON array of
// {"code","message","retryable"[,"uri"]} objects.
func appendIssues(dst []byte, issues []ResourceIssue) []byte {
	dst = append(dst, '[')
	for i, is := range issues {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"code":`...)
		dst = appendJSONString(dst, string(is.code))
		dst = append(dst, `,"message":`...)
		dst = appendJSONString(dst, is.Message())
		dst = append(dst, `,"retryable":`...)
		dst = strconv.AppendBool(dst, is.Retryable())
		if is.uri != "" {
			dst = append(dst, `,"uri":`...)
			dst = appendJSONString(dst, is.uri)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}
