package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/internal/serverproc"
)

// requestTimeout bounds every MCP request of the driver.
const requestTimeout = 30 * time.Second

// client is one simulated MCP client: its own HTTP transport (so its own
// connections) and its own session, as one principal.
type client struct {
	principal string
	cs        *mcp.ClientSession
	tr        *http.Transport
}

// connect opens a session to endpoint with the go-sdk client over
// streamable HTTP.
func connect(ctx context.Context, endpoint, principal, token string) (*client, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}
	hc := &http.Client{Transport: serverproc.Bearer{Token: token, Next: tr}}
	c := mcp.NewClient(&mcp.Implementation{Name: "mcp-load", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: 2}, nil)
	if err != nil {
		tr.CloseIdleConnections()
		return nil, err
	}
	return &client{principal: principal, cs: cs, tr: tr}, nil
}

// close ends the session and drops the client's idle connections.
func (c *client) close() {
	_ = c.cs.Close()
	c.tr.CloseIdleConnections()
}

// weights of each operation in the mix, out of 100.
var weights = [numOps]int{opIndex: 5, opBody: 25, opObject: 20, opJoined: 25, opProject: 15, opList: 10}

// phase is one bounded stretch of load: every client runs requests until
// the deadline or until the phase's request budget is spent.
type phase struct {
	chk      *checker
	st       *stats
	deadline time.Time
	budget   atomic.Int64 // requests left
}

// take reports whether another request may start.
func (p *phase) take() bool {
	return time.Now().Before(p.deadline) && p.budget.Add(-1) >= 0
}

// loop runs requests until the phase ends.
func (c *client) loop(ctx context.Context, p *phase, rng *rand.Rand) {
	d := p.chk.d
	for ctx.Err() == nil && p.take() {
		r := request{op: pick(rng), principal: c.principal}
		k := assetKey{d.projects[rng.IntN(len(d.projects))], d.assets[rng.IntN(len(d.assets))]}
		r.key = k
		if r.op == opList {
			c.list(ctx, p, rng.IntN(2) == 0)
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		sent := time.Now()
		res, err := c.cs.ReadResource(rctx, &mcp.ReadResourceParams{URI: r.uri()})
		recv := time.Now()
		cancel()
		var v verdict
		if err != nil {
			v = p.chk.failure(r, err, sent, recv)
		} else {
			v = p.chk.read(r, res, sent, recv)
		}
		p.st.add(r.op, recv.Sub(sent), v)
	}
}

func pick(rng *rand.Rand) op {
	n := rng.IntN(100)
	for o, w := range weights {
		if n < w {
			return op(o)
		}
		n -= w
	}
	return opBody
}

// maxListPages bounds the pages of one listing.
const maxListPages = 10

// list lists the concrete resources (one page) or every template page by
// page, and checks what the server listed: the index resource, and the
// four templates of the reference schema with a bucket.
func (c *client) list(ctx context.Context, p *phase, templatesList bool) {
	if !templatesList {
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		sent := time.Now()
		res, err := c.cs.ListResources(rctx, &mcp.ListResourcesParams{})
		d := time.Since(sent)
		cancel()
		v := verdict{outcome: outComplete}
		switch {
		case err != nil:
			v = p.chk.failure(request{op: opList, principal: c.principal}, err, sent, time.Now())
		case len(res.Resources) != 1 || res.Resources[0].URI != indexURI || res.NextCursor != "":
			v.wrong = append(v.wrong, fmt.Sprintf("resources/list: %d resources, next cursor %q: want %s alone", len(res.Resources), res.NextCursor, indexURI))
		}
		p.st.add(opList, d, v)
		return
	}
	var got []string
	cursor := ""
	for page := range maxListPages {
		if page > 0 && !p.take() {
			return // the phase ended mid-listing: the rest is not checked
		}
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		sent := time.Now()
		res, err := c.cs.ListResourceTemplates(rctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		d := time.Since(sent)
		cancel()
		if err != nil {
			p.st.add(opList, d, p.chk.failure(request{op: opList, principal: c.principal}, err, sent, time.Now()))
			return
		}
		for _, t := range res.ResourceTemplates {
			got = append(got, t.URITemplate)
		}
		v := verdict{outcome: outComplete}
		if res.NextCursor == "" {
			slices.Sort(got)
			if want := slices.Sorted(slices.Values(templates)); !slices.Equal(got, want) {
				v.wrong = append(v.wrong, fmt.Sprintf("resources/templates/list: %q over %d pages, want %q", got, page+1, want))
			}
			p.st.add(opList, d, v)
			return
		}
		p.st.add(opList, d, v)
		cursor = res.NextCursor
	}
	p.st.add(opList, 0, verdict{outcome: outComplete, wrong: []string{fmt.Sprintf("resources/templates/list: more than %d pages", maxListPages)}})
}
