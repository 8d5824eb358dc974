package core

import (
	"fmt"
	"reflect"
	"time"

	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

// Fixed bounds of the contract. They are not configurable.
const (
	// maxDefinitionBytes bounds the encoded JSON of one definition.
	maxDefinitionBytes = 64 << 10
	// maxMetaBytes bounds assembled metadata at each location.
	maxMetaBytes = 64 << 10
	// maxAuthorizationBytes bounds a target's private authorization JSON.
	maxAuthorizationBytes = 64 << 10
	// maxDisclosedURIBytes bounds an issue URI; longer ones are omitted.
	maxDisclosedURIBytes = 256

	minReportPayloadBytes = 256
	minReportEncodedBytes = 1 << 10
	minListEnvelopeBytes  = 256
	// minListDescriptionBytes is the page room, beyond the wire reserve and
	// the envelope, that the ListPageBytes floor guarantees: one description
	// of up to 255 encoded bytes plus its separating comma always fits.
	minListDescriptionBytes = 256
	// minListPageBytes is the floor of ListPageBytes (8 KiB + 512 = 8704).
	minListPageBytes = wire.ReserveBytes + minListEnvelopeBytes + minListDescriptionBytes
)

// ResourceLimits are the configurable limits of a [Resources] value. A zero
// field selects its default; a negative field is rejected. Raising one limit
// never raises another.
type ResourceLimits struct {
	// MaxURIBytes bounds request, definition and target URIs. Default 2048, at least 51.
	MaxURIBytes int
	// MaxPlanItems bounds the targets a plan may name: a plan naming more
	// is invalid, so a resolver that would plan more cuts its plan and
	// marks it [ResourceReadPlan.Truncated] (reported partial, with a
	// budget issue). Default 1024.
	MaxPlanItems int
	// MaxItems bounds the items admitted per read. Default 256.
	MaxItems int
	// MaxItemBytes bounds one decoded payload. Default 4 MiB.
	MaxItemBytes int64
	// MaxResponseBytes bounds the aggregate decoded payload, report included.
	// Default 8 MiB, at least ReportPayloadBytes+1.
	MaxResponseBytes int64
	// MaxResponseEncodedBytes bounds the aggregate encoded JSON, report and
	// wire reserve included. Default 12 MiB, at least
	// ReportEncodedBytes + 8 KiB + 256.
	MaxResponseEncodedBytes int64
	// ReportPayloadBytes is the decoded space reserved for diagnostics.
	// Default 8 KiB, at least 256.
	ReportPayloadBytes int64
	// ReportEncodedBytes is the encoded space reserved for diagnostics.
	// Default 16 KiB, at least 1 KiB.
	ReportEncodedBytes int64
	// MaxIssues bounds the detailed issues of a report. Default 32; -1
	// is rejected like every negative value, so zero means the default.
	MaxIssues int
	// ReadTimeout bounds a whole read. Default 30 s.
	ReadTimeout time.Duration
	// ItemTimeout bounds one item read. Default 10 s.
	ItemTimeout time.Duration
	// ListPageSize is the default number of descriptions per page. Default 100.
	ListPageSize int
	// MaxListPageSize is the largest page size a caller may ask for. Default 1000.
	MaxListPageSize int
	// ListPageBytes bounds the encoded page, wire reserve included.
	// Default 1 MiB, at least 8704 bytes: the 8 KiB wire reserve, 256 bytes
	// of envelope (the largest page envelope, next cursor included, fits
	// it) and 256 bytes of description room, so that at the floor a page
	// always holds one description whose encoded JSON plus separating comma
	// is at most 256 bytes. A larger description fails its page with
	// [FailureSize].
	ListPageBytes int64
}

// DefaultResourceLimits returns the defaults that zero fields select.
func DefaultResourceLimits() ResourceLimits {
	return ResourceLimits{
		MaxURIBytes:             2048,
		MaxPlanItems:            1024,
		MaxItems:                256,
		MaxItemBytes:            4 << 20,
		MaxResponseBytes:        8 << 20,
		MaxResponseEncodedBytes: 12 << 20,
		ReportPayloadBytes:      8 << 10,
		ReportEncodedBytes:      16 << 10,
		MaxIssues:               32,
		ReadTimeout:             30 * time.Second,
		ItemTimeout:             10 * time.Second,
		ListPageSize:            100,
		MaxListPageSize:         1000,
		ListPageBytes:           1 << 20,
	}
}

// resolve fills defaults and validates the result. Every field is a
// positive count, size or duration: zero picks the default, and the first
// negative field (in declaration order) is the error.
func (l ResourceLimits) resolve() (ResourceLimits, error) {
	r, d := l, DefaultResourceLimits()
	rv, dv := reflect.ValueOf(&r).Elem(), reflect.ValueOf(d)
	var err error
	for i := range rv.NumField() {
		switch f := rv.Field(i); {
		case f.Int() < 0 && err == nil:
			err = configErr(rv.Type().Field(i).Name, fmt.Sprintf("must not be negative, got %v", f.Interface()))
		case f.Int() <= 0:
			f.Set(dv.Field(i))
		}
	}
	if err != nil {
		return ResourceLimits{}, err
	}
	switch {
	case r.MaxURIBytes < wire.WarningURIBytes:
		return ResourceLimits{}, configErr("MaxURIBytes", fmt.Sprintf("must fit the %d-byte warning URI, got %d", wire.WarningURIBytes, r.MaxURIBytes))
	case r.ReportPayloadBytes < minReportPayloadBytes:
		return ResourceLimits{}, configErr("ReportPayloadBytes", fmt.Sprintf("must be at least %d, got %d", minReportPayloadBytes, r.ReportPayloadBytes))
	case r.ReportEncodedBytes < minReportEncodedBytes:
		return ResourceLimits{}, configErr("ReportEncodedBytes", fmt.Sprintf("must be at least %d, got %d", minReportEncodedBytes, r.ReportEncodedBytes))
	case r.MaxResponseBytes < r.ReportPayloadBytes+1:
		return ResourceLimits{}, configErr("MaxResponseBytes", fmt.Sprintf("must exceed ReportPayloadBytes (%d), got %d", r.ReportPayloadBytes, r.MaxResponseBytes))
	case r.MaxResponseEncodedBytes < r.ReportEncodedBytes+wire.ReserveBytes+wire.ConfigOverheadBytes:
		return ResourceLimits{}, configErr("MaxResponseEncodedBytes", fmt.Sprintf("must fit ReportEncodedBytes (%d) + %d wire reserve + %d overhead, got %d",
			r.ReportEncodedBytes, wire.ReserveBytes, wire.ConfigOverheadBytes, r.MaxResponseEncodedBytes))
	case r.ListPageBytes < minListPageBytes:
		return ResourceLimits{}, configErr("ListPageBytes", fmt.Sprintf("must be at least %d (the %d wire reserve, %d of envelope and %d for one description), got %d",
			minListPageBytes, wire.ReserveBytes, minListEnvelopeBytes, minListDescriptionBytes, r.ListPageBytes))
	case r.ListPageSize > r.MaxListPageSize:
		return ResourceLimits{}, configErr("ListPageSize", fmt.Sprintf("default %d exceeds MaxListPageSize %d", r.ListPageSize, r.MaxListPageSize))
	}
	return r, nil
}
