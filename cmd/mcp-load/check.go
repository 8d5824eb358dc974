package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// op is what one request asks for.
type op uint8

const (
	opIndex   op = iota // asset://projects: one JSON item
	opBody              // an asset's inline body: one item
	opObject            // an asset's S3 object: one item
	opJoined            // an asset's fields and its object: a two-item bundle
	opProject           // a project's assets' fields: a multi-item bundle
	opList              // one page of resources/list or resources/templates/list
	opRead              // a URI of a --uris file (a run against --config)
	numOps
)

var opNames = [numOps]string{"index", "body", "object", "joined", "project", "list", "read"}

func (o op) String() string { return opNames[o] }

// request is one planned request: what the driver asks, as whom.
type request struct {
	op        op
	principal string
	key       assetKey // opBody, opObject, opJoined; project only for opProject
}

// uri is the resource URI the request reads.
func (r request) uri() string {
	switch r.op {
	case opIndex:
		return indexURI
	case opBody:
		return bodyURI(r.key)
	case opObject:
		return objectURI(r.key)
	case opJoined:
		return fieldsURI(r.key)
	case opProject:
		return projectURI(r.key.project)
	}
	return ""
}

// Outcome kinds, the keys of the tally. A failure's kind is core's kind
// name as the public message says it.
const (
	outComplete  = "complete"
	outPartial   = "partial"
	outTransport = "transport error"
	outFailed    = "failed: " // + kind
)

// publicKinds maps the fixed public messages of whole-read failures to
// their kinds (core's FailureKind names).
var publicKinds = map[string]string{
	"resource unavailable":                               "unavailable",
	"invalid resource request":                           "invalid request",
	"resource request matches more than one template":    "ambiguous match",
	"resource could not be planned":                      "invalid plan",
	"resource policy failed":                             "policy failure",
	"resource operation canceled":                        "canceled",
	"resource operation timed out":                       "timeout",
	"resource response does not fit the configured size": "size",
	"no resource item could be read":                     "no item survived",
	"resource storage is temporarily unavailable":        "storage outage",
	"invalid or expired cursor":                          "invalid cursor",
	"resource operation failed":                          "internal",
}

// codeOf is the JSON-RPC code the adapter answers a failure kind with
// (mcpsdk.ErrorCode): the SDK's resource-not-found code for unavailable
// (-32602 by default; -32002 under MCPGODEBUG=customresnotfounderrcode=1,
// which the server inherits from the driver's environment).
func codeOf(kind string) int64 {
	switch kind {
	case "unavailable":
		return mcp.CodeResourceNotFound //nolint:staticcheck // the code the adapter uses
	case "invalid request", "ambiguous match", "invalid cursor":
		return -32602
	}
	return -32603
}

// faultKinds are the whole-read failures a fault may cause: a revoked
// grant (unavailable), a storage round trip that failed or found the item
// changed (no item survived when it was the only one, a storage outage
// when planning or a policy check met a lost connection, invalid plan or
// policy failure when they failed otherwise).
var faultKinds = map[string]bool{"unavailable": true, "no item survived": true, "storage outage": true, "invalid plan": true, "policy failure": true}

// faultIssues are the item issue codes a fault may cause.
var faultIssues = map[string]bool{"unavailable": true, "read_failed": true}

// verdict is the judgement of one response.
type verdict struct {
	outcome    string   // the tally key
	unexpected string   // why the outcome is not allowed here, or ""
	wrong      []string // served content that was not current and granted, or a wrong answer
}

// checker judges responses against what the driver wrote.
type checker struct {
	d      *dataset
	o      *oracle
	strict bool // no faults: only complete, fully covered results are allowed
}

// reportMeta is core's report in a read result's _meta.
const reportMeta = "go.phpboyscout.uk/mcp.resourceRead"

// warningPrefix starts the URI of a partial result's warning item.
const warningPrefix = "mcp-warning://read/"

type report struct {
	Version int  `json:"version"`
	Partial bool `json:"partial"`
	Issues  []struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Retryable bool   `json:"retryable"`
		URI       string `json:"uri"`
	} `json:"issues"`
	IssuesOmitted int `json:"issuesOmitted"`
}

// failure judges a request that returned an error.
func (c *checker) failure(r request, err error, sent, recv time.Time) verdict {
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		return verdict{outcome: outTransport, unexpected: oneLine(err)}
	}
	kind, ok := publicKinds[we.Message]
	if !ok {
		return verdict{outcome: fmt.Sprintf("error %d", we.Code), unexpected: fmt.Sprintf("code %d %q", we.Code, we.Message)}
	}
	v := verdict{outcome: outFailed + kind}
	if want := codeOf(kind); we.Code != want {
		v.wrong = append(v.wrong, fmt.Sprintf("%s %s: %s failure with code %d, want %d", r.op, r.uri(), kind, we.Code, want))
	}
	switch {
	case c.strict || r.op == opList || !faultKinds[kind]:
		v.unexpected = fmt.Sprintf("%s failed: %s (code %d)", r.op, kind, we.Code)
	case kind == "unavailable" && (r.op == opIndex || r.op == opProject):
		v.wrong = append(v.wrong, fmt.Sprintf("%s %s answered unavailable, but every project stays discoverable", r.op, r.uri()))
	case kind == "unavailable" && !c.o.grants[r.principal][r.key].possible(denied, sent, recv) &&
		!c.o.grants[r.principal][r.key].possible(hidden, sent, recv):
		v.wrong = append(v.wrong, fmt.Sprintf("%s %s answered unavailable to %s, whose grant stood for the whole request", r.op, r.uri(), r.principal))
	}
	return v
}

// read judges a read result: every item must be an expected URI whose
// content was current and granted when the request was in flight; the
// report must match the items; in strict mode the result must be complete.
func (c *checker) read(r request, res *mcp.ReadResourceResult, sent, recv time.Time) verdict {
	v := verdict{outcome: outComplete}
	bad := func(format string, args ...any) { v.wrong = append(v.wrong, fmt.Sprintf(format, args...)) }

	var rep report
	raw, ok := res.Meta[reportMeta]
	if !ok {
		bad("%s: no report under %s", r.uri(), reportMeta)
		return v
	}
	if b, err := json.Marshal(raw); err != nil || json.Unmarshal(b, &rep) != nil || rep.Version != 1 {
		bad("%s: unreadable report %v", r.uri(), raw)
		return v
	}
	contents := res.Contents
	warned := len(contents) > 0 && strings.HasPrefix(contents[0].URI, warningPrefix)
	if warned {
		contents = contents[1:]
	}
	if rep.Partial != warned || rep.Partial != (len(rep.Issues)+rep.IssuesOmitted > 0) {
		bad("%s: report partial=%v with %d issues (%d omitted) and warning item %v", r.uri(), rep.Partial, len(rep.Issues), rep.IssuesOmitted, warned)
	}
	if rep.Partial {
		v.outcome = outPartial + ": " + issueCodes(rep)
		if c.strict {
			v.unexpected = fmt.Sprintf("%s partial without faults: %s", r.op, issueCodes(rep))
		}
	}

	expected := c.expectedURIs(r)
	served := map[string]bool{}
	last := -1
	fieldsGen, objectGen := -1, -1
	for _, it := range contents {
		i := slices.Index(expected, it.URI)
		switch {
		case strings.HasPrefix(it.URI, warningPrefix):
			bad("%s: a warning item after the first", r.uri())
			continue
		case i < 0:
			bad("%s: unexpected item %s", r.uri(), it.URI)
			continue
		case served[it.URI] || i < last:
			bad("%s: item %s repeated or out of order", r.uri(), it.URI)
			continue
		}
		served[it.URI] = true
		last = i
		k, kind := c.itemOf(r, it.URI)
		gen, ok := c.item(&v, r.principal, k, kind, it, sent, recv)
		if ok && kind == kindFields {
			fieldsGen = gen
		}
		if ok && kind == kindObject {
			objectGen = gen
		}
	}
	if r.op == opJoined && fieldsGen >= 0 && objectGen >= 0 && fieldsGen != objectGen {
		bad("%s: fields of generation %d joined with the object of generation %d", r.uri(), fieldsGen, objectGen)
	}

	issued := map[string]bool{}
	for _, is := range rep.Issues {
		if !faultIssues[is.Code] && v.unexpected == "" {
			v.unexpected = fmt.Sprintf("%s issue %s", r.op, is.Code)
		}
		if is.URI == "" {
			continue
		}
		if !slices.Contains(expected, is.URI) || served[is.URI] || issued[is.URI] {
			bad("%s: issue for %s, which is not a missing item of the request", r.uri(), is.URI)
			continue
		}
		issued[is.URI] = true
		k, _ := c.itemOf(r, is.URI)
		g := c.o.grants[r.principal][k]
		if is.Code == "unavailable" && !g.possible(denied, sent, recv) && !g.possible(hidden, sent, recv) {
			bad("%s: %s reported unavailable to %s, whose grant stood for the whole request", r.uri(), is.URI, r.principal)
		}
	}
	// Every expected item is served, or reported, or was hidden from the
	// principal at some instant of the request.
	for _, u := range expected {
		if served[u] || issued[u] {
			continue
		}
		if c.strict {
			bad("%s: item %s missing without faults", r.uri(), u)
			continue
		}
		k, _ := c.itemOf(r, u)
		if r.op != opIndex && !c.o.grants[r.principal][k].possible(hidden, sent, recv) && rep.IssuesOmitted == 0 {
			bad("%s: item %s missing, unreported, while it was visible to %s", r.uri(), u, r.principal)
		}
	}
	return v
}

// issueCodes names the distinct issue codes of a report, sorted, joined
// by "+" ("read_failed+unavailable"), or "omitted" when no issue is
// detailed.
func issueCodes(rep report) string {
	var codes []string
	for _, is := range rep.Issues {
		if !slices.Contains(codes, is.Code) {
			codes = append(codes, is.Code)
		}
	}
	if len(codes) == 0 {
		return "omitted"
	}
	slices.Sort(codes)
	return strings.Join(codes, "+")
}

// expectedURIs are the items a complete answer to r holds, in order.
func (c *checker) expectedURIs(r request) []string {
	switch r.op {
	case opIndex:
		return []string{indexURI}
	case opBody:
		return []string{bodyURI(r.key)}
	case opObject:
		return []string{objectURI(r.key)}
	case opJoined:
		return []string{fieldsURI(r.key), objectURI(r.key)}
	case opProject:
		var out []string
		for _, a := range c.d.assets {
			out = append(out, fieldsURI(assetKey{r.key.project, a}))
		}
		return out
	}
	return nil
}

// itemOf returns the asset and representation of an expected item URI.
func (c *checker) itemOf(r request, uri string) (assetKey, string) {
	if uri == indexURI {
		return assetKey{}, "index"
	}
	rest, _ := strings.CutPrefix(uri, "asset://project/")
	parts := strings.Split(rest, "/")
	k := assetKey{parts[0], parts[2]}
	switch {
	case len(parts) == 4 && parts[3] == "body":
		return k, kindBody
	case len(parts) == 4 && parts[3] == "object":
		return k, kindObject
	}
	return k, kindFields
}

// item checks one served item and returns the generation it carries.
func (c *checker) item(v *verdict, principal string, k assetKey, kind string, it *mcp.ResourceContents, sent, recv time.Time) (int, bool) {
	bad := func(format string, args ...any) {
		v.wrong = append(v.wrong, it.URI+": "+fmt.Sprintf(format, args...))
	}
	if kind == "index" {
		c.index(bad, it)
		return 0, true
	}
	var gen int
	switch kind {
	case kindFields:
		g, ok := c.fields(bad, k, it)
		if !ok {
			return 0, false
		}
		gen = g
	default:
		if it.MIMEType != c.d.mime(k) {
			bad("MIME type %q, want %q", it.MIMEType, c.d.mime(k))
		}
		body := it.Blob
		if c.d.textual(k) {
			body = []byte(it.Text)
			if it.Blob != nil {
				bad("a text asset served as a blob")
			}
		} else if it.Text != "" {
			bad("a binary asset served as text")
		}
		hk, hkey, g, ok := parseHeader(body)
		if !ok || hk != kind || hkey != k {
			bad("a body this driver never wrote (first bytes %q)", clip(body))
			return 0, false
		}
		if want := c.d.content(kind, k, g); string(body) != string(want) {
			bad("generation %d's %s with %d bytes differing from the %d written", g, kind, len(body), len(want))
			return 0, false
		}
		gen = g
	}
	if !c.o.gens[k].possible(gen, sent, recv) {
		bad("generation %d, which was not current while the request was in flight (replaced)", gen)
	}
	if !c.o.grants[principal][k].possible(granted, sent, recv) {
		bad("served to %s, whose read grant was revoked for the whole request", principal)
	}
	return gen, true
}

// fields checks an asset's fields document and returns its generation.
func (c *checker) fields(bad func(string, ...any), k assetKey, it *mcp.ResourceContents) (int, bool) {
	if it.MIMEType != "application/json" {
		bad("fields MIME type %q", it.MIMEType)
	}
	var f struct {
		Project  string `json:"project"`
		ID       string `json:"id"`
		Version  int    `json:"version"`
		Name     string `json:"name"`
		Title    string `json:"title"`
		MIMEType string `json:"mimeType"`
		Text     bool   `json:"text"`
		BodySize int    `json:"bodySize"`
		Body     string `json:"body"`
		Object   *struct {
			URI  string `json:"uri"`
			Size int    `json:"size"`
		} `json:"object"`
	}
	if err := json.Unmarshal([]byte(it.Text), &f); err != nil {
		bad("fields are not JSON: %v", err)
		return 0, false
	}
	gen := f.Version - 1
	switch {
	case f.Project != k.project || f.ID != k.asset:
		bad("fields of %s/%s", f.Project, f.ID)
	case f.Title != title(gen) || f.Name != name(k) || f.MIMEType != c.d.mime(k) || f.Text != c.d.textual(k):
		bad("version %d with title %q, name %q, MIME type %q, text %v: not what the driver wrote", f.Version, f.Title, f.Name, f.MIMEType, f.Text)
	case f.BodySize != len(c.d.content(kindBody, k, gen)) || f.Body != bodyURI(k):
		bad("version %d with body %q of %d bytes: not what the driver wrote", f.Version, f.Body, f.BodySize)
	case f.Object == nil || f.Object.URI != objectURI(k) || f.Object.Size != len(c.d.content(kindObject, k, gen)):
		bad("version %d with object %+v: not what the driver wrote", f.Version, f.Object)
	default:
		return gen, true
	}
	return 0, false
}

// index checks the projects index: every project of the dataset, since
// every principal keeps its anchor grant in each.
func (c *checker) index(bad func(string, ...any), it *mcp.ResourceContents) {
	var doc struct {
		Projects []struct{ ID, URI string } `json:"projects"`
	}
	if err := json.Unmarshal([]byte(it.Text), &doc); err != nil {
		bad("index is not JSON: %v", err)
		return
	}
	var got []string
	for _, p := range doc.Projects {
		if p.URI != projectURI(p.ID) {
			bad("project %s with URI %s", p.ID, p.URI)
		}
		got = append(got, p.ID)
	}
	if !slices.Equal(got, c.d.projects) {
		bad("projects %q, want %q", got, c.d.projects)
	}
}

func clip(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}

// oneLine keeps an error's text on one short line.
func oneLine(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}
