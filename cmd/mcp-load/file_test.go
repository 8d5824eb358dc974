package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestParseURIsTakesWeightsAndRefusesWhatItCannotRead(t *testing.T) {
	got, err := parseURIs([]byte("# reads\ndoc://a/1\n  doc://a/2 5 \n\nreport://r/x%20y 1000\n"))
	if err != nil || len(got) != 3 || got[0] != (weightedURI{"doc://a/1", 1}) || got[1] != (weightedURI{"doc://a/2", 5}) || got[2].weight != 1000 {
		t.Fatalf("%v %+v", err, got)
	}
	for _, bad := range []string{"", "# only a comment\n", "doc://a 0", "doc://a 1001", "doc://a x", "doc://a 1 2", "not-a-uri", "doc://a\ndoc://a", "doc://" + strings.Repeat("a", 2048)} {
		if _, err := parseURIs([]byte(bad)); err == nil {
			t.Errorf("parseURIs(%.40q) accepted", bad)
		}
	}
}

func TestParseTokensQuotesNoToken(t *testing.T) {
	got, err := parseTokens([]byte("alice s3cret-a\nbob s3cret-b\n"))
	if err != nil || len(got) != 2 || got[1] != (principalToken{"bob", "s3cret-b"}) {
		t.Fatalf("%v %+v", err, got)
	}
	for _, bad := range []string{"", "alice", "alice s3cret-a extra", "alice s3cret-a\nalice s3cret-c"} {
		_, err := parseTokens([]byte(bad))
		if err == nil {
			t.Errorf("parseTokens(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("parseTokens(%q): %v quotes a token", bad, err)
		}
	}
}

func TestParseExpectReadsWhatRecordWrites(t *testing.T) {
	res := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "doc://a/1", MIMEType: "text/plain", Text: "x"}, {URI: "doc://a/1/object", MIMEType: "image/png", Blob: []byte{1, 2}}}}
	a := answerOf(res, nil)
	line := expectLine("alice", "doc://a/1", a)
	got, err := parseExpect([]byte(line))
	if err != nil || got[expectKey("alice", "doc://a/1")].answer != a.digest || len(got[expectKey("alice", "doc://a/1")].items) != 2 {
		t.Fatalf("%v %+v from %q", err, got, line)
	}
	for _, bad := range []string{"alice doc://a/1", "alice doc://a/1 abc", line + line} {
		if _, err := parseExpect([]byte(bad)); err == nil {
			t.Errorf("parseExpect(%.40q) accepted", bad)
		}
	}
}

// TestJudgeCountsAWrongBodyEvenWhenFailuresAreTolerated: the verdicts of
// a --config run: the expected answer passes; another body is wrong with
// or without --tolerate-failures; a failure or a partial bundle of
// expected items is unexpected unless tolerated; serving what the
// expectation refuses is wrong.
func TestJudgeCountsAWrongBodyEvenWhenFailuresAreTolerated(t *testing.T) {
	item := func(uri, text string) *mcp.ResourceContents {
		return &mcp.ResourceContents{URI: uri, MIMEType: "text/plain", Text: text}
	}
	full := answerOf(&mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{item("r://a", "1"), item("r://b", "2")}}, nil)
	exp := expectation{answer: full.digest, items: full.items}
	refused := answerOf(nil, &jsonrpc.Error{Code: -32602, Message: "resource unavailable"})
	for _, c := range []struct {
		name       string
		a          answer
		exp        expectation
		tolerate   bool
		unexpected bool
		wrong      bool
	}{
		{"as expected", full, exp, false, false, false},
		{"another body", answerOf(&mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{item("r://a", "1"), item("r://b", "two")}}, nil), exp, true, false, true},
		{"failure", refused, exp, false, true, false},
		{"failure tolerated", refused, exp, true, false, false},
		{"partial", answerOf(&mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{item("r://a", "1"), item(warningPrefix+"x", "{}")}}, nil), exp, false, true, false},
		{"partial tolerated", answerOf(&mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{item("r://a", "1"), item(warningPrefix+"x", "{}")}}, nil), exp, true, false, false},
		{"an item short without a warning", answerOf(&mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{item("r://a", "1")}}, nil), exp, true, false, true},
		{"served what is refused", full, expectation{answer: refused.digest}, true, false, true},
		{"refused as expected", refused, expectation{answer: refused.digest}, false, false, false},
	} {
		v := judge("alice", "r://x", c.a, c.exp, true, c.tolerate)
		if (v.unexpected != "") != c.unexpected || (len(v.wrong) > 0) != c.wrong {
			t.Errorf("%s: %+v, want unexpected %v, wrong %v", c.name, v, c.unexpected, c.wrong)
		}
	}
}

func TestConfigRunFlagsAreChecked(t *testing.T) {
	for _, args := range [][]string{
		{"--config=f.yaml"},
		{"--config=f.yaml", "--uris=u", "--tokens=t"},
		{"--config=f.yaml", "--uris=u", "--tokens=t", "--expect=e", "--record=r"},
		{"--config=f.yaml", "--uris=u", "--tokens=t", "--expect=e", "--faults"},
		{"--uris=u", "--postgres=postgres://127.0.0.1/x", "--versitygw=/bin/true"},
	} {
		var log bytes.Buffer
		if _, err := parseFlags(args, &log); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	c, err := parseFlags([]string{"--config=f.yaml", "--uris=u", "--tokens=t", "--record=r"}, &bytes.Buffer{})
	if err != nil || c.file.record != "r" {
		t.Errorf("a record run: %v", err)
	}
}

// FuzzFileParsers: no input makes a parser of a --config run panic, and
// what parseExpect accepts it keeps whole.
func FuzzFileParsers(f *testing.F) {
	f.Add([]byte("doc://a/1 3\n# c\nalice tok\n"))
	f.Add([]byte("alice doc://a/1 " + strings.Repeat("ab", 32) + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = parseURIs(data)
		_, _ = parseTokens(data)
		got, err := parseExpect(data)
		if err == nil {
			for k, e := range got {
				if !isDigest(e.answer) || strings.Count(k, " ") < 1 {
					t.Fatalf("accepted %q -> %+v", k, e)
				}
			}
		}
	})
}
