//go:build !unix

package linetransport

import (
	"io"
	"testing"
)

func blockingPipe(t *testing.T) (io.Reader, io.WriteCloser) { return inputs["os.Pipe"](t) }
