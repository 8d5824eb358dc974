package core

import (
	"errors"
	"strings"
)

// maxURIHardLimit bounds URIs checked before a Resources value's own limit
// applies (target construction).
const maxURIHardLimit = 64 << 10

// STUB: replaced by the full validator (issue 3).
func checkURI(s string, max int) error {
	if s == "" || len(s) > max {
		return errors.New("bad uri")
	}
	i := strings.Index(s, ":")
	if i <= 0 {
		return errors.New("not absolute")
	}
	if strings.EqualFold(s[:i], "mcp-warning") {
		return errors.New("reserved scheme")
	}
	return nil
}
