// Package wire holds the fixed names and sizes of the gateway's wire shape
// that core, the module's adapter and its stores share and no host needs:
// the key of the read report in a result's _meta, the text and URI of the
// warning item of a partial result, the room reserved for framing, the
// most values of one completion and the longest principal. It imports
// nothing but the standard library, like core.
package wire

// ReportMetaKey is the reserved metadata key under which every read result
// carries its report, and under which the warning item is marked diagnostic.
const ReportMetaKey = "go.phpboyscout.uk/mcp.resourceRead"

// WarningPrefix starts the text of the warning item of a partial result; the
// report JSON follows it.
const WarningPrefix = "Incomplete bundle.\n"

// WarningMeta is the fixed _meta object of the warning item.
const WarningMeta = `{"` + ReportMetaKey + `":{"diagnostic":true,"inlineOnly":true}}`

// WarningURIPrefix starts every generated warning URI; 32 hexadecimal
// digits follow it.
const WarningURIPrefix = "mcp-warning://read/"

// Fixed bounds of the wire shape. They are not configurable.
const (
	// MaxCursorBytes bounds list cursor input; longer input fails before decoding.
	MaxCursorBytes = 4 << 10
	// ReserveBytes is reserved in every response for final wire framing.
	ReserveBytes = 8 << 10
	// ConfigOverheadBytes is reserved for the fixed result envelope.
	ConfigOverheadBytes = 256
	// WarningURIBytes is the length of a generated warning URI.
	WarningURIBytes = len(WarningURIPrefix) + 32
)

// MaxCompletionValues is the most values a completion returns, as MCP
// allows in one completion/complete result: core asks a binding's
// completion for at most this many and caps its answer at it, and a store
// caps its own query at it.
const MaxCompletionValues = 100

// MaxPrincipalBytes bounds a principal, in bytes of UTF-8: the bound
// core.CheckPrincipal applies, and the one the OAuth verifier
// (oauth.MaxPrincipalBytes) applies to a token's principal claim.
const MaxPrincipalBytes = 1024
