package config

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

var (
	validName   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,63}$`)
	validBucket = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	validRegion = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	captureRe   = regexp.MustCompile(`\{([^{}]*)\}`)
)

// MaxDepth bounds Resource.MaxDepth: the segments "..." stands for.
const MaxDepth = 32

// Statement parameters each kind of statement may use besides the
// template's captures, and those it must use.
var (
	planParams       = []string{"principal"}
	bodyParams       = []string{"key", "version", "principal"}
	decideParams     = []string{"keys", "binding", "captures", "principal"}
	completionParams = []string{"prefix", "limit", "principal"}
)

// checker checks a decoded file; every mistake goes to e.
type checker struct {
	e         *errs
	f         *File
	sources   map[string]*Source
	resources map[string]*Resource
}

func (c *checker) check() {
	f := c.f
	switch {
	case !f.Spans.Has("version"):
		c.e.at(f.Spans.Self(), "version: is required (version: 1)")
	case f.Version != 1:
		c.e.at(f.Spans.Of("version"), "version: %d is not a version of this file format (1 is)", f.Version)
	}
	if len(f.Sources) == 0 {
		c.e.at(f.Spans.Of("sources"), "sources: at least one source is required")
	}
	if len(f.Resources) == 0 {
		c.e.at(f.Spans.Of("resources"), "resources: at least one resource is required")
	}
	c.sources, c.resources = map[string]*Source{}, map[string]*Resource{}
	for i := range f.Sources {
		s := &f.Sources[i]
		c.sources[s.Name] = s
		c.source(s)
	}
	for i := range f.Resources {
		r := &f.Resources[i]
		c.resources[r.Name] = r
	}
	c.policy()
	for i := range f.Resources {
		c.resource(&f.Resources[i])
	}
	c.oauth() // oauth.go
	if len(c.e.list) == 0 {
		c.gateway()
	}
}

func (c *checker) name(kind, name string, at Position) {
	if !validName.MatchString(name) {
		c.e.at(at, "%s %q: a name is a letter then up to 63 letters, digits, _, . or -", kind, name)
	}
}

func (c *checker) source(s *Source) {
	path := "sources." + s.Name
	c.name("source", s.Name, s.Spans.Self())
	switch {
	case (s.Postgres == nil) == (s.S3 == nil):
		c.e.at(s.Spans.Self(), "%s: give exactly one of postgres and s3", path)
	case s.Postgres != nil:
		c.postgres(s.Postgres, path+".postgres")
	default:
		c.s3(s.S3, path+".s3")
	}
}

func (c *checker) postgres(p *PostgresSource, path string) {
	if !p.Spans.Has("url") {
		c.required(p.Spans, "url", path)
	} else {
		c.pgURL(p.URL, p.Spans.Of("url"), path+".url")
	}
	if p.Spans.Has("listen_url") {
		c.pgURL(p.ListenURL, p.Spans.Of("listen_url"), path+".listen_url")
	}
	switch {
	case p.LoginRole && p.Spans.Has("role"):
		c.e.at(p.Spans.Of("role"), "%s.role: give role or login_role: true, not both", path)
	case p.LoginRole:
	case !p.Spans.Has("role"):
		c.e.at(p.Spans.Self(), "%s: role is required: the role every statement runs as (its login must be a member)", path)
	default:
		if msg := roleProblem(p.Role); msg != "" {
			c.e.at(p.Spans.Of("role"), "%s.role: %s", path, msg)
		}
	}
	if p.MaxPlanItems < 0 {
		c.e.at(p.Spans.Of("max_plan_items"), "%s.max_plan_items: must not be negative", path)
	}
}

// required reports a missing key, or one whose ${NAME} is empty.
func (c *checker) required(sp Spans, key, path string) {
	if sp.Empty(key) {
		c.e.at(sp.Of(key), "%s.%s: is required, and its ${...} expands to nothing", path, key)
		return
	}
	c.e.at(sp.Self(), "%s: %s is required", path, key)
}

func roleProblem(role string) string {
	if role == "" || len(role) > 63 || !utf8.ValidString(role) || strings.ContainsFunc(role, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return "a role name is 1 to 63 bytes of UTF-8 without control characters"
	}
	return ""
}

// pgURL checks a PostgreSQL URL without echoing it: a password must come
// from the environment.
func (c *checker) pgURL(s Secret, at Position, path string) {
	raw, v := s.raw, s.value
	if p := writtenPassword(raw); p {
		c.e.at(at, "%s: a password is written in the file: take it from the environment (${NAME})", path)
		return
	}
	if strings.Contains(v, "://") {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			c.e.at(at, "%s: is not a PostgreSQL URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE)", path)
		}
		return
	}
	if !strings.Contains(v, "=") {
		c.e.at(at, "%s: is not a PostgreSQL URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE) or key=value list", path)
	}
}

// writtenPassword reports whether raw (as written, before expansion)
// holds a literal password: in the URL's user information, in a password=
// query parameter or in a password= keyword.
func writtenPassword(raw string) bool {
	literal := func(p string) bool { return p != "" && !strings.Contains(p, "${") }
	if _, rest, ok := strings.Cut(raw, "://"); ok {
		auth := rest
		if i := strings.IndexAny(auth, "/?#"); i >= 0 {
			auth = auth[:i]
		}
		if at := strings.LastIndexByte(auth, '@'); at >= 0 {
			if _, pw, ok := strings.Cut(auth[:at], ":"); ok && literal(pw) {
				return true
			}
		}
	}
	for i := 0; ; {
		j := strings.Index(raw[i:], "password=")
		if j < 0 {
			return false
		}
		i += j + len("password=")
		end := strings.IndexAny(raw[i:], "& \t")
		if end < 0 {
			end = len(raw) - i
		}
		if literal(raw[i : i+end]) {
			return true
		}
	}
}

func (c *checker) s3(b *S3Source, path string) {
	switch {
	case !b.Spans.Has("bucket"):
		c.required(b.Spans, "bucket", path)
	case !validBucket.MatchString(string(b.Bucket)) || strings.Contains(string(b.Bucket), ".."):
		c.e.at(b.Spans.Of("bucket"), "%s.bucket: is not a bucket name (3 to 63 lowercase letters, digits, . and -)", path)
	}
	if b.Spans.Has("endpoint") {
		u, err := url.Parse(string(b.Endpoint))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			c.e.at(b.Spans.Of("endpoint"), "%s.endpoint: is not an http:// or https:// base URL without credentials", path)
		}
	}
	if b.Spans.Has("region") && !validRegion.MatchString(string(b.Region)) {
		c.e.at(b.Spans.Of("region"), "%s.region: is not a region name such as us-east-1", path)
	}
	if b.AccessKey.IsSet() != b.SecretKey.IsSet() {
		c.e.at(b.Spans.Self(), "%s: give both access_key and secret_key, or neither (the AWS default chain)", path)
	}
	for _, k := range []struct {
		key string
		s   Secret
	}{{"secret_key", b.SecretKey}, {"session_token", b.SessionToken}} {
		if k.s.IsSet() && !referenceOnly(k.s.raw) {
			c.e.at(b.Spans.Of(k.key), "%s.%s: must be one ${NAME} reference: secrets are not written in the file", path, k.key)
		}
	}
	if b.SessionToken.IsSet() && !b.AccessKey.IsSet() {
		c.e.at(b.Spans.Of("session_token"), "%s.session_token: needs access_key and secret_key", path)
	}
}

func (c *checker) policy() {
	p, sp := c.f.Policy, c.f.Spans
	missing := false // reported already: no second error about the same cause
	if p != nil && !p.Database {
		s := c.pgSourceRef(p.Source, p.Spans, "policy")
		if s != nil && s.Postgres.Policy != nil {
			c.e.at(p.Spans.Of("source"), "policy.source: %q has a policy of its own: give one of them", p.Source)
		}
		missing = s == nil
		c.decide(p, "policy")
	}
	for _, s := range c.f.Sources {
		pg := s.Postgres
		if pg == nil {
			continue
		}
		path := "sources." + s.Name + ".postgres.policy"
		if own := pg.Policy; own != nil && !own.Database {
			if own.Spans.Has("source") {
				c.e.at(own.Spans.Of("source"), "%s.source: a source's own policy runs on the source itself: leave source out", path)
			}
			c.decide(own, path)
		}
		if c.f.policyOf(s.Name) != nil || !c.f.serves(s.Name) {
			continue
		}
		switch {
		case p == nil && !missing:
			missing = true
			c.e.at(sp.Self(), "policy: is required: %s (row-level security decides) or a decide statement, for the file or under each postgres source", PolicyDatabase)
		case p != nil && !missing:
			c.e.at(pg.Spans.Self(), "sources.%s.postgres: policy is required: policy.decide runs on %q and decides only its resources; write policy: %s or a decide statement for those of %q", s.Name, p.Source, PolicyDatabase, s.Name)
		}
	}
}

// decide checks a decide policy's statement.
func (c *checker) decide(p *Policy, path string) {
	if !p.Spans.Has("decide") {
		c.e.at(p.Spans.Self(), "%s: decide is required: one statement that decides all of a read's keys (or write policy: %s)", path, PolicyDatabase)
		return
	}
	c.statement(p.Decide, p.Spans, "decide", path, nil, decideParams, []string{"keys"})
}

// policyOf is the policy of the resources of PostgreSQL source name: its
// own; else the file's, when that is database or names the source; else
// nil. It is the one place that says which policy decides what.
func (f *File) policyOf(name string) *Policy {
	for _, s := range f.Sources {
		if s.Name == name && s.Postgres != nil && s.Postgres.Policy != nil {
			return s.Postgres.Policy
		}
	}
	if p := f.Policy; p != nil && (p.Database || p.Source == name) {
		return p
	}
	return nil
}

// pgSourceRef checks that the source key names a PostgreSQL source.
func (c *checker) pgSourceRef(name string, sp Spans, path string) *Source {
	switch s := c.sources[name]; {
	case !sp.Has("source"):
		c.e.at(sp.Self(), "%s: source is required", path)
	case s == nil:
		c.e.at(sp.Of("source"), "%s.source: no source is named %q", path, name)
	case s.Postgres == nil:
		c.e.at(sp.Of("source"), "%s.source: %q is not a postgres source", path, name)
	default:
		return s
	}
	return nil
}

// statement checks one SQL statement held under key: its $names must be
// captures or one of extra, and it must use every name of required.
func (c *checker) statement(sql string, sp Spans, key, path string, captures, extra, required []string) {
	params, problem, off := scanSQL(sql)
	if problem != "" {
		c.e.at(c.f.sqlPos(sp, key, sql, off), "%s.%s: %s", path, key, problem)
		return
	}
	used := map[string]bool{}
	for _, p := range params {
		used[p.Name] = true
		if !slices.Contains(captures, p.Name) && !slices.Contains(extra, p.Name) {
			at := c.f.sqlPos(sp, key, sql, p.Offset)
			if len(captures) == 0 {
				c.e.at(at, "%s.%s: $%s is not one of %s", path, key, p.Name, dollarList(extra))
			} else {
				c.e.at(at, "%s.%s: $%s is neither a capture of the template (%s) nor one of %s", path, key, p.Name, strings.Join(captures, ", "), dollarList(extra))
			}
			return
		}
	}
	for _, r := range required {
		if !used[r] {
			c.e.at(sp.Of(key), "%s.%s: must use $%s", path, key, r)
			return
		}
	}
}

func dollarList(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "$" + n
	}
	return strings.Join(out, ", ")
}

// sqlPos is the position of byte off of the SQL under key: exact in a
// literal block (|) or a one-line value, else the value's start.
func (f *File) sqlPos(sp Spans, key, sql string, off int) Position {
	at := sp.Of(key)
	n := sp.nodes[key]
	if n == nil {
		return at
	}
	nl := strings.Count(sql[:off], "\n")
	col := off - (strings.LastIndexByte(sql[:off], '\n') + 1)
	switch {
	case n.Style&literalStyle != 0:
		line := n.Line + 1 + nl
		if line-1 >= len(f.lines) {
			return at
		}
		indent := blockIndent(f.lines, n.Line)
		return Position{Line: line, Column: indent + col + 1}
	case nl == 0 && n.Style&(singleStyle|doubleStyle) != 0:
		return Position{Line: n.Line, Column: n.Column + 1 + col}
	case nl == 0 && !strings.Contains(sql, "\n"):
		return Position{Line: n.Line, Column: n.Column + col}
	}
	return at
}

// blockIndent is the indentation of a literal block whose indicator is on
// line (1-based): that of its first line with text.
func blockIndent(lines []string, line int) int {
	for _, l := range lines[min(line, len(lines)):] {
		if strings.TrimSpace(l) != "" {
			return len(l) - len(strings.TrimLeft(l, " "))
		}
	}
	return 0
}

// captures returns the {names} of a template, in order.
func captures(tmpl string) []string {
	var out []string
	for _, m := range captureRe.FindAllStringSubmatch(tmpl, -1) {
		out = append(out, m[1])
	}
	return out
}

func (c *checker) resource(r *Resource) {
	path := "resources." + r.Name
	sp := r.Spans
	c.name("resource", r.Name, sp.Self())
	if sp.Has("uri") == sp.Has("template") {
		c.e.at(sp.Self(), "%s: give exactly one of uri and template", path)
		return
	}
	tmpl, family := strings.CutSuffix(r.Template, "/...")
	caps := captures(tmpl)
	for _, sc := range r.Scopes {
		if sc == "" || strings.ContainsAny(sc, " \"\\") {
			c.e.at(sp.Of("scopes"), "%s.scopes: a scope may not be empty or hold spaces, quotes or backslashes", path)
		}
	}
	if r.Annotations != nil && r.Annotations.Priority != nil && (*r.Annotations.Priority < 0 || *r.Annotations.Priority > 1) {
		c.e.at(r.Annotations.Spans.Of("priority"), "%s.annotations.priority: must be between 0 and 1", path)
	}
	if !sp.Has("source") {
		c.e.at(sp.Self(), "%s: source is required", path)
		return
	}
	src := c.sources[r.Source]
	if src == nil {
		c.e.at(sp.Of("source"), "%s.source: no source is named %q", path, r.Source)
		return
	}
	if src.Postgres != nil {
		if family {
			c.e.at(sp.Of("template"), "%s.template: a ... segment is for S3 key families; a postgres resource names its captures", path)
		}
		c.pgResource(r, caps, path)
		return
	}
	c.s3Resource(r, family, caps, path)
}

// s3Only and pgOnly are the keys that make sense for one kind of source.
var (
	s3Only = []string{"prefix", "max_depth", "grant", "public", "list"}
	pgOnly = []string{"plan", "body", "bundle", "item_uri", "anchored", "completion", "object", "listen"}
)

func (c *checker) pgResource(r *Resource, caps []string, path string) {
	sp := r.Spans
	for _, k := range s3Only {
		if sp.Has(k) {
			c.e.at(sp.Of(k), "%s.%s: is for S3 resources; %q is a postgres source", path, k, r.Source)
		}
	}
	planKey := "plan"
	switch {
	case sp.Has("plan") == sp.Has("bundle"):
		c.e.at(sp.Self(), "%s: give exactly one of plan (one item) and bundle (several items)", path)
		return
	case sp.Has("plan"):
		c.statement(r.Plan, sp, "plan", path, caps, planParams, caps)
		if sp.Has("item_uri") {
			c.e.at(sp.Of("item_uri"), "%s.item_uri: is for a bundle; a plan's item is the request URI", path)
		}
		if sp.Has("anchored") {
			c.e.at(sp.Of("anchored"), "%s.anchored: is for a bundle; a plan's missing row is already unavailable", path)
		}
	default:
		planKey = "bundle"
		c.statement(r.Bundle, sp, "bundle", path, caps, planParams, caps)
		if !sp.Has("item_uri") {
			c.e.at(sp.Of("bundle"), "%s: item_uri is required with bundle: each row's item URI, such as doc://tenants/{tenant_id}/documents/{id}", path)
		} else if msg := uriPatternProblem(r.ItemURI); msg != "" {
			c.e.at(sp.Of("item_uri"), "%s.item_uri: %s", path, msg)
		}
	}
	objectOnly := planKey == "plan" && !sp.Has("body") && r.Object != nil
	switch {
	case objectOnly:
		if r.Object.Spans.Has("uri") {
			c.e.at(r.Object.Spans.Of("uri"), "%s.object.uri: a resource without body serves the row's object alone, as the request URI: leave uri out", path)
		}
	case !sp.Has("body"):
		also := ""
		if planKey == "plan" {
			also = " (a plan without body serves its row's object alone, and needs object)"
		}
		c.e.at(sp.Of(planKey), "%s: body is required with %s: the statement that reads a planned item by $key%s", path, planKey, also)
	default:
		c.statement(r.Body, sp, "body", path, nil, bodyParams, []string{"key"})
	}
	for _, v := range sortedKeys(r.Completion) {
		key := "completion." + v
		if !slices.Contains(caps, v) {
			c.e.at(sp.Of(key+":key"), "%s.completion: %s is not a capture of the template", path, v)
			continue
		}
		var others []string
		for _, o := range caps {
			if o != v {
				others = append(others, o)
			}
		}
		c.statement(r.Completion[v], sp, key, path, others, completionParams, []string{"prefix"})
	}
	if o := r.Object; o != nil {
		switch s := c.sources[o.Source]; {
		case !o.Spans.Has("source"):
			c.e.at(o.Spans.Self(), "%s.object: source is required: the S3 source that holds the objects", path)
		case s == nil:
			c.e.at(o.Spans.Of("source"), "%s.object.source: no source is named %q", path, o.Source)
		case s.S3 == nil:
			c.e.at(o.Spans.Of("source"), "%s.object.source: %q is not an s3 source", path, o.Source)
		}
		if o.Spans.Has("uri") {
			if msg := uriPatternProblem(o.URI); msg != "" {
				c.e.at(o.Spans.Of("uri"), "%s.object.uri: %s", path, msg)
			}
		}
	}
	if sp.Has("listen") && !postgres.ValidChannel(r.Listen) {
		c.e.at(sp.Of("listen"), "%s.listen: %q is not a channel name (lowercase letters, digits and _, up to 63)", path, r.Listen)
	}
}

// uriPatternProblem checks an item URI pattern: an absolute URI whose
// {column} placeholders name columns.
func uriPatternProblem(p string) string {
	scheme, rest, ok := strings.Cut(p, "://")
	if !ok || scheme == "" || rest == "" || strings.ContainsAny(scheme, "{}") {
		return "is not an absolute URI pattern such as doc://tenants/{tenant_id}/documents/{id}"
	}
	open := false
	start := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '{':
			if open {
				return "a { inside a placeholder"
			}
			open, start = true, i+1
		case '}':
			if !open {
				return "a } without its {"
			}
			if name := p[start:i]; name == "" || !isIdentStart(name[0]) || strings.IndexFunc(name, func(r rune) bool { return r > 0x7f || !isIdentChar(byte(r)) }) >= 0 {
				return fmt.Sprintf("{%s} does not name a column", name)
			}
			open = false
		}
	}
	if open {
		return "a { without its }"
	}
	return ""
}

func (c *checker) s3Resource(r *Resource, family bool, caps []string, path string) {
	sp := r.Spans
	for _, k := range pgOnly {
		if sp.Has(k) {
			c.e.at(sp.Of(k), "%s.%s: is for postgres resources; %q is an s3 source", path, k, r.Source)
		}
	}
	if r.URI != "" {
		c.e.at(sp.Of("uri"), "%s.uri: an S3 resource has a template whose captures name the key", path)
		return
	}
	if sp.Has("list") {
		c.listing(r, family, caps, path)
		return
	}
	c.gate(r, path)
	at := sp.Of("prefix")
	prefixCaps, err := s3store.KeyPrefixCaptures(r.Prefix)
	if err != nil {
		c.e.at(at, "%s.prefix: %s", path, strings.TrimPrefix(err.Error(), "s3store: "))
		return
	}
	for i, v := range prefixCaps {
		if slices.Contains(prefixCaps[:i], v) {
			c.e.at(at, "%s.prefix: {%s} is used twice", path, v)
			return
		}
	}
	if !family {
		switch {
		case sp.Has("max_depth"):
			c.e.at(sp.Of("max_depth"), "%s.max_depth: is for a key family, whose template ends in /...", path)
		case len(prefixCaps) > 0:
			c.e.at(at, "%s.prefix: captures only in a key family (a template ending in /...); here the template's captures follow the prefix", path)
		case len(caps) == 0:
			c.e.at(sp.Of("template"), "%s.template: needs a capture for the key, or a last /... segment", path)
		}
		return
	}
	switch {
	case !sp.Has("max_depth"):
		c.e.at(sp.Of("template"), "%s: max_depth is required with ...: how many segments it stands for at most", path)
		return
	case r.MaxDepth < 1 || r.MaxDepth > MaxDepth:
		c.e.at(sp.Of("max_depth"), "%s.max_depth: must be from 1 to %d", path, MaxDepth)
		return
	case !sameSet(prefixCaps, caps):
		c.e.at(at, "%s.prefix: must capture exactly the template's captures (%s), so that each URI names one key", path, strings.Join(caps, ", "))
	}
	for i := 1; i <= r.MaxDepth; i++ {
		if slices.Contains(caps, familyVar(i)) {
			c.e.at(sp.Of("template"), "%s.template: {%s} is the name of key segment %d of the family", path, familyVar(i), i)
			return
		}
	}
}

// gate checks that a statement grants an S3 resource's objects, or that
// the file says in so many words that every caller may read them.
func (c *checker) gate(r *Resource, path string) {
	sp := r.Spans
	switch g := r.Grant; {
	case g != nil && r.Public:
		c.e.at(sp.Of("public"), "%s.public: give grant or public: true, not both", path)
	case g == nil && !r.Public:
		c.e.at(sp.Self(), "%s: no statement grants its objects, so every token holder could read every key under its prefix: "+
			"add grant (source: a postgres source, keys: a statement returning the keys the caller may read) or, for objects meant for everyone, public: true", path)
	case g != nil:
		switch s := c.sources[g.Source]; {
		case !g.Spans.Has("source"):
			c.e.at(g.Spans.Self(), "%s.grant: source is required: the postgres source the statement runs on", path)
		case s == nil:
			c.e.at(g.Spans.Of("source"), "%s.grant.source: no source is named %q", path, g.Source)
		case s.Postgres == nil:
			c.e.at(g.Spans.Of("source"), "%s.grant.source: %q is not a postgres source", path, g.Source)
		}
		if !g.Spans.Has("keys") {
			c.e.at(g.Spans.Self(), "%s.grant: keys is required: the statement returning the keys (column key) or key prefixes (column prefix) the caller may read", path)
		}
	}
}

// listing checks a resource that lists a key family's objects: the family
// gates it, so it has no gate, prefix or depth of its own.
func (c *checker) listing(r *Resource, family bool, caps []string, path string) {
	sp := r.Spans
	for _, k := range []string{"prefix", "max_depth", "grant", "public"} {
		if sp.Has(k) {
			c.e.at(sp.Of(k), "%s.%s: a listing takes its prefix, depth and gate from the key family it lists (%s): leave %s out", path, k, r.List, k)
			return
		}
	}
	if family {
		c.e.at(sp.Of("template"), "%s.template: a listing's template names the prefix it lists, without a last /... segment", path)
		return
	}
	fam := c.resources[r.List]
	switch {
	case fam == nil:
		c.e.at(sp.Of("list"), "%s.list: no resource is named %q", path, r.List)
		return
	case fam.Source != r.Source || !strings.HasSuffix(fam.Template, "/...") || fam.Spans.Has("list"):
		c.e.at(sp.Of("list"), "%s.list: %q is not a key family of source %q (an S3 resource whose template ends in /...)", path, r.List, r.Source)
		return
	}
	famCaps := captures(strings.TrimSuffix(fam.Template, "/..."))
	if !sameSet(caps, famCaps) {
		c.e.at(sp.Of("template"), "%s.template: must capture exactly the captures of %s (%s), which fill its prefix %s", path, r.List, strings.Join(famCaps, ", "), fam.Prefix)
		return
	}
	g := fam.Grant
	if g == nil || fam.Public {
		return // public, or refused at the family already
	}
	params, problem, _ := scanSQL(g.Keys)
	if problem != "" {
		return // reported at the family's grant
	}
	for _, p := range params {
		if p.Name == "key" || !slices.Contains(famCaps, p.Name) && p.Name != "principal" && p.Name != "binding" {
			c.e.at(c.f.sqlPos(g.Spans, "keys", g.Keys, p.Offset), "resources.%s.grant.keys: $%s: %s lists %s's objects and asks this grant once for the whole prefix, so the grant must return prefixes by $principal and the captures (%s), not by the key or its segments",
				r.List, p.Name, r.Name, r.List, strings.Join(famCaps, ", "))
			return
		}
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// origin is what produced one throwaway definition: a resource and the
// key whose text it is.
type origin struct {
	r   *Resource
	key string // "uri" or "template"
}

// definitions returns the core definitions the file registers, in order,
// each with the resource and key that define it: a resource's own, or for
// a key family one template per depth (base/{k1}, base/{k1}/{k2}, ...).
// Object references register no definition of their own: the object is an
// item of the row's read.
func (f *File) definitions() ([]core.ResourceDefinition, []origin) {
	var defs []core.ResourceDefinition
	var origins []origin
	for i := range f.Resources {
		r := &f.Resources[i]
		d := core.ResourceDefinition{Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType}
		if a := r.Annotations; a != nil {
			d.Annotations = &core.Annotations{Audience: a.Audience, Priority: a.Priority, LastModified: a.LastModified}
		}
		switch {
		case r.URI != "":
			d.URI = r.URI
			defs, origins = append(defs, d), append(origins, origin{r, "uri"})
		case strings.HasSuffix(r.Template, "/..."):
			base := strings.TrimSuffix(r.Template, "/...")
			for depth := 1; depth <= r.MaxDepth; depth++ {
				d.URITemplate = familyTemplate(base, depth)
				defs, origins = append(defs, d), append(origins, origin{r, "template"})
			}
		default:
			d.URITemplate = r.Template
			defs, origins = append(defs, d), append(origins, origin{r, "template"})
		}
	}
	return defs, origins
}

// familyTemplate returns the template of a key family at depth: base then
// depth segments captured as {k1} ... {kdepth}, as package s3store names them.
func familyTemplate(base string, depth int) string {
	var b strings.Builder
	b.WriteString(base)
	for i := 1; i <= depth; i++ {
		b.WriteString("/{")
		b.WriteString(familyVar(i))
		b.WriteString("}")
	}
	return b.String()
}

// familyVar names the capture of key segment i (1-based) of a key family,
// as package s3store's KeyFamily does.
func familyVar(i int) string { return "k" + strconv.Itoa(i) }

// limits returns the gateway limits the file sets.
func (f *File) limits() core.ResourceLimits {
	l := f.Limits
	if l == nil {
		return core.ResourceLimits{}
	}
	return core.ResourceLimits{
		MaxURIBytes: l.MaxURIBytes, MaxPlanItems: l.MaxPlanItems, MaxItems: l.MaxItems,
		MaxItemBytes: int64(l.MaxItemBytes), MaxResponseBytes: int64(l.MaxResponseBytes),
		MaxResponseEncodedBytes: int64(l.MaxResponseEncodedBytes), ReportPayloadBytes: int64(l.ReportPayloadBytes),
		ReportEncodedBytes: int64(l.ReportEncodedBytes), MaxIssues: l.MaxIssues,
		ReadTimeout: time.Duration(l.ReadTimeout), ItemTimeout: time.Duration(l.ItemTimeout),
		ListPageSize: l.ListPageSize, MaxListPageSize: l.MaxListPageSize, ListPageBytes: int64(l.ListPageBytes),
	}
}

// ResourceLimits returns the gateway limits the file sets, zero for each
// it leaves to its default.
func (f *File) ResourceLimits() core.ResourceLimits { return f.limits() }

// gateway registers every definition with a throwaway core.Resources,
// so that URIs, templates, listing metadata and limits are checked by the
// gateway's own rules, and asks it for template overlaps.
func (c *checker) gateway() {
	f := c.f
	defs, origins := f.definitions()
	stub := core.ResolverFunc(func(context.Context, core.ResourceMatch) (core.ResourceReadPlan, error) {
		return core.ResourceReadPlan{}, errors.New("config: check only")
	})
	reader := core.ReaderFunc(func(context.Context, core.ResourceTarget) (core.ResourcePayload, error) {
		return core.ResourcePayload{}, errors.New("config: check only")
	})
	bindings := make([]core.ResourceBinding, len(defs))
	for i, d := range defs {
		bindings[i] = core.ResourceBinding{Definition: d, Resolver: stub, Reader: reader}
	}
	deny := func(context.Context) error { return core.Unavailable(errors.New("config: check only")) }
	policy := core.ResourcePolicy{
		Discover: func(ctx context.Context, _ core.ResourceDescription) error { return deny(ctx) },
		Visibility: func(ctx context.Context, _ core.ResourceTarget) (core.Visibility, error) {
			return core.Visibility{}, deny(ctx)
		},
		Read: func(ctx context.Context, _ core.ResourceTarget) error { return deny(ctx) },
	}
	res, err := core.NewResources(bindings, policy, core.WithResourceLimits(f.limits()))
	var ce *core.ConfigError
	switch {
	case errors.As(err, &ce) && ce.Definition >= 0 && ce.Definition < len(origins):
		o := origins[ce.Definition]
		key, at := c.definitionField(o, ce.Field)
		c.e.at(at, "resources.%s.%s: %s", o.r.Name, key, coreReason(ce))
		return
	case errors.As(err, &ce) && f.Limits != nil:
		key := limitKey(ce.Field)
		c.e.at(f.Limits.Spans.Of(key), "limits.%s: %s", key, ce.Reason)
		return
	case err != nil:
		c.e.at(f.Spans.Self(), "%s", err.Error())
		return
	}
	overlaps, _ := res.TemplateOverlaps()
	if len(overlaps) > 0 {
		o := overlaps[0]
		a, b := origins[o.FirstBinding], origins[o.SecondBinding]
		_, at := c.definitionField(b, "URI")
		what := "resource " + a.r.Name
		c.e.at(at, "resources.%s: its template %s and the template %s of %s both match %s: make them differ by a literal segment or a segment count",
			b.r.Name, o.Second, o.First, what, o.Example)
	}
}

// coreReason is the rule a core.ConfigError names, with its field.
func coreReason(ce *core.ConfigError) string {
	if ce.Field == "URI" {
		return ce.Reason
	}
	return ce.Field + " " + ce.Reason
}

// definitionField maps a core field of a throwaway definition to the key
// of the file that wrote it.
func (c *checker) definitionField(o origin, field string) (string, Position) {
	sp := o.r.Spans
	switch {
	case field == "URI":
		return o.key, sp.Of(o.key)
	case field == "Title", field == "Description":
		k := strings.ToLower(field)
		return k, sp.Of(k)
	case field == "MIMEType":
		return "mime_type", sp.Of("mime_type")
	case strings.HasPrefix(field, "Annotations"):
		return "annotations", sp.Of("annotations")
	}
	return o.key, sp.Of(o.key)
}

// limitKey maps a core.ResourceLimits field name to its key in limits.
func limitKey(field string) string {
	t := reflect.TypeFor[Limits]()
	if f, ok := t.FieldByName(field); ok {
		if k := yamlName(f); k != "" {
			return k
		}
	}
	return strings.ToLower(field)
}
