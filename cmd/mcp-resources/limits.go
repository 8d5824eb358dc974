package main

import (
	"reflect"
	"time"

	"github.com/alecthomas/kong"

	"go.phpboyscout.uk/mcp/resources/config"
	"go.phpboyscout.uk/mcp/resources/core"
)

// limitFlags sets every core.ResourceLimits field. Zero (the default)
// keeps the gateway's default for that field.
type limitFlags struct {
	MaxURIBytes             int           `name:"max-uri-bytes" env:"MCPRES_MAX_URI_BYTES" help:"Longest request, definition or target URI (default 2048)."`
	MaxPlanItems            int           `name:"max-plan-items" env:"MCPRES_MAX_PLAN_ITEMS" help:"Most targets a plan may name (default 1024)."`
	MaxItems                int           `name:"max-items" env:"MCPRES_MAX_ITEMS" help:"Most items admitted per read (default 256)."`
	MaxItemBytes            byteSize      `name:"max-item-bytes" env:"MCPRES_MAX_ITEM_BYTES" help:"Largest decoded item, e.g. 4MiB (default 4MiB)."`
	MaxResponseBytes        byteSize      `name:"max-response-bytes" env:"MCPRES_MAX_RESPONSE_BYTES" help:"Aggregate decoded payload per read (default 8MiB)."`
	MaxResponseEncodedBytes byteSize      `name:"max-response-encoded-bytes" env:"MCPRES_MAX_RESPONSE_ENCODED_BYTES" help:"Aggregate encoded JSON per read (default 12MiB)."`
	ReportPayloadBytes      byteSize      `name:"report-payload-bytes" env:"MCPRES_REPORT_PAYLOAD_BYTES" help:"Decoded space reserved for the partial-read report (default 8KiB)."`
	ReportEncodedBytes      byteSize      `name:"report-encoded-bytes" env:"MCPRES_REPORT_ENCODED_BYTES" help:"Encoded space reserved for the partial-read report (default 16KiB)."`
	MaxIssues               int           `name:"max-issues" env:"MCPRES_MAX_ISSUES" help:"Most detailed issues in a report (default 32)."`
	ReadTimeout             time.Duration `name:"read-timeout" env:"MCPRES_READ_TIMEOUT" help:"Deadline of a whole read or list page (default 30s)."`
	ItemTimeout             time.Duration `name:"item-timeout" env:"MCPRES_ITEM_TIMEOUT" help:"Deadline of one item read (default 10s)."`
	ListPageSize            int           `name:"list-page-size" env:"MCPRES_LIST_PAGE_SIZE" help:"Default descriptions per list page (default 100)."`
	MaxListPageSize         int           `name:"max-list-page-size" env:"MCPRES_MAX_LIST_PAGE_SIZE" help:"Largest list page a client may ask for (default 1000)."`
	ListPageBytes           byteSize      `name:"list-page-bytes" env:"MCPRES_LIST_PAGE_BYTES" help:"Encoded size of a list page (default 1MiB)."`
}

// limits returns the gateway limits the flags describe: each flag sets
// the core.ResourceLimits field of its own name (counts, bytes and
// durations alike), as a resources file's limits do.
func (f limitFlags) limits() core.ResourceLimits {
	var out core.ResourceLimits
	from, to := reflect.ValueOf(f), reflect.ValueOf(&out).Elem()
	for i := range from.NumField() {
		to.FieldByName(from.Type().Field(i).Name).SetInt(from.Field(i).Int())
	}
	return out
}

// byteSize is a count of bytes written as a plain number or with a binary
// suffix: 512, 64KiB, 4MiB, 1GiB. Negative values parse, so that the
// gateway, not the flag parser, names the limit that rejects them.
type byteSize int64

// Decode parses a flag or environment value.
func (b *byteSize) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("size", &s); err != nil {
		return err
	}
	v, err := config.ParseByteSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(v)
	return nil
}
