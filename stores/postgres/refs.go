package postgres

import (
	"fmt"

	"go.phpboyscout.uk/mcp/resources/core"
)

// grantFlags are the policy's answer for one key, as a plan statement's
// visible, read and disclose columns read it in the planning transaction:
// whether the principal may discover (visible) or read the item, and
// whether issues about it may carry its URI.
type grantFlags struct {
	Visible  bool `json:"v,omitempty"`
	Read     bool `json:"r,omitempty"`
	Disclose bool `json:"d,omitempty"`
}

// readable reports whether the flags let the principal read the item.
func (g grantFlags) readable() bool { return g.Visible && g.Read }

// flags is g as the policy's answer a plan read for its row, which the
// plan returned and so could discover.
func (g grantFlags) flags() flags {
	return flags{discover: true, visible: g.Visible, read: g.Read, disclose: g.Disclose}
}

// decide turns what a pinned body statement returned into a payload or an
// error: visible is whether it returned the row, samePlan whether the row
// has the planned version, size the content's size (nil: no content) and
// body the content, which the statement returns only within limit.
func decide(visible, samePlan bool, size *int64, body []byte, limit int64, mime string, text bool) (core.ResourcePayload, error) {
	switch {
	case !visible:
		return core.ResourcePayload{}, core.NewFailure(core.FailureUnavailable, ErrNotVisible)
	case !samePlan:
		return core.ResourcePayload{}, ErrChanged
	case size == nil:
		return core.ResourcePayload{}, core.NewFailure(core.FailureUnavailable, fmt.Errorf("%w: no content", ErrNotVisible))
	case *size > limit:
		return core.ResourcePayload{}, &core.TooLargeError{Size: *size}
	case body == nil && *size > 0:
		return core.ResourcePayload{}, fmt.Errorf("postgres: content of %d bytes missing", *size)
	case text:
		return core.TextPayload(mime, string(body)), nil
	}
	return core.BlobPayload(mime, body), nil
}
