package config

import (
	"errors"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

var (
	validName   = regexp.MustCompile(namePattern)
	validRegion = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
)

// checker checks a decoded file; every mistake goes to e.
type checker struct {
	e *errs
	f *File
}

func (c *checker) check() {
	f := c.f
	switch {
	case !f.Spans.has("version"):
		c.e.at(f.Spans.start(), "version", "is required (version: 1)")
	case f.Version != 1:
		c.e.at(f.Spans.of("version"), "version", "%d is not a version of this file format (1 is)", f.Version)
	}
	if len(f.Sources) == 0 {
		c.e.at(f.Spans.of("sources"), "sources", "at least one source is required")
	}
	if len(f.Resources) == 0 {
		c.e.at(f.Spans.of("resources"), "resources", "at least one resource is required")
	}
	for i := range f.Sources {
		c.source(&f.Sources[i])
	}
	c.policy()
	for i := range f.Resources {
		c.resource(&f.Resources[i])
	}
	c.oauth() // oauth.go
	c.audit() // audit.go
	if len(c.e.list) == 0 {
		c.gateway()
	}
}

func (c *checker) name(kind, name string, at Position) {
	if !validName.MatchString(name) {
		c.e.at(at, "", "%s %q: a name is a letter then up to 63 letters, digits, _, . or -", kind, name)
	}
}

func (c *checker) source(s *Source) {
	path := "sources." + s.Name
	c.name("source", s.Name, s.Spans.start())
	switch {
	case (s.Postgres == nil) == (s.S3 == nil):
		c.e.at(s.Spans.start(), path, "give exactly one of postgres and s3")
	case s.Postgres != nil:
		c.postgres(s.Name, s.Postgres, path+".postgres")
	default:
		c.s3(s.S3, path+".s3")
	}
}

func (c *checker) postgres(name string, p *PostgresSource, path string) {
	if !p.Spans.has("url") {
		c.required(p.Spans, "url", path)
	} else {
		c.pgURL(p.URL, p.Spans.of("url"), path+".url")
	}
	if p.Spans.has("listen_url") {
		c.pgURL(p.ListenURL, p.Spans.of("listen_url"), path+".listen_url")
	}
	for i, sb := range p.Standbys {
		key := "standbys." + strconv.Itoa(i)
		c.pgURL(sb, p.Spans.of(key), path+"."+key)
	}
	if p.LoginRole && p.Spans.has("role") {
		c.e.at(p.Spans.of("role"), path+".role", "give role or login_role: true, not both")
	}
	// The rest are the store's rules, checked by the store.
	opts := postgres.SourceOptions{Name: name, Role: p.Role, LoginRole: p.LoginRole,
		StatementTimeout: time.Duration(p.StatementTimeout), MaxPlanItems: p.MaxPlanItems, Exempt: p.Exempt,
		StandbyMaxLag: time.Duration(p.StandbyMaxLag)}
	if err := postgres.CheckSource(opts); err != nil {
		c.e.add(c.f.storeError(err, name, p.Spans.start()))
	}
}

// required reports a missing key, or one whose ${NAME} is empty.
func (c *checker) required(sp Spans, key, path string) {
	if sp.blank(key) {
		c.e.at(sp.of(key), path+"."+key, "is required, and its ${...} expands to nothing")
		return
	}
	c.e.at(sp.start(), path, "%s is required", key)
}

// pgURL checks a PostgreSQL URL without echoing it: a password must come
// from the environment.
func (c *checker) pgURL(s Secret, at Position, path string) {
	raw, v := s.raw, s.value
	if p := writtenPassword(raw); p {
		c.e.at(at, path, "a password is written in the file: take it from the environment (${NAME})")
		return
	}
	if strings.Contains(v, "://") {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			c.e.at(at, path, "is not a PostgreSQL URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE)")
		}
		return
	}
	if !strings.Contains(v, "=") {
		c.e.at(at, path, "is not a PostgreSQL URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE) or key=value list")
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
	switch err := s3store.CheckBucketName(string(b.Bucket)); {
	case b.Optional && b.Spans.blank("bucket"): // left out (leaveOut)
	case !b.Spans.has("bucket"):
		c.required(b.Spans, "bucket", path)
	case err != nil:
		c.e.at(b.Spans.of("bucket"), path+".bucket", "%s", err.(*core.ConfigError).Reason)
	}
	if b.Spans.has("endpoint") {
		u, err := url.Parse(string(b.Endpoint))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			c.e.at(b.Spans.of("endpoint"), path+".endpoint", "is not an http:// or https:// base URL without credentials")
		}
	}
	if b.Spans.has("region") && !validRegion.MatchString(string(b.Region)) {
		c.e.at(b.Spans.of("region"), path+".region", "is not a region name such as us-east-1")
	}
	if b.AccessKey.isSet() != b.SecretKey.isSet() {
		c.e.at(b.Spans.start(), path, "give both access_key and secret_key, or neither (the AWS default chain)")
	}
	for _, k := range []struct {
		key string
		s   Secret
	}{{"secret_key", b.SecretKey}, {"session_token", b.SessionToken}} {
		if k.s.isSet() && !secretRef.MatchString(k.s.raw) {
			c.e.at(b.Spans.of(k.key), path+"."+k.key, "must be one ${NAME} reference: secrets are not written in the file")
		}
	}
	if b.SessionToken.isSet() && !b.AccessKey.isSet() {
		c.e.at(b.Spans.of("session_token"), path+".session_token", "needs access_key and secret_key")
	}
}

func (c *checker) policy() {
	p, sp := c.f.Policy, c.f.Spans
	missing := false // reported already: no second error about the same cause
	if p != nil && !p.Database {
		s := c.sourceRef(p.Source, p.Spans, "policy", "a postgres", "")
		if s != nil && s.Postgres.Policy != nil {
			c.e.at(p.Spans.of("source"), "policy.source", "%q has a policy of its own: give one of them", p.Source)
		}
		missing = s == nil
		if s != nil {
			c.decide(p, s.Name, "policy")
		}
	}
	for _, s := range c.f.Sources {
		pg := s.Postgres
		if pg == nil {
			continue
		}
		path := "sources." + s.Name + ".postgres.policy"
		if own := pg.Policy; own != nil && !own.Database {
			if own.Spans.has("source") {
				c.e.at(own.Spans.of("source"), path+".source", "a source's own policy runs on the source itself: leave source out")
			}
			c.decide(own, s.Name, path)
		}
		if c.f.policyOf(s.Name) != nil || !c.f.uses(s.Name, false) {
			continue
		}
		switch {
		case p == nil && !missing:
			missing = true
			c.e.at(sp.start(), "policy", "is required: %s (row-level security decides) or a decide statement, for the file or under each postgres source", policyDatabase)
		case p != nil && !missing:
			c.e.at(pg.Spans.start(), "sources."+s.Name+".postgres", "policy is required: policy.decide runs on %q and decides only its resources; write policy: %s or a decide statement for those of %q", p.Source, policyDatabase, s.Name)
		}
	}
}

// decide checks a decide policy's statement.
func (c *checker) decide(p *Policy, source, path string) {
	if !p.Spans.has("decide") {
		c.e.at(p.Spans.start(), path, "decide is required: one statement that decides all of a read's keys (or write policy: %s)", policyDatabase)
		return
	}
	if err := postgres.CheckPolicy(source, p.Decide); err != nil {
		c.e.add(c.f.storeError(err, source, p.Spans.of("decide")))
	}
}

// policyOf is the policy of the resources of PostgreSQL source name: its
// own; else the file's, when that is database or names the source; else
// nil. It is the one place that says which policy decides what.
func (f *File) policyOf(name string) *Policy {
	if s := f.source(name); s != nil && s.Postgres != nil && s.Postgres.Policy != nil {
		return s.Postgres.Policy
	}
	if p := f.Policy; p != nil && (p.Database || p.Source == name) {
		return p
	}
	return nil
}

// sourceRef checks that the source key of the mapping at path names a
// source of kind ("a postgres", "an s3", or "" for either); why follows
// "source is required" when the key is missing.
func (c *checker) sourceRef(name string, sp Spans, path string, kind string, why string) *Source {
	switch s := c.f.source(name); {
	case !sp.has("source"):
		c.e.at(sp.start(), path, "source is required%s", why)
	case s == nil:
		c.e.at(sp.of("source"), path+".source", "no source is named %q", name)
	case kind != "" && (s.S3 != nil) != (kind == "an s3"):
		c.e.at(sp.of("source"), path+".source", "%q is not %s source", name, kind)
	default:
		return s
	}
	return nil
}

// sqlPos is the position of byte off of the SQL under key: exact in a
// literal block (|) or a one-line value, else the value's start.
func (f *File) sqlPos(sp Spans, key, sql string, off int) Position {
	at := sp.of(key)
	n, ok := sp.nodes[key]
	if !ok {
		return at
	}
	nl := strings.Count(sql[:off], "\n")
	col := off - (strings.LastIndexByte(sql[:off], '\n') + 1)
	switch {
	case n.style&yaml.LiteralStyle != 0:
		line := n.line + 1 + nl
		if line-1 >= len(f.lines) {
			return at
		}
		indent := blockIndent(f.lines, n.line)
		return Position{Line: line, Column: indent + col + 1}
	case nl == 0 && n.style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0:
		return Position{Line: n.line, Column: n.column + 1 + col}
	case nl == 0 && !strings.Contains(sql, "\n"):
		return Position{Line: n.line, Column: n.column + col}
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

func (c *checker) resource(r *Resource) {
	path := "resources." + r.Name
	sp := r.Spans
	c.name("resource", r.Name, sp.start())
	if sp.has("uri") == sp.has("template") {
		c.e.at(sp.start(), path, "give exactly one of uri and template")
		return
	}
	family := strings.HasSuffix(r.Template, "/...")
	for _, sc := range r.Scopes {
		if sc == "" || strings.ContainsAny(sc, " \"\\") {
			c.e.at(sp.of("scopes"), path+".scopes", "a scope may not be empty or hold spaces, quotes or backslashes")
		}
	}
	src := c.sourceRef(r.Source, sp, path, "", "")
	if src == nil {
		return
	}
	if src.Postgres != nil {
		if family {
			c.e.at(sp.of("template"), path+".template", "a ... segment is for S3 key families; a postgres resource names its captures")
		}
		c.pgResource(r, path)
		return
	}
	c.s3Resource(r, family, path)
}

// s3Only and pgOnly are the keys that make sense for one kind of source:
// those of its part of a Resource.
var (
	s3Only = fieldKeys(reflect.TypeFor[S3Resource]())
	pgOnly = fieldKeys(reflect.TypeFor[PostgresResource]())
)

func (c *checker) pgResource(r *Resource, path string) {
	sp := r.Spans
	for _, k := range s3Only {
		if sp.has(k) {
			c.e.at(sp.of(k), path+"."+k, "is for S3 resources; %q is a postgres source", r.Source)
		}
	}
	var objects []string
	if o := r.Object; o != nil {
		if c.sourceRef(o.Source, o.Spans, path+".object", "an s3", ": the S3 source that holds the objects") != nil {
			objects = append(objects, o.Source)
		}
	}
	// The rest are the store's rules, checked by the store.
	if err := postgres.CheckBinding(r.Source, c.f.sqlBinding(*r, r.definition()), objects...); err != nil {
		c.e.add(c.f.storeError(err, r.Source, sp.start()))
	}
}

func (c *checker) s3Resource(r *Resource, family bool, path string) {
	sp := r.Spans
	for _, k := range pgOnly {
		if sp.has(k) {
			c.e.at(sp.of(k), path+"."+k, "is for postgres resources; %q is an s3 source", r.Source)
		}
	}
	if r.URI != "" {
		c.e.at(sp.of("uri"), path+".uri", "an S3 resource has a template whose captures name the key")
		return
	}
	if sp.has("list") {
		c.listing(r, family, path)
		return
	}
	c.gate(r, path)
	def := r.definition()
	var err error
	switch {
	case family || sp.has("max_depth"): // a key family, or meant as one
		err = s3store.CheckKeyFamily(r.family())
	case strings.ContainsAny(r.Prefix, "{}"):
		c.e.at(sp.of("prefix"), path+".prefix", "captures only in a key family (a template ending in /...); here the template's captures follow the prefix")
		return
	default:
		def.URITemplate = r.Template
		err = s3store.CheckBinding(def, r.Prefix)
	}
	if err != nil {
		c.e.add(c.f.storeError(err, r.Source, sp.start()))
		return
	}
	if r.Grant != nil {
		c.keyGrant(r.Grant, r, false)
	}
}

// keyGrant checks g's statement, when it names a postgres source and has
// one, as the store's grant for r (of a listing: prefix).
func (c *checker) keyGrant(g *Grant, r *Resource, prefix bool) {
	if s := c.f.source(g.Source); s == nil || s.Postgres == nil || !g.Spans.has("keys") {
		return // reported by gate
	}
	if err := postgres.CheckKeyGrant(g.Source, r.Name, g.Keys, r.captures(), prefix); err != nil {
		c.e.add(c.f.storeError(err, g.Source, g.Spans.of("keys")))
	}
}

// family is the key family of r, an S3 resource whose template ends in
// "/...", without its grant.
func (r *Resource) family() s3store.KeyFamily {
	return s3store.KeyFamily{Definition: r.definition(), URI: r.Template, Prefix: r.Prefix, MaxDepth: r.MaxDepth}
}

// captures are the names a URI of r, an S3 resource, captures: its
// template's, then a key family's k1, k2, ...
func (r *Resource) captures() []string {
	if strings.HasSuffix(r.Template, "/...") {
		return r.family().Captures()
	}
	vars, _ := core.TemplateVariables(r.Template) // a bad template is the gateway's to report
	return vars
}

// gate checks that a statement grants an S3 resource's objects, or that
// the file says in so many words that every caller may read them.
func (c *checker) gate(r *Resource, path string) {
	sp := r.Spans
	switch g := r.Grant; {
	case g != nil && r.Public:
		c.e.at(sp.of("public"), path+".public", "give grant or public: true, not both")
	case g == nil && !r.Public:
		c.e.at(sp.start(), path, "no statement grants its objects, so every token holder could read every key under its prefix: "+
			"add grant (source: a postgres source, keys: a statement returning the keys the caller may read) or, for objects meant for everyone, public: true")
	case g != nil:
		c.sourceRef(g.Source, g.Spans, path+".grant", "a postgres", ": the postgres source the statement runs on")
		if !g.Spans.has("keys") {
			c.e.at(g.Spans.start(), path+".grant", "keys is required: the statement returning the keys (column key) or key prefixes (column prefix) the caller may read")
		}
	}
}

// listing checks a resource that lists a key family's objects: the family
// gates it, so it has no gate, prefix or depth of its own.
func (c *checker) listing(r *Resource, family bool, path string) {
	sp := r.Spans
	for _, k := range []string{"prefix", "max_depth", "grant", "public"} {
		if sp.has(k) {
			c.e.at(sp.of(k), path+"."+k, "a listing takes its prefix, depth and gate from the key family it lists (%s): leave %s out", r.List, k)
			return
		}
	}
	if family {
		c.e.at(sp.of("template"), path+".template", "a listing's template names the prefix it lists, without a last /... segment")
		return
	}
	fam := c.f.resource(r.List)
	switch {
	case fam == nil:
		c.e.at(sp.of("list"), path+".list", "no resource is named %q", r.List)
		return
	case fam.Source != r.Source || !strings.HasSuffix(fam.Template, "/...") || fam.Spans.has("list"):
		c.e.at(sp.of("list"), path+".list", "%q is not a key family of source %q (an S3 resource whose template ends in /...)", r.List, r.Source)
		return
	}
	def := r.definition()
	def.URITemplate = r.Template
	if err := s3store.CheckListing(s3store.KeyListing{Definition: def, Family: fam.family()}); err != nil {
		c.e.add(c.f.storeError(err, r.Source, sp.of("template")))
		return
	}
	if fam.Grant != nil && !fam.Public { // else public, or refused at the family already
		c.keyGrant(fam.Grant, r, true)
	}
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
		d := r.definition()
		switch {
		case r.URI != "":
			d.URI = r.URI
			defs, origins = append(defs, d), append(origins, origin{r, "uri"})
		case strings.HasSuffix(r.Template, "/..."):
			for _, tmpl := range r.family().Templates() {
				d.URITemplate = tmpl
				defs, origins = append(defs, d), append(origins, origin{r, "template"})
			}
		default:
			d.URITemplate = r.Template
			defs, origins = append(defs, d), append(origins, origin{r, "template"})
		}
	}
	return defs, origins
}

// ResourceLimits returns the gateway limits the file sets, zero for each
// it leaves to its default: each field of [Limits] is the
// core.ResourceLimits field of the same name.
func (f *File) ResourceLimits() core.ResourceLimits {
	var out core.ResourceLimits
	if f.Limits != nil {
		from, to := reflect.ValueOf(*f.Limits), reflect.ValueOf(&out).Elem()
		for i := range from.NumField() {
			if field := to.FieldByName(from.Type().Field(i).Name); field.IsValid() {
				field.SetInt(from.Field(i).Int()) // counts, bytes and durations alike
			}
		}
	}
	return out
}

// gateway checks every definition and the limits by the gateway's own
// rules (core.CheckDefinitions), so that URIs, templates, listing metadata
// and limits are checked once, and reports the first template overlap.
func (c *checker) gateway() {
	f := c.f
	defs, origins := f.definitions()
	overlaps, err := core.CheckDefinitions(defs, f.ResourceLimits())
	var ce *core.ConfigError
	switch {
	case errors.As(err, &ce) && ce.Definition >= 0 && ce.Definition < len(origins):
		o := origins[ce.Definition]
		key, at, reason := c.definitionField(o, ce)
		c.e.at(at, "resources."+o.r.Name+"."+key, "%s", reason)
		return
	case errors.As(err, &ce) && f.Limits != nil:
		key := limitKey(ce.Path.Field)
		c.e.at(f.Limits.Spans.of(key), "limits."+key, "%s", ce.Reason)
		return
	case err != nil:
		c.e.at(f.Spans.start(), "", "%s", err.Error())
		return
	}
	if len(overlaps) > 0 {
		o := overlaps[0]
		a, b := origins[o.FirstBinding], origins[o.SecondBinding]
		_, at, _ := c.definitionField(b, &core.ConfigError{Path: core.ConfigPath{Field: "URI"}})
		what := "resource " + a.r.Name
		c.e.at(at, "resources."+b.r.Name, "its template %s and the template %s of %s both match %s: make them differ by a literal segment or a segment count",
			o.Second, o.First, what, o.Example)
	}
}

// definitionField maps a core field of a throwaway definition to the key
// of the file that wrote it and the rule's words: the resource's key of
// the same Go name, down its nested mappings (Annotations.Priority is
// annotations.priority) with the bare reason; else, for the URI and what
// the file does not write, the key of its URI or template, with the
// field's name before the reason.
func (c *checker) definitionField(o origin, ce *core.ConfigError) (key string, at Position, reason string) {
	v, key, at := reflect.ValueOf(*o.r), "", Position{}
	for name := range strings.SplitSeq(ce.Path.Field, ".") {
		k := keyOf(v.Type(), name)
		if ce.Path.Field == "URI" {
			return o.key, o.r.Spans.of(o.key), ce.Reason
		}
		if k == "" {
			return o.key, o.r.Spans.of(o.key), ce.Path.Field + " " + ce.Reason
		}
		sp := v.FieldByName("Spans").Interface().(Spans)
		key, at = strings.TrimPrefix(key+"."+k, "."), sp.of(k)
		if v = reflect.Indirect(v.FieldByName(name)); v.Kind() != reflect.Struct {
			break
		}
	}
	return key, at, ce.Reason
}

// limitKey maps a core.ResourceLimits field name to its key in limits.
func limitKey(field string) string {
	if k := keyOf(reflect.TypeFor[Limits](), field); k != "" {
		return k
	}
	return strings.ToLower(field)
}

// keyOf is the key that the field of struct type t named field (up to a
// '.') is written under, or "" when t has no such keyed field.
func keyOf(t reflect.Type, field string) string {
	name, _, _ := strings.Cut(field, ".")
	if f, ok := t.FieldByName(name); ok {
		return yamlName(f)
	}
	return ""
}
