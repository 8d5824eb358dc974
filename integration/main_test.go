// The integration suite: end-to-end tests against a real PostgreSQL server
// and a real S3 server, provisioned by package harness (from the environment,
// from testcontainers, or skipped with a reason).
package integration

import (
	"os"
	"testing"

	"go.phpboyscout.uk/mcp/resources/integration/harness"
)

func TestMain(m *testing.M) {
	code := harness.Main(m)
	removeServerBinary()
	os.Exit(code)
}
