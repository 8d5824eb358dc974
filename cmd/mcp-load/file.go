package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/internal/serverproc"
)

// fileFlags are the flags of a run against a server started from the
// operator's own resources file (--config): the URIs to read, the tokens
// to read them with and what each principal must get.
type fileFlags struct {
	config       string // serve --config FILE
	uris         string // URI [WEIGHT] per line
	tokens       string // PRINCIPAL TOKEN per line
	serverTokens string // the server's tokens file; "" builds one from tokens
	expect       string // PRINCIPAL URI ANSWER [ITEM ...] per line
	record       string // write expect from two quiet passes, then load
	tolerate     bool   // failures and partial bundles are allowed (a fault run)
}

// Bounds of the files of a --config run.
const (
	maxFileBytes   = 16 << 20
	maxURIs        = 10_000
	maxURIBytes    = 2048
	maxWeight      = 1000
	maxPrincipals  = 256
	maxExpectLines = maxURIs * maxPrincipals
	maxItemDigests = 1024
)

// weightedURI is one line of a --uris file.
type weightedURI struct {
	uri    string
	weight int
}

// principalToken is one line of a --tokens file.
type principalToken struct{ principal, token string }

// expectation is what one principal must get for one URI: the digest of
// the whole answer, and of each item it holds (for a partial bundle,
// whose items must each be one of them).
type expectation struct {
	answer string
	items  []string
}

// lines returns the lines of data with text, without comments (#) and
// surrounding space, each with its 1-based line number.
func lines(data []byte) (out []string, nums []int) {
	for i, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		out, nums = append(out, l), append(nums, i+1)
	}
	return out, nums
}

// printable reports whether s is non-empty UTF-8 without space or control
// characters.
func printable(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) })
}

// parseURIs parses a --uris file: one URI a line, optionally followed by
// its weight (1 to 1000, default 1); blank lines and # comments are
// skipped. Each URI is absolute (scheme://...), at most 2048 bytes, and
// listed once.
func parseURIs(data []byte) ([]weightedURI, error) {
	ls, nums := lines(data)
	if len(ls) == 0 {
		return nil, errors.New("no URI")
	}
	if len(ls) > maxURIs {
		return nil, fmt.Errorf("more than %d URIs", maxURIs)
	}
	var out []weightedURI
	seen := map[string]bool{}
	for i, l := range ls {
		f := strings.Fields(l)
		w := weightedURI{uri: f[0], weight: 1}
		switch {
		case len(f) > 2:
			return nil, fmt.Errorf("line %d: want URI [WEIGHT]", nums[i])
		case !printable(w.uri) || len(w.uri) > maxURIBytes || !strings.Contains(w.uri, "://"):
			return nil, fmt.Errorf("line %d: not an absolute URI of at most %d bytes", nums[i], maxURIBytes)
		case seen[w.uri]:
			return nil, fmt.Errorf("line %d: %s is listed twice", nums[i], w.uri)
		}
		if len(f) == 2 {
			n, err := strconv.Atoi(f[1])
			if err != nil || n < 1 || n > maxWeight {
				return nil, fmt.Errorf("line %d: the weight must be 1 to %d", nums[i], maxWeight)
			}
			w.weight = n
		}
		seen[w.uri] = true
		out = append(out, w)
	}
	return out, nil
}

// parseTokens parses a --tokens file: PRINCIPAL TOKEN a line, each
// principal once. The tokens are secrets: no error quotes one.
func parseTokens(data []byte) ([]principalToken, error) {
	ls, nums := lines(data)
	if len(ls) == 0 {
		return nil, errors.New("no principal")
	}
	if len(ls) > maxPrincipals {
		return nil, fmt.Errorf("more than %d principals", maxPrincipals)
	}
	var out []principalToken
	for i, l := range ls {
		f := strings.Fields(l)
		if len(f) != 2 || !printable(f[0]) || !printable(f[1]) {
			return nil, fmt.Errorf("line %d: want PRINCIPAL TOKEN", nums[i])
		}
		if slices.ContainsFunc(out, func(p principalToken) bool { return p.principal == f[0] }) {
			return nil, fmt.Errorf("line %d: principal %s is listed twice", nums[i], f[0])
		}
		out = append(out, principalToken{f[0], f[1]})
	}
	return out, nil
}

// isDigest reports whether s is a hex SHA-256.
func isDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// expectKey is the key of one principal's expectation for one URI.
func expectKey(principal, uri string) string { return principal + " " + uri }

// parseExpect parses an --expect file: PRINCIPAL URI ANSWER [ITEM ...] a
// line, the digests as --record writes them (see answerOf).
func parseExpect(data []byte) (map[string]expectation, error) {
	ls, nums := lines(data)
	if len(ls) > maxExpectLines {
		return nil, fmt.Errorf("more than %d lines", maxExpectLines)
	}
	out := map[string]expectation{}
	for i, l := range ls {
		f := strings.Fields(l)
		if len(f) < 3 || len(f) > 3+maxItemDigests || !printable(f[0]) || !printable(f[1]) {
			return nil, fmt.Errorf("line %d: want PRINCIPAL URI ANSWER-SHA256 [ITEM-SHA256 ...]", nums[i])
		}
		for _, d := range f[2:] {
			if !isDigest(d) {
				return nil, fmt.Errorf("line %d: %q is not a hex SHA-256", nums[i], clipText(d))
			}
		}
		k := expectKey(f[0], f[1])
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("line %d: %s %s is listed twice", nums[i], f[0], f[1])
		}
		out[k] = expectation{answer: f[2], items: slices.Clone(f[3:])}
	}
	return out, nil
}

func clipText(s string) string {
	if len(s) > 70 {
		return s[:70] + "..."
	}
	return s
}

// answer is one response reduced to what is compared: the digest of the
// whole answer, of each item (warnings apart), and whether it is partial
// or a failure.
type answer struct {
	digest  string
	items   []string
	partial bool
	failure string // the error, for a failed request
	typed   bool   // the failure is a JSON-RPC error (not a transport one)
}

func sum(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// answerOf reduces a read's result or error. An item's digest covers its
// URI, MIME type and text or blob; the answer's covers every item in
// order, warnings included, or the error's code and message.
func answerOf(res *mcp.ReadResourceResult, err error) answer {
	if err != nil {
		var we *jsonrpc.Error
		if !errors.As(err, &we) {
			return answer{digest: sum("transport"), failure: oneLine(err)}
		}
		return answer{digest: sum("error", strconv.FormatInt(we.Code, 10), we.Message), failure: fmt.Sprintf("code %d %q", we.Code, we.Message), typed: true}
	}
	var a answer
	all := []string{"read"}
	for _, c := range res.Contents {
		kind, body := "text", c.Text
		if c.Blob != nil {
			kind, body = "blob", string(c.Blob)
		}
		d := sum(c.URI, c.MIMEType, kind, body)
		all = append(all, d)
		if strings.HasPrefix(c.URI, warningPrefix) {
			a.partial = true
			continue
		}
		a.items = append(a.items, d)
	}
	a.digest = sum(all...)
	return a
}

// judge compares an answer with its expectation.
func judge(principal, uri string, a answer, exp expectation, ok, tolerate bool) verdict {
	switch {
	case !ok:
		return verdict{outcome: "no expectation", unexpected: "no expectation for " + principal + " " + uri}
	case a.digest == exp.answer:
		return verdict{outcome: "as expected"}
	case a.failure != "":
		v := verdict{outcome: "failed"}
		if !a.typed {
			v.outcome = outTransport
		}
		if !tolerate {
			v.unexpected = "failed: " + a.failure
		}
		return v
	}
	var v verdict
	for i, d := range a.items {
		if !slices.Contains(exp.items, d) {
			v.wrong = append(v.wrong, fmt.Sprintf("%s %s: item %d is not one the expected answer holds", principal, uri, i))
		}
	}
	switch {
	case len(v.wrong) > 0:
		v.outcome = "wrong"
	case a.partial:
		v.outcome = "partial"
		if !tolerate {
			v.unexpected = "partial"
		}
	default:
		v.outcome = "wrong"
		v.wrong = append(v.wrong, fmt.Sprintf("%s %s: items missing or out of order without a warning", principal, uri))
	}
	return v
}

// expectLine is a line of an --expect file.
func expectLine(principal, uri string, a answer) string {
	return strings.Join(append([]string{principal, uri, a.digest}, a.items...), " ") + "\n"
}

// fileDriver is one run against a server started from a resources file.
type fileDriver struct {
	c        *config
	d        *driver // output, failure and the server's log
	uris     []weightedURI
	total    int // sum of the weights
	tokens   []principalToken
	expect   map[string]expectation
	srv      *server
	endpoint string
}

// readBounded reads a file of at most maxFileBytes.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(io.LimitReader(f, maxFileBytes+1)); err != nil {
		return nil, err
	}
	if b.Len() > maxFileBytes {
		return nil, fmt.Errorf("%s: over %d bytes", path, maxFileBytes)
	}
	return b.Bytes(), nil
}

// goBuild builds cmd/mcp-resources into bin.
func goBuild(ctx context.Context, bin string) error {
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "go.phpboyscout.uk/mcp/resources/cmd/mcp-resources").CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	return nil
}

func (fd *fileDriver) run(ctx context.Context) int {
	d := fd.d
	defer func() {
		if fd.srv != nil {
			_ = fd.srv.stop()
		}
		if d.dir != "" {
			if d.c.keep || d.failed {
				fmt.Fprintf(d.log, "mcp-load: logs kept in %s\n", d.dir)
			} else {
				os.RemoveAll(d.dir)
			}
		}
	}()
	if err := fd.setup(ctx); err != nil {
		fmt.Fprintf(d.log, "mcp-load: setup: %v\n", err)
		return 2
	}
	if fd.c.file.record != "" {
		if err := fd.recordPass(ctx); err != nil {
			fmt.Fprintf(d.log, "mcp-load: record: %v\n", err)
			return 2
		}
	}
	if err := fd.check(); err != nil {
		fmt.Fprintf(d.log, "mcp-load: %v\n", err)
		return 2
	}
	if err := fd.load(ctx); err != nil {
		fmt.Fprintf(d.log, "mcp-load: %v\n", err)
		d.failed = true
	}
	if !fd.srv.Alive() {
		d.fail("the server process exited during the run")
	}
	srv := fd.srv
	fd.srv = nil
	return d.conclude(srv)
}

func (fd *fileDriver) setup(ctx context.Context) error {
	c, d := fd.c, fd.d
	var err error
	data, err := readBounded(c.file.uris)
	if err != nil {
		return err
	}
	if fd.uris, err = parseURIs(data); err != nil {
		return fmt.Errorf("--uris %s: %w", c.file.uris, err)
	}
	for _, u := range fd.uris {
		fd.total += u.weight
	}
	if data, err = readBounded(c.file.tokens); err != nil {
		return err
	}
	if fd.tokens, err = parseTokens(data); err != nil {
		return fmt.Errorf("--tokens %s: %w", c.file.tokens, err)
	}
	if c.file.expect != "" {
		if data, err = readBounded(c.file.expect); err != nil {
			return err
		}
		if fd.expect, err = parseExpect(data); err != nil {
			return fmt.Errorf("--expect %s: %w", c.file.expect, err)
		}
	}
	if d.dir, err = os.MkdirTemp("", "mcp-load-"); err != nil {
		return err
	}
	if c.serverBin == "" {
		c.serverBin = filepath.Join(d.dir, "mcp-resources")
		fmt.Fprintln(d.log, "mcp-load: building cmd/mcp-resources")
		if err := goBuild(ctx, c.serverBin); err != nil {
			return err
		}
	}
	sctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	tokens := c.file.serverTokens
	if tokens == "" {
		var b strings.Builder
		for _, p := range fd.tokens {
			line, err := runTool(sctx, c.serverBin, p.token+"\n", "hash-token", p.principal)
			if err != nil {
				return err
			}
			b.WriteString(line)
		}
		tokens = filepath.Join(d.dir, "tokens")
		if err := os.WriteFile(tokens, []byte(b.String()), 0o600); err != nil {
			return err
		}
	}
	args := []string{"--config=" + c.file.config, "--tokens=" + tokens}
	if c.stateless {
		key := filepath.Join(d.dir, "cursor.key")
		if err := os.WriteFile(key, []byte(randomHex(32)), 0o600); err != nil {
			return err
		}
		args = append(args, "--stateless", "--cursor-key-file="+key)
	}
	logPath := filepath.Join(d.dir, "server.log")
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	// The file's ${NAME} references may name any variable, MCPRES_ ones
	// included: the server gets the driver's whole environment.
	p, err := serverproc.StartEnv(c.serverBin, os.Environ(), log, args...)
	if err != nil {
		log.Close()
		d.logTail(logPath, 5)
		return fmt.Errorf("%w (log %s)", err, logPath)
	}
	fd.srv = &server{Process: p, log: log}
	fd.endpoint = "http://" + p.Addr + "/mcp"
	fmt.Fprintf(d.out, "mcp-load: server %s (pid %d, stateless %v) from %s, %d URIs, principals %d, seed %d\n",
		p.Addr, p.Cmd.Process.Pid, c.stateless, c.file.config, len(fd.uris), len(fd.tokens), c.seed)
	return nil
}

// recordPass reads every URI as every principal twice, one request at a
// time, and writes the answers as the --record file; an answer that
// differs between the two passes cannot be checked by digest.
func (fd *fileDriver) recordPass(ctx context.Context) error {
	got := map[string]answer{}
	var out strings.Builder
	for pass := range 2 {
		for _, p := range fd.tokens {
			cl, err := connect(ctx, fd.endpoint, p.principal, p.token)
			if err != nil {
				return fmt.Errorf("connect as %s: %w", p.principal, err)
			}
			for _, u := range fd.uris {
				rctx, cancel := context.WithTimeout(ctx, requestTimeout)
				res, err := cl.cs.ReadResource(rctx, &mcp.ReadResourceParams{URI: u.uri})
				cancel()
				a := answerOf(res, err)
				k := expectKey(p.principal, u.uri)
				switch {
				case a.failure != "" && !a.typed:
					cl.close()
					return fmt.Errorf("%s as %s: %s", u.uri, p.principal, a.failure)
				case pass == 0:
					got[k] = a
				case got[k].digest != a.digest:
					cl.close()
					return fmt.Errorf("%s as %s: two quiet reads gave different answers; it cannot be checked by digest", u.uri, p.principal)
				default:
					out.WriteString(expectLine(p.principal, u.uri, a))
				}
			}
			cl.close()
		}
	}
	if err := os.WriteFile(fd.c.file.record, []byte(out.String()), 0o644); err != nil {
		return err
	}
	fd.expect = map[string]expectation{}
	for k, a := range got {
		fd.expect[k] = expectation{answer: a.digest, items: a.items}
	}
	fmt.Fprintf(fd.d.out, "recorded %d answers in %s\n", len(got), fd.c.file.record)
	return nil
}

// check refuses a run that would count requests without an expectation.
func (fd *fileDriver) check() error {
	for _, p := range fd.tokens {
		for _, u := range fd.uris {
			if _, ok := fd.expect[expectKey(p.principal, u.uri)]; !ok {
				return fmt.Errorf("no expected answer for %s as %s: give --expect with a line for every principal and URI, or --record", u.uri, p.principal)
			}
		}
	}
	return nil
}

// pickURI draws a URI by weight.
func (fd *fileDriver) pickURI(rng *rand.Rand) string {
	n := rng.IntN(fd.total)
	for _, u := range fd.uris {
		if n < u.weight {
			return u.uri
		}
		n -= u.weight
	}
	return fd.uris[len(fd.uris)-1].uri
}

// load runs the clients for --duration (after --warmup, whose responses
// are judged but not reported) and records failed checks.
func (fd *fileDriver) load(ctx context.Context) error {
	c := fd.c
	var clients []*client
	defer func() { closeAll(clients) }()
	for i := range c.clients {
		p := fd.tokens[i%len(fd.tokens)]
		cl, err := connect(ctx, fd.endpoint, p.principal, p.token)
		if err != nil {
			return fmt.Errorf("connect client %d: %w", i, err)
		}
		clients = append(clients, cl)
	}
	for _, ph := range []struct {
		name string
		dur  time.Duration
	}{{"warm-up", c.warmup}, {"load", c.duration}} {
		if ph.dur <= 0 {
			continue
		}
		st := newStats()
		p := &phase{st: st, deadline: time.Now().Add(ph.dur)}
		p.budget.Store(c.maxRequests)
		start := time.Now()
		var wg sync.WaitGroup
		for i, cl := range clients {
			rng := rand.New(rand.NewPCG(c.seed, uint64(i)+2+uint64(start.UnixNano())))
			wg.Go(func() { fd.loop(ctx, cl, p, rng) })
		}
		wg.Wait()
		s := st.summarize(ph.name, len(clients), time.Since(start))
		s.print(fd.d.out)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		n, unexpected, wrong := st.counts()
		if unexpected > 0 || wrong > 0 {
			fd.d.fail("phase %s: %d unexpected responses and %d wrong answers in %d requests", ph.name, unexpected, wrong, n)
		}
		if n == 0 {
			fd.d.fail("phase %s: no request completed", ph.name)
		}
	}
	return nil
}

// loop reads URIs as the client's principal until the phase ends.
func (fd *fileDriver) loop(ctx context.Context, cl *client, p *phase, rng *rand.Rand) {
	for ctx.Err() == nil && p.take() {
		uri := fd.pickURI(rng)
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		sent := time.Now()
		res, err := cl.cs.ReadResource(rctx, &mcp.ReadResourceParams{URI: uri})
		d := time.Since(sent)
		cancel()
		if ctx.Err() != nil {
			return
		}
		exp, ok := fd.expect[expectKey(cl.principal, uri)]
		p.st.add(opRead, d, judge(cl.principal, uri, answerOf(res, err), exp, ok, fd.c.file.tolerate))
	}
}
