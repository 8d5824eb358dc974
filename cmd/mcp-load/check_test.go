package main

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// t0 is the instant the test dataset was written.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func testChecker(strict bool) *checker {
	d := newDataset(2, 3, []string{"p1", "p2"})
	return &checker{d: d, o: newOracle(d, t0), strict: strict}
}

var (
	kText = assetKey{"lp0", "a0"} // a text asset (even index)
	kBin  = assetKey{"lp0", "a1"} // a binary asset
)

// fieldsDoc is the fields JSON the server builds for k at gen.
func fieldsDoc(c *checker, k assetKey, gen int) string {
	mime := `"text/plain","text":true`
	if !c.d.textual(k) {
		mime = `"application/octet-stream","text":false`
	}
	return `{"project":"` + k.project + `","id":"` + k.asset + `","version":` + strconv.Itoa(gen+1) + `,"name":"` + name(k) +
		`","title":"` + title(gen) + `","mimeType":` + mime + `,"bodySize":` + strconv.Itoa(len(c.d.content(kindBody, k, gen))) +
		`,"body":"` + bodyURI(k) + `","object":{"uri":"` + objectURI(k) + `","size":` + strconv.Itoa(len(c.d.content(kindObject, k, gen))) +
		`},"updatedAt":"2026-11-30T12:00:00Z"}`
}

// bodyItem is the content entry the server sends for k's body or object
// at gen.
func bodyItem(c *checker, kind string, k assetKey, gen int) *mcp.ResourceContents {
	b := c.d.content(kind, k, gen)
	u := bodyURI(k)
	if kind == kindObject {
		u = objectURI(k)
	}
	if c.d.textual(k) {
		return &mcp.ResourceContents{URI: u, MIMEType: c.d.mime(k), Text: string(b)}
	}
	return &mcp.ResourceContents{URI: u, MIMEType: c.d.mime(k), Blob: b}
}

func complete(items ...*mcp.ResourceContents) *mcp.ReadResourceResult {
	return &mcp.ReadResourceResult{Meta: mcp.Meta{reportMeta: map[string]any{"version": 1, "partial": false, "issues": []any{}, "issuesOmitted": 0}},
		Contents: items}
}

func partial(issues []map[string]any, items ...*mcp.ResourceContents) *mcp.ReadResourceResult {
	is := make([]any, len(issues))
	for i, x := range issues {
		is[i] = x
	}
	warn := &mcp.ResourceContents{URI: warningPrefix + "00112233445566778899aabbccddeeff", MIMEType: "text/plain", Text: "warning"}
	return &mcp.ReadResourceResult{Meta: mcp.Meta{reportMeta: map[string]any{"version": 1, "partial": true, "issues": is, "issuesOmitted": 0}},
		Contents: append([]*mcp.ResourceContents{warn}, items...)}
}

// overwrite records generation gen of k as written in [from, done].
func overwrite(c *checker, k assetKey, gen int, from, done time.Time) {
	c.o.gens[k].begin(gen, from)(done)
}

func revoke(c *checker, p string, k assetKey, g grant, from, done time.Time) {
	c.o.grants[p][k].begin(g, from)(done)
}

func wantRight(t *testing.T, v verdict, outcome string) {
	t.Helper()
	if len(v.wrong) > 0 || v.unexpected != "" || v.outcome != outcome {
		t.Fatalf("verdict %+v: want %s, allowed and right", v, outcome)
	}
}

func wantWrong(t *testing.T, v verdict, substr string) {
	t.Helper()
	if len(v.wrong) == 0 || !strings.Contains(strings.Join(v.wrong, "\n"), substr) {
		t.Fatalf("verdict %+v: want a wrong answer mentioning %q", v, substr)
	}
}

func TestCheckerAcceptsTheCurrentGrantedBodyOfEveryKind(t *testing.T) {
	c := testChecker(true)
	for _, k := range []assetKey{kText, kBin} {
		wantRight(t, c.read(request{op: opBody, principal: "p1", key: k}, complete(bodyItem(c, kindBody, k, 0)), at(1), at(2)), outComplete)
		wantRight(t, c.read(request{op: opObject, principal: "p1", key: k}, complete(bodyItem(c, kindObject, k, 0)), at(1), at(2)), outComplete)
		joined := complete(&mcp.ResourceContents{URI: fieldsURI(k), MIMEType: "application/json", Text: fieldsDoc(c, k, 0)}, bodyItem(c, kindObject, k, 0))
		wantRight(t, c.read(request{op: opJoined, principal: "p1", key: k}, joined, at(1), at(2)), outComplete)
	}
}

// A body whose generation was replaced (the next one committed) before the
// request was sent is a replaced body; the same body is allowed while the
// replacement was still in flight.
func TestCheckerFlagsABodyReplacedBeforeTheRequestWasSent(t *testing.T) {
	c := testChecker(false)
	overwrite(c, kText, 1, at(10), at(20))
	r := request{op: opBody, principal: "p1", key: kText}
	wantWrong(t, c.read(r, complete(bodyItem(c, kindBody, kText, 0)), at(21), at(30)), "replaced")
	wantRight(t, c.read(r, complete(bodyItem(c, kindBody, kText, 0)), at(15), at(30)), outComplete)
	wantRight(t, c.read(r, complete(bodyItem(c, kindBody, kText, 1)), at(15), at(30)), outComplete)
	// Generation 1 could not be current before its write began.
	wantWrong(t, c.read(r, complete(bodyItem(c, kindBody, kText, 1)), at(1), at(9)), "replaced")
}

func TestCheckerFlagsABodyServedWhileTheGrantWasRevoked(t *testing.T) {
	c := testChecker(false)
	revoke(c, "p1", kBin, denied, at(10), at(20))
	r := request{op: opObject, principal: "p1", key: kBin}
	wantWrong(t, c.read(r, complete(bodyItem(c, kindObject, kBin, 0)), at(21), at(30)), "revoked")
	// The other principal keeps its grant.
	wantRight(t, c.read(request{op: opObject, principal: "p2", key: kBin}, complete(bodyItem(c, kindObject, kBin, 0)), at(21), at(30)), outComplete)
	// Unavailable is right for the revoked principal and wrong for the other.
	notFound := &jsonrpc.Error{Code: mcp.CodeResourceNotFound, Message: "resource unavailable"}
	wantRight(t, c.failure(r, notFound, at(21), at(30)), outFailed+"unavailable")
	wantWrong(t, c.failure(request{op: opObject, principal: "p2", key: kBin}, notFound, at(21), at(30)), "grant stood")
}

func TestCheckerFlagsBodiesThisDriverNeverWrote(t *testing.T) {
	c := testChecker(true)
	r := request{op: opBody, principal: "p1", key: kText}
	tampered := bodyItem(c, kindBody, kText, 0)
	tampered.Text = tampered.Text[:len(tampered.Text)-1] + "!"
	wantWrong(t, c.read(r, complete(tampered), at(1), at(2)), "differing")
	other := bodyItem(c, kindBody, kBin, 0) // another asset's body under this URI
	other.URI = bodyURI(kText)
	wantWrong(t, c.read(r, complete(other), at(1), at(2)), "")
	wantWrong(t, c.read(r, complete(bodyItem(c, kindObject, kText, 0)), at(1), at(2)), "unexpected item")
	wantWrong(t, c.read(r, complete(&mcp.ResourceContents{URI: bodyURI(kText), MIMEType: "text/plain", Text: "hello"}), at(1), at(2)), "never wrote")
	// A text asset must not come back as a blob.
	asBlob := &mcp.ResourceContents{URI: bodyURI(kText), MIMEType: "text/plain", Blob: c.d.content(kindBody, kText, 0)}
	wantWrong(t, c.read(r, complete(asBlob), at(1), at(2)), "blob")
}

func TestCheckerFlagsFieldsJoinedWithAnotherGenerationsObject(t *testing.T) {
	c := testChecker(false)
	overwrite(c, kText, 1, at(10), at(20))
	joined := complete(&mcp.ResourceContents{URI: fieldsURI(kText), MIMEType: "application/json", Text: fieldsDoc(c, kText, 0)},
		bodyItem(c, kindObject, kText, 1))
	wantWrong(t, c.read(request{op: opJoined, principal: "p1", key: kText}, joined, at(15), at(16)), "joined with the object of generation 1")
}

func TestCheckerAllowsPartialBundlesOnlyUnderFaultsAndChecksTheirReports(t *testing.T) {
	r := request{op: opJoined, principal: "p1", key: kText}
	fields := &mcp.ResourceContents{URI: fieldsURI(kText), MIMEType: "application/json"}
	readFailed := []map[string]any{{"code": "read_failed", "message": "m", "retryable": true, "uri": objectURI(kText)}}

	c := testChecker(false)
	fields.Text = fieldsDoc(c, kText, 0)
	wantRight(t, c.read(r, partial(readFailed, fields), at(1), at(2)), outPartial+": read_failed")

	strict := testChecker(true)
	if v := strict.read(r, partial(readFailed, fields), at(1), at(2)); v.unexpected == "" {
		t.Errorf("a partial bundle without faults was allowed: %+v", v)
	}
	// The object is neither served nor reported: a silent omission.
	wantWrong(t, c.read(r, complete(fields), at(1), at(2)), "missing, unreported")
	// A report that says partial with no warning item.
	res := complete(fields)
	res.Meta[reportMeta] = map[string]any{"version": 1, "partial": true, "issues": []any{readFailed[0]}, "issuesOmitted": 0}
	wantWrong(t, c.read(r, res, at(1), at(2)), "warning item false")
	// An issue for an item that was served.
	both := partial([]map[string]any{{"code": "read_failed", "message": "m", "retryable": true, "uri": fieldsURI(kText)}},
		fields, bodyItem(c, kindObject, kText, 0))
	wantWrong(t, c.read(r, both, at(1), at(2)), "not a missing item")
	// An unavailable issue while the grant stood; a budget issue is never a fault's.
	unavailable := []map[string]any{{"code": "unavailable", "message": "m", "retryable": false, "uri": objectURI(kText)}}
	wantWrong(t, c.read(r, partial(unavailable, fields), at(1), at(2)), "grant stood")
	budget := []map[string]any{{"code": "budget_exceeded", "message": "m", "retryable": false, "uri": objectURI(kText)}}
	if v := c.read(r, partial(budget, fields), at(1), at(2)); v.unexpected == "" {
		t.Errorf("a budget_exceeded issue was allowed under faults: %+v", v)
	}
	// A hidden asset may be left out silently.
	revoke(c, "p1", kText, hidden, at(10), at(20))
	wantRight(t, c.read(r, complete(), at(21), at(22)), outComplete)
}

func TestCheckerClassifiesFailures(t *testing.T) {
	r := request{op: opBody, principal: "p1", key: kText}
	c, strict := testChecker(false), testChecker(true)
	for _, tc := range []struct {
		err        error
		outcome    string
		unexpected bool
	}{
		{&jsonrpc.Error{Code: -32603, Message: "no resource item could be read"}, outFailed + "no item survived", false},
		{&jsonrpc.Error{Code: -32603, Message: "resource could not be planned"}, outFailed + "invalid plan", false},
		{&jsonrpc.Error{Code: -32603, Message: "resource storage is temporarily unavailable", Data: []byte(`{"retryable":true}`)}, outFailed + "storage outage", false},
		{&jsonrpc.Error{Code: -32603, Message: "resource policy failed"}, outFailed + "policy failure", false},
		{&jsonrpc.Error{Code: -32603, Message: "resource operation timed out"}, outFailed + "timeout", true},
		{&jsonrpc.Error{Code: -32603, Message: "resource response does not fit the configured size"}, outFailed + "size", true},
		{&jsonrpc.Error{Code: -32603, Message: "something else"}, "error -32603", true},
		{errors.New("connection refused"), outTransport, true},
	} {
		v := c.failure(r, tc.err, at(1), at(2))
		if v.outcome != tc.outcome || (v.unexpected != "") != tc.unexpected {
			t.Errorf("%v under faults: %+v, want %s (unexpected %v)", tc.err, v, tc.outcome, tc.unexpected)
		}
		if v := strict.failure(r, tc.err, at(1), at(2)); v.unexpected == "" {
			t.Errorf("%v without faults was allowed", tc.err)
		}
	}
	// A typed failure carries its kind's code.
	wantWrong(t, c.failure(r, &jsonrpc.Error{Code: -32603, Message: "resource unavailable"}, at(1), at(2)), "want")
	// Every project stays discoverable: its bundle is never unavailable.
	wantWrong(t, c.failure(request{op: opProject, principal: "p1", key: kText}, &jsonrpc.Error{Code: mcp.CodeResourceNotFound, Message: "resource unavailable"}, at(1), at(2)), "discoverable")
}

func TestCheckerDemandsEveryProjectItemWithoutFaults(t *testing.T) {
	c := testChecker(true)
	r := request{op: opProject, principal: "p1", key: assetKey{project: "lp1"}}
	var items []*mcp.ResourceContents
	for _, a := range c.d.assets {
		k := assetKey{"lp1", a}
		items = append(items, &mcp.ResourceContents{URI: fieldsURI(k), MIMEType: "application/json", Text: fieldsDoc(c, k, 0)})
	}
	wantRight(t, c.read(r, complete(items...), at(1), at(2)), outComplete)
	wantWrong(t, c.read(r, complete(items[1:]...), at(1), at(2)), "missing without faults")
	wantWrong(t, c.read(r, complete(items[1], items[0], items[2]), at(1), at(2)), "out of order")
	stale := *items[0]
	stale.Text = strings.Replace(stale.Text, `"title":"gen 0"`, `"title":"gen 7"`, 1)
	wantWrong(t, c.read(r, complete(&stale, items[1], items[2]), at(1), at(2)), "not what the driver wrote")
}

func TestTimelineBoundsAreInclusiveAndConservative(t *testing.T) {
	tl := newTimeline(0, at(0))
	commit := tl.begin(1, at(10))
	if !tl.possible(0, at(50), at(60)) || !tl.possible(1, at(10), at(10)) || tl.possible(1, at(0), at(9)) {
		t.Fatal("while a write is in flight, both values may be current, the new one only from its start")
	}
	commit(at(20))
	for _, c := range []struct {
		v        int
		from, to int
		want     bool
	}{
		{0, 20, 30, true}, {0, 21, 30, false}, {1, 5, 10, true}, {1, 5, 9, false}, {1, 1000, 2000, true}, {2, 0, 2000, false},
	} {
		if got := tl.possible(c.v, at(c.from), at(c.to)); got != c.want {
			t.Errorf("possible(%d, %d, %d) = %v, want %v", c.v, c.from, c.to, got, c.want)
		}
	}
	if tl.current() != 1 {
		t.Errorf("current %d, want 1", tl.current())
	}
}

func TestContentIsDeterministicAndNamesItsWrite(t *testing.T) {
	d := newDataset(1, 2, nil)
	for _, k := range []assetKey{{"lp0", "a0"}, {"lp0", "a1"}} {
		for _, kind := range []string{kindBody, kindObject} {
			b := d.content(kind, k, 3)
			if string(b) != string(d.content(kind, k, 3)) || string(b) == string(d.content(kind, k, 4)) {
				t.Fatalf("%s %s: content is not a function of the generation", kind, k)
			}
			if len(b) != len(d.content(kind, k, 0)) || len(b) != len(d.content(kind, k, 12345)) {
				t.Fatalf("%s %s: the size changes with the generation, so a size check alone could tell them apart", kind, k)
			}
			gk, gkey, gen, ok := parseHeader(b)
			if !ok || gk != kind || gkey != k || gen != 3 {
				t.Fatalf("%s %s: header parses as %s %s %d %v", kind, k, gk, gkey, gen, ok)
			}
		}
	}
}
