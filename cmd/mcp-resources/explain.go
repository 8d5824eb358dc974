package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.phpboyscout.uk/mcp/resources/config"
	"go.phpboyscout.uk/mcp/resources/core"
)

// explainCmd reads one URI as one caller against the file's real sources
// and prints every step of the read: what an operator runs to find out
// why a caller can or cannot read something.
type explainCmd struct {
	Config    string   `name:"config" required:"" placeholder:"FILE" env:"MCPRES_CONFIG" help:"The resources file whose sources the read runs against (see config/schema.json)."`
	Principal string   `name:"principal" required:"" placeholder:"P" help:"The caller to read as: the principal every statement sees ($principal, mcp.principal)."`
	Claims    string   `name:"claims" placeholder:"JSON" help:"The caller's token claims, a JSON object, as statements see them as $claims (what an OAuth token carries)."`
	Scopes    []string `name:"scope" placeholder:"SCOPE" help:"An OAuth scope the caller's token grants (repeat the flag), for resources that require scopes."`
	JSON      bool     `name:"json" help:"Print the steps as one JSON object instead of lines."`
	URI       string   `arg:"" name:"uri" help:"The resource URI to read."`
}

// errNotServed is explain's error when the read would not serve: the exit
// status is then 1, after the steps that say why.
var errNotServed = errors.New("the read would not be served")

// maxClaimsBytes bounds --claims.
const maxClaimsBytes = 64 << 10

// Run opens the file (as check does, with its checks), reads c.URI as
// c.Principal, printing each step, and fails when the read would not be
// served. It never prints a body: items are named with their MIME type and
// size only.
func (c *explainCmd) Run(ctx context.Context, e *env) error {
	if err := core.CheckPrincipal(c.Principal); err != nil {
		return fmt.Errorf("--principal: %w", err)
	}
	if len(c.URI) > 64<<10 {
		return errors.New("the URI is too long")
	}
	caller := core.Caller{Principal: c.Principal, Scopes: c.Scopes}
	if c.Claims != "" {
		var obj map[string]json.RawMessage
		if len(c.Claims) > maxClaimsBytes || json.Unmarshal([]byte(c.Claims), &obj) != nil || obj == nil {
			return errors.New("--claims must be a JSON object of at most 64 KiB")
		}
		caller.Claims = json.RawMessage(c.Claims)
	}
	ctx = core.WithCaller(ctx, caller)
	f, err := config.Load(c.Config, nil)
	if err != nil {
		return err
	}
	var x *explainer // set before any read, which is when the grants report
	served, err := f.Open(ctx, &config.OpenOptions{UnusableGrantRows: func(resource string, rows int64) { x.unusableGrant(resource, rows) }})
	if err != nil {
		return err
	}
	defer served.Close()

	x = newExplainer(f, served)
	opts := []core.Option{core.WithResourceLimits(f.ResourceLimits())}
	for name, rd := range served.Objects {
		opts = append(opts, core.WithObjectSource(name, x.objectReader(name, rd)))
	}
	res, err := core.NewResources(x.bindings(), x.policy(served.Policy), opts...)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Config, err)
	}
	result, rerr := res.Read(core.WithObserver(ctx, x), c.URI)
	x.outcome(result, rerr)

	// A callback the read abandoned (a timeout) may still add a step.
	x.mu.Lock()
	steps := slices.Clone(x.steps)
	x.mu.Unlock()
	rep := explainReport{URI: c.URI, Principal: c.Principal, Steps: steps, Served: rerr == nil}
	if c.JSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		rep.write(e.stdout)
	}
	if rerr != nil {
		return errNotServed
	}
	return nil
}

// explainReport is what explain prints: the read and its steps in order.
type explainReport struct {
	URI       string        `json:"uri"`
	Principal string        `json:"principal"`
	Served    bool          `json:"served"`
	Steps     []explainStep `json:"steps"`
}

// explainStep is one step of a read: its name (select, discover,
// captures, plan, decide, read, item, recheck, outcome), a summary, and
// its detail lines, each of which names identity only.
type explainStep struct {
	Step    string   `json:"step"`
	Summary string   `json:"summary"`
	By      string   `json:"by,omitempty"`
	Detail  []string `json:"detail,omitempty"`
}

// write prints r as lines: the step name in a column, its summary, then
// its detail lines indented.
func (r explainReport) write(w io.Writer) {
	fmt.Fprintf(w, "%-9s %s\n", "read", r.URI)
	fmt.Fprintf(w, "%-9s %s\n", "as", r.Principal)
	for _, s := range r.Steps {
		line := s.Summary
		if s.By != "" {
			line += "  [by " + s.By + "]"
		}
		fmt.Fprintf(w, "%-9s %s\n", s.Step, line)
		for _, d := range s.Detail {
			fmt.Fprintf(w, "%-9s   %s\n", "", d)
		}
	}
}

// explainer records a read as it runs: it wraps the file's policy,
// resolvers and readers (each passing every call through unchanged) and
// observes the read's phases.
type explainer struct {
	f      *config.File
	served *config.Served
	// lines[i] is check's line for binding i: template, resource, source,
	// kind and what decides.
	lines [][]string
	// buckets maps an S3 source to its bucket's name.
	buckets map[string]string

	mu       sync.Mutex
	steps    []explainStep
	selected bool                   // the first discovery, the selection's, was recorded
	plan     *core.ResourceReadPlan // the plan, once resolved
	read     map[string]bool        // the item URIs a reader was asked for
	pending  []explainStep          // notes of a step still running, added after it
}

func newExplainer(f *config.File, served *config.Served) *explainer {
	x := &explainer{f: f, served: served, read: map[string]bool{}, buckets: map[string]string{}}
	for _, l := range served.Lines {
		x.lines = append(x.lines, strings.Split(l, "\t"))
	}
	for _, s := range f.Sources {
		if s.S3 != nil {
			x.buckets[s.Name] = string(s.S3.Bucket)
		}
	}
	return x
}

func (x *explainer) add(s explainStep) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.steps = append(x.steps, s)
	switch s.Step {
	case "plan", "decide", "recheck", "read", "outcome": // the steps a grant runs in
		x.steps, x.pending = append(x.steps, x.pending...), nil
	}
}

// unusableGrant notes that resource's grant returned rows rows that can
// never grant a key: the reason a legitimate key is refused.
func (x *explainer) unusableGrant(resource string, rows int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.pending = append(x.pending, explainStep{Step: "grant", Summary: fmt.Sprintf("the grant of %s returned %s that can never grant a key: NULL or empty, or a prefix without its trailing '/'",
		resource, plural(int(rows), "row"))})
}

// field is column k of check's line for binding i, or "".
func (x *explainer) field(i, k int) string {
	if i < 0 || i >= len(x.lines) || k >= len(x.lines[i]) {
		return ""
	}
	return x.lines[i][k]
}

// resource is the file's resource of binding i, or nil.
func (x *explainer) resource(i int) *config.Resource {
	name := x.field(i, 1)
	for k := range x.f.Resources {
		if x.f.Resources[k].Name == name {
			return &x.f.Resources[k]
		}
	}
	return nil
}

// bindingOf is the index of the binding whose definition is d, or -1.
func (x *explainer) bindingOf(d core.ResourceDefinition) int {
	for i, b := range x.served.Bindings {
		if b.Definition.URI == d.URI && b.Definition.URITemplate == d.URITemplate {
			return i
		}
	}
	return -1
}

// Start implements core.Observer: a selection that fails is its step, and
// each item's end says how it was admitted.
func (x *explainer) Start(ctx context.Context, p core.Phase) (context.Context, func(core.Phase)) {
	switch p.Name {
	case "selection":
		return ctx, func(end core.Phase) {
			if end.Err != nil {
				x.add(explainStep{Step: "select", Summary: "no definition of the file matches the URI (" + core.KindOf(end.Err).String() + ")"})
			}
		}
	case "item":
		return ctx, x.itemEnd
	}
	return ctx, func(core.Phase) {}
}

// itemEnd records how the plan item of an "item" phase was admitted.
func (x *explainer) itemEnd(end core.Phase) {
	i := end.Item
	x.mu.Lock()
	plan := x.plan
	x.mu.Unlock()
	if plan == nil || i < 0 || i >= plan.Len() {
		return
	}
	uri := plan.Item(i).URI()
	x.mu.Lock()
	asked := x.read[uri]
	x.mu.Unlock()
	s := explainStep{Step: "item", Summary: uri + ": admitted"}
	if end.Issue != "" {
		s.Summary = uri + ": issue " + string(end.Issue)
	}
	if !asked && end.Err == nil {
		s.Detail = []string{"no storage request: its content came with the plan row"}
	}
	x.add(s)
}

// policy wraps p so that each discovery and pass is a step.
func (x *explainer) policy(p core.ResourcePolicy) core.ResourcePolicy {
	return core.ResourcePolicy{
		Key: p.Key, // the same answers: storage may still decide with the bodies
		Discover: func(ctx context.Context, d core.ResourceDefinition) error {
			err := p.Discover(ctx, d)
			x.discovered(d, err)
			return err
		},
		Decide: func(ctx context.Context, pass core.PolicyPass) ([]core.TargetDecision, error) {
			ds, err := p.Decide(ctx, pass)
			x.decided(pass, ds, err)
			return ds, err
		},
	}
}

func (x *explainer) discovered(d core.ResourceDefinition, err error) {
	i := x.bindingOf(d)
	x.mu.Lock()
	first := !x.selected
	x.selected = true
	x.mu.Unlock()
	if first {
		what := "template " + d.URITemplate
		if d.URI != "" {
			what = "exact definition " + d.URI
		}
		x.add(explainStep{Step: "select", Summary: fmt.Sprintf("%s (resource %s, source %s, %s)", what, x.field(i, 1), x.field(i, 2), x.field(i, 3))})
	}
	s := explainStep{Step: "discover", Summary: "the caller may know of the definition"}
	if !first {
		s.Step = "recheck"
		s.Summary = "discovery again: every item's decision came with its body or its plan row's content"
	}
	if err != nil {
		s.Summary = "refused: " + refusal(err)
	}
	s.By = "every caller with a principal"
	if r := x.resource(i); r != nil && len(r.Scopes) > 0 {
		s.By += " whose token grants the scopes " + strings.Join(r.Scopes, " ")
	}
	x.add(s)
}

func (x *explainer) decided(pass core.PolicyPass, ds []core.TargetDecision, err error) {
	s := explainStep{Step: "decide", Summary: fmt.Sprintf("%s: %s in one pass", pass.Stage, plural(len(pass.Targets), "target")), By: x.served.DecidedBy(pass.Definition, pass.Stage)}
	if pass.Stage == core.PassRecheck {
		s.Step = "recheck"
	}
	if err != nil {
		s.Summary += ", refused: " + refusal(err)
	}
	for k, t := range pass.Targets {
		d := "no decision"
		if k < len(ds) {
			d = decisionText(ds[k])
		}
		role := "item"
		if k == 0 {
			role = "requested"
		}
		s.Detail = append(s.Detail, fmt.Sprintf("%-9s %s: %s", role, t.URI(), d))
	}
	x.add(s)
}

// decisionText is one decision in words.
func decisionText(d core.TargetDecision) string {
	switch {
	case !d.Visible:
		return "hidden"
	case !d.Read:
		return "visible, read denied"
	case d.DiscloseIssueURI:
		return "visible, read allowed, issue URI disclosed"
	}
	return "visible, read allowed"
}

// refusal says why err refused a step: its kind and private cause, for
// the operator alone.
func refusal(err error) string {
	kind := core.KindOf(err)
	cause := err
	if f, ok := errors.AsType[*core.Failure](err); ok && f.Unwrap() != nil {
		cause = f.Unwrap()
	}
	msg := oneLine(cause)
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	if kind == 0 {
		return msg
	}
	return kind.String() + " (" + msg + ")"
}

// bindings wraps every binding's resolver and reader.
func (x *explainer) bindings() []core.ResourceBinding {
	bs := x.served.CoreBindings()
	for i := range bs {
		res, rd := bs[i].Resolver, bs[i].Reader
		bs[i].Resolver = core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
			plan, err := res.Resolve(ctx, m)
			x.planned(i, m, plan, err)
			return plan, err
		})
		bs[i].Reader = x.reader(rd, func(it core.ReadItem) string { return x.bindingRequest(i, it) })
	}
	return bs
}

func (x *explainer) planned(i int, m core.ResourceMatch, plan core.ResourceReadPlan, err error) {
	vars := m.Vars()
	names := slices.Sorted(maps.Keys(vars))
	c := explainStep{Step: "captures", Summary: "none (an exact definition)"}
	if len(names) > 0 {
		var parts []string
		for _, k := range names {
			parts = append(parts, k+"="+strconv.Quote(vars[k]))
		}
		c.Summary = strings.Join(parts, " ")
	}
	x.add(c)

	s := explainStep{Step: "plan", By: x.planStatement(i, vars)}
	if err != nil {
		s.Summary = "refused: " + refusal(err)
		if core.KindOf(err) == core.FailureUnavailable {
			s.Detail = []string{"the statement returned no row this caller may see: no such row, or row-level security or the grant hides it"}
		}
		x.add(s)
		return
	}
	x.mu.Lock()
	x.plan = &plan
	x.mu.Unlock()
	s.Summary = plural(plan.Len(), "row") + " (items)"
	s.Detail = append(s.Detail, "requested "+targetText(plan.Requested()))
	for k := range plan.Len() {
		s.Detail = append(s.Detail, fmt.Sprintf("row %-5d %s", k+1, targetText(plan.Item(k))))
	}
	x.add(s)
}

// planStatement names the statement that plans binding i's reads.
// vars are the request's decoded captures.
func (x *explainer) planStatement(i int, vars map[string]string) string {
	r := x.resource(i)
	if r == nil {
		return ""
	}
	switch {
	case r.Bundle != "":
		return "bundle statement on " + r.Source + ": " + oneLineSQL(r.Bundle)
	case r.Plan != "":
		return "plan statement on " + r.Source + ": " + oneLineSQL(r.Plan)
	case r.List != "":
		k := slices.IndexFunc(x.f.Resources, func(f config.Resource) bool { return f.Name == r.List })
		if k < 0 { // the file's check refuses a listing of no family
			return "S3 LIST, gated as " + r.List + " is"
		}
		fam := x.f.Resources[k]
		prefix := fam.Prefix
		for k, v := range vars {
			prefix = strings.ReplaceAll(prefix, "{"+k+"}", v)
		}
		list := "S3 LIST s3://" + x.buckets[r.Source] + "/" + prefix
		if fam.Grant != nil {
			return "grant statement of " + fam.Name + " on " + fam.Grant.Source + ", once for the prefix " + prefix + ": " + oneLineSQL(fam.Grant.Keys) + "; then " + list
		}
		return "public (" + fam.Name + "): " + list
	case r.Grant != nil:
		return "grant statement on " + r.Grant.Source + ": " + oneLineSQL(r.Grant.Keys)
	case r.Public:
		return "public: no statement"
	}
	return ""
}

// targetText is a target's identity: URI, representation, authorization
// data (keys, versions, flags) and object reference. Never content.
func targetText(t core.ResourceTarget) string {
	var b strings.Builder
	b.WriteString(t.URI())
	if r := t.Representation(); r != "" {
		b.WriteString(" repr=" + r)
	}
	if a := t.AuthorizationData(); len(a) > 0 {
		b.WriteString(" authz=" + sortedJSON(a))
	}
	if o, ok := t.Object(); ok {
		fmt.Fprintf(&b, " object=%s:%s", o.Source, o.Key)
		if o.ETag != "" {
			b.WriteString(" etag=" + o.ETag)
		}
		if o.VersionID != "" {
			b.WriteString(" version_id=" + o.VersionID)
		}
		if o.Size >= 0 {
			fmt.Fprintf(&b, " size=%d", o.Size)
		}
	}
	return b.String()
}

// sortedJSON is raw with its object keys sorted, so the line is stable.
func sortedJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "(not JSON)"
	}
	out, _ := json.Marshal(v) // maps marshal in key order
	return string(out)
}

// oneLineSQL is a statement on one line, without its -- comments.
func oneLineSQL(s string) string {
	var b strings.Builder
	quote := byte(0) // the open quote, ' or ", or 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			c = ' '
		}
		b.WriteByte(c)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// plural is n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// objectReader wraps the reader of the object source name.
func (x *explainer) objectReader(name string, rd core.Reader) core.Reader {
	return x.reader(rd, func(it core.ReadItem) string {
		o, _ := it.Target.Object()
		return s3Get(x.buckets[name], o.Key, o.ETag, o.VersionID, o.Size, it.Limit)
	})
}

// bindingRequest describes the request binding i's reader sends for it.
func (x *explainer) bindingRequest(i int, it core.ReadItem) string {
	r := x.resource(i)
	var ref struct {
		Bucket    string `json:"bucket"`
		Key       string `json:"key"`
		Version   string `json:"v"` // a postgres row reference's version
		ETag      string `json:"etag"`
		VersionID string `json:"versionId"`
		Size      *int64 `json:"size"`
	}
	_ = json.Unmarshal(it.Target.AuthorizationData(), &ref)
	if r != nil && r.Body != "" {
		return fmt.Sprintf("body statement on %s: %s ($key=%q $version=%q, bounded to %d bytes)", r.Source, oneLineSQL(r.Body), ref.Key, ref.Version, it.Limit)
	}
	size := int64(-1)
	if ref.Size != nil {
		size = *ref.Size
	}
	return s3Get(ref.Bucket, ref.Key, ref.ETag, ref.VersionID, size, it.Limit)
}

// s3Get describes the conditional ranged GET s3store's Bucket.Read sends
// for an object: If-Match its ETag, its version, and a Range of the item's
// limit (bytes=0-0 for an object known to be over it, which reads its
// identity and size only).
func s3Get(bucket, key, etag, version string, size, limit int64) string {
	limit = max(limit, 0)
	rng := "bytes=0-" + strconv.FormatInt(min(limit, math.MaxInt64-1), 10)
	if size > limit {
		rng = "bytes=0-0"
	}
	s := fmt.Sprintf("S3 GET s3://%s/%s", bucket, key)
	if etag != "" {
		s += " If-Match: " + etag
	} else {
		s += " (no If-Match: the row pins no ETag)"
	}
	if version != "" {
		s += " versionId=" + version
	}
	return s + " Range: " + rng
}

// reader wraps rd, keeping its kind (wrapReader), to pass each read
// through unchanged and record it as a step: each item's request, as
// describe says it, and result (MIME type and size, never the body).
func (x *explainer) reader(rd core.Reader, describe func(core.ReadItem) string) core.Reader {
	return wrapReader(rd, func(next core.Reader) core.Reader {
		return readFunc(func(ctx context.Context, req core.ReadRequest) ([]core.ReadResult, error) {
			res, err := next.Read(ctx, req)
			s := explainStep{Step: "read", Summary: plural(len(req.Items), "item") + " in one request"}
			x.mu.Lock()
			for _, it := range req.Items {
				x.read[it.Target.URI()] = true
			}
			x.mu.Unlock()
			for k, it := range req.Items {
				s.Detail = append(s.Detail, it.Target.URI()+": "+describe(it))
				switch {
				case err != nil:
					s.Detail = append(s.Detail, "  -> the request failed: "+refusal(err))
				case k < len(res):
					s.Detail = append(s.Detail, "  -> "+resultText(res[k]))
				}
			}
			x.add(s)
			return res, err
		})
	})
}

// resultText is a reader's answer for one item, without its body.
func resultText(r core.ReadResult) string {
	var out string
	var tl *core.TooLargeError
	switch {
	case r.Err == nil:
		kind := "text"
		if r.Payload.IsBlob() {
			kind = "blob"
		}
		out = fmt.Sprintf("%s %s, %d bytes", r.Payload.MIMEType(), kind, r.Payload.Len())
	case errors.As(r.Err, &tl):
		out = fmt.Sprintf("too large (%d bytes)", tl.Size)
	default:
		out = "refused: " + refusal(r.Err)
	}
	if r.Decision != nil {
		out += "; decided with the body: " + decisionText(*r.Decision)
	}
	return out
}

// outcome records how the read ended.
func (x *explainer) outcome(res *core.ResourceResult, err error) {
	if err != nil {
		s := explainStep{Step: "outcome", Summary: "not served: " + refusal(err)}
		if f, ok := errors.AsType[*core.Failure](err); ok {
			for _, is := range f.Issues() {
				s.Detail = append(s.Detail, issueText(is))
			}
		}
		x.add(s)
		return
	}
	items := res.Items()
	s := explainStep{Step: "outcome", Summary: "served: " + plural(len(items), "item") + ", complete"}
	if res.Partial() {
		s.Summary = fmt.Sprintf("served: %s, partial (a warning item first), %s (%d not detailed)", plural(len(items), "item"),
			plural(len(res.Issues())+res.IssuesOmitted(), "issue"), res.IssuesOmitted())
	}
	for _, it := range items {
		kind, n := "text", int64(len(it.Text()))
		if it.IsBlob() {
			kind, n = "blob", int64(len(it.Blob()))
		}
		uri := it.URI()
		if strings.HasPrefix(uri, "mcp-warning:") {
			uri = "mcp-warning:… (the report)"
		}
		s.Detail = append(s.Detail, fmt.Sprintf("item  %s %s %s, %d bytes", uri, it.MIMEType(), kind, n))
	}
	for _, is := range res.Issues() {
		s.Detail = append(s.Detail, issueText(is))
	}
	x.add(s)
}

func issueText(is core.ResourceIssue) string {
	uri := is.ResourceURI()
	if uri == "" {
		uri = "(URI not disclosed)"
	}
	return fmt.Sprintf("issue %s %s", is.Code(), uri)
}
