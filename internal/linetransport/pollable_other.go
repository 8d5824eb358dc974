//go:build !unix

package linetransport

import (
	"io"
	"os"
	"time"
)

// pollable returns in when it is a file with read deadlines, or ok false.
func pollable(in io.Reader) (*os.File, bool) {
	if f, ok := in.(*os.File); ok && f != nil && f.SetReadDeadline(time.Time{}) == nil {
		return f, true
	}
	return nil, false
}
