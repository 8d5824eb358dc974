package audit_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.phpboyscout.uk/mcp/resources/mcpsdk"
	"go.phpboyscout.uk/mcp/resources/mcpsdk/audit"
)

// A host writes its adapter's events as JSON lines, refusing every read
// whose event was not written: pass the trail as mcpsdk.Options.Auditor
// and close it after the server has stopped.
func ExampleTrail() {
	trail := audit.New(audit.NewJSONWriter(os.Stdout), audit.Options{Mode: audit.Refuse, WriteTimeout: time.Second})
	_ = &mcpsdk.Options{Auditor: trail}

	// What the adapter does for each request:
	err := trail.Audit(context.Background(), &mcpsdk.AuditEvent{
		Time: time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC), Duration: 1500 * time.Microsecond,
		Method: mcpsdk.MethodReadResource, URI: "notes://readme", Principal: "alice", Revision: "r1", Result: "complete",
		Items: []mcpsdk.AuditItem{{URI: "notes://readme", Version: "3", Size: 5, MIMEType: "text/plain"}},
	})
	fmt.Println("accepted:", err == nil)

	lost, _ := trail.Close(context.Background())
	fmt.Println("lost at shutdown:", lost)
	// Output:
	// {"time":"2026-12-03T14:00:00Z","duration_ns":1500000,"method":"resources/read","uri":"notes://readme","principal":"alice","revision":"r1","result":"complete","items":[{"uri":"notes://readme","version":"3","size":5,"mime_type":"text/plain"}]}
	// accepted: true
	// lost at shutdown: 0
}
