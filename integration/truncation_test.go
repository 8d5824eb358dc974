package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// truncationResources are a listing of the desk's reports and a bundle of
// an org's tickets, added to reportsFile's sources and resources.
const truncationResources = `
  tickets:
    template: ticket://t/{org}
    source: desk
    bundle: SELECT t.org || '/' || t.id AS key, 1 AS version, 'text/plain' AS mime, t.org, t.id FROM tickets t WHERE t.org = $org ORDER BY t.id
    item_uri: ticket://t/{org}/{id}
    body: SELECT t.subject AS body, 1 AS version FROM tickets t WHERE t.org || '/' || t.id = $key
`

// readReport is a read's items (without the warning) and its report, from
// the warning item's text (nil for a complete read, which has none).
type readReport struct {
	Partial bool `json:"partial"`
	Issues  []struct {
		Code string `json:"code"`
	} `json:"issues"`
	IssuesOmitted int `json:"issuesOmitted"`
}

func reportOf(t *testing.T, res *mcp.ReadResourceResult) (items []string, rep readReport) {
	t.Helper()
	for _, c := range res.Contents {
		if !strings.HasPrefix(c.URI, "mcp-warning:") {
			items = append(items, c.URI)
			continue
		}
		_, js, ok := strings.Cut(c.Text, "\n")
		if !ok || json.Unmarshal([]byte(js), &rep) != nil {
			t.Fatalf("warning %q holds no report", c.Text)
		}
	}
	return items, rep
}

// budgetIssues counts the budget_exceeded issues a report details.
func (r readReport) budgetIssues() int {
	n := 0
	for _, is := range r.Issues {
		if is.Code == "budget_exceeded" {
			n++
		}
	}
	return n
}

// TestTruncatedListingAndBundleAreReportedPartial (issue 45, defect 6): a
// listing or bundle cut by a limit is never reported complete. With
// limits.max_plan_items: 5, a prefix of 1,100 objects lists 5 items,
// partial, with a budget_exceeded issue for the keys left out (5 listed
// and read: one LIST, 5 GETs); a PostgreSQL bundle of 8 tickets is cut
// the same way (5 items, partial, a budget issue) rather than refused. With
// the defaults the same listing plans 1,024 keys, of which the gateway
// admits 256: the 768 unattempted ones and the 76 keys left out are
// 769 issues in all (768 and one for the truncation), detailed or counted
// in issuesOmitted.
func TestTruncatedListingAndBundleAreReportedPartial(t *testing.T) {
	const limits = "limits:\n  max_plan_items: 5\n"
	r := newDeskRig(t, strings.Replace(reportsFile, "policy: database\n", "policy: database\n"+limits, 1)+truncationResources)
	var wg sync.WaitGroup
	keys := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range keys {
				putObject(t, r.root, r.env.Bucket, fmt.Sprintf("orgs/acme/reports/many/%04d.txt", i), "", []byte(fmt.Sprint(i)))
			}
		})
	}
	for i := range 1100 {
		keys <- i
	}
	close(keys)
	wg.Wait()
	for id := 10; id < 16; id++ { // acme: 1, 2 (internal) and these six
		if _, err := r.admin.Exec(t.Context(), `INSERT INTO tickets VALUES ('acme', $1, 'ticket', false)`, id); err != nil {
			t.Fatal(err)
		}
	}

	s := startServer(t, "--config", r.file, "--tokens", tokensFile(t, "alex"))
	alex := s.connect(t, "alex-token")
	before := r.s3.total()
	res, err := readAll(t, alex, "report://r/acme")
	if err != nil {
		t.Fatalf("the listing of 1,100 with max_plan_items 5: %v, want a partial bundle", err)
	}
	items, rep := reportOf(t, res)
	if len(items) != 5 || items[0] != "report://r/acme/many/0000.txt" || items[4] != "report://r/acme/many/0004.txt" {
		t.Errorf("listed %v, want the first 5 keys", items)
	}
	if !rep.Partial || rep.budgetIssues() != 1 || rep.IssuesOmitted != 0 {
		t.Errorf("listing cut at 5: report %+v, want partial with one budget_exceeded issue", rep)
	}
	if n := r.s3.total() - before; n != 1+5 {
		t.Errorf("%d S3 requests, want one LIST and 5 GETs", n)
	}

	res, err = readAll(t, alex, "ticket://t/acme")
	if err != nil {
		t.Fatalf("a bundle of 8 tickets with max_plan_items 5: %v, want a partial bundle", err)
	}
	items, rep = reportOf(t, res)
	if len(items) != 5 || items[0] != "ticket://t/acme/1" || items[4] != "ticket://t/acme/12" {
		t.Errorf("bundle %v, want the first 5 tickets", items)
	}
	if !rep.Partial || rep.budgetIssues() != 1 {
		t.Errorf("bundle cut at 5: report %+v, want partial with one budget_exceeded issue", rep)
	}

	// The defaults: 1,024 keys planned, 256 admitted.
	file := filepath.Join(t.TempDir(), "defaults.yaml")
	if err := os.WriteFile(file, []byte(reportsFile), 0o600); err != nil {
		t.Fatal(err)
	}
	s = startServer(t, "--config", file, "--tokens", tokensFile(t, "alex"))
	res, err = readAll(t, s.connect(t, "alex-token"), "report://r/acme")
	if err != nil {
		t.Fatalf("the listing of 1,100 with the defaults: %v", err)
	}
	items, rep = reportOf(t, res)
	if len(items) != 256 || !rep.Partial || len(rep.Issues)+rep.IssuesOmitted != 768+1 {
		t.Errorf("defaults: %d items, report partial %v with %d issues + %d omitted, want 256 and 769 (768 unattempted, one for the 76 keys left out)",
			len(items), rep.Partial, len(rep.Issues), rep.IssuesOmitted)
	}

	// The flag's limit cuts the plan as the file's does: reported, not
	// refused as a plan over the limit.
	s = startServer(t, "--config", file, "--tokens", tokensFile(t, "alex"), "--max-plan-items", "5")
	res, err = readAll(t, s.connect(t, "alex-token"), "report://r/acme")
	if err != nil {
		t.Fatalf("the listing of 1,100 with --max-plan-items 5: %v, want a partial bundle", err)
	}
	if items, rep = reportOf(t, res); len(items) != 5 || !rep.Partial || rep.budgetIssues() != 1 {
		t.Errorf("--max-plan-items 5: %d items, report %+v, want 5, partial, one budget_exceeded issue", len(items), rep)
	}
}
