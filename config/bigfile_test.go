package config

import (
	"strings"
	"testing"

	"go.phpboyscout.uk/mcp/resources/internal/bigfile"
)

// TestFileOfTenThousandTemplatesParses proves that a file of 10,000
// templates (over 4 MiB) is read, and that one byte over the bound of
// 16 MiB is refused at line 1 with the bound named.
func TestFileOfTenThousandTemplatesParses(t *testing.T) {
	data := bigfile.File(10000, 10, "reader")
	if len(data) <= 1<<20 {
		t.Fatalf("the file is %d bytes, not over 1 MiB", len(data))
	}
	lookup := &Options{LookupEnv: func(string) (string, bool) { return "postgres://127.0.0.1:1/x", true }}
	f, err := Parse("big.yaml", data, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Resources) != 10000 {
		t.Errorf("%d resources, want 10000", len(f.Resources))
	}
	over := append(data, strings.Repeat("#", maxFileBytes+1-len(data))...)
	if _, err := Parse("big.yaml", over, lookup); err == nil || err.Error() != "big.yaml:1: the file is larger than 16777216 bytes" {
		t.Errorf("a file of %d bytes: %v", len(over), err)
	}
}
