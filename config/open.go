package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"go.opentelemetry.io/otel/trace"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/connerr"
	"go.phpboyscout.uk/mcp/resources/stores/postgres"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// OpenTimeout bounds each request Open makes to check a source.
const OpenTimeout = 10 * time.Second

// Served is what a file serves once [File.Open] has opened its sources
// (and checked them, unless [OpenOptions].Deferred leaves that to
// [Served.Check]): the bindings and the policy for core.NewResources, and
// what a server needs around them.
type Served struct {
	// Bindings are the file's bindings, in file order (a key family gives
	// one per depth).
	Bindings []core.ResourceBinding
	// SourceOf names the source of each binding, index for index (a
	// metric label).
	SourceOf []string
	// ObjectSourceOf names, index for index, the S3 source of the objects
	// a binding's rows reference (its object.source), or "".
	ObjectSourceOf []string
	// Policy is the file's policy.
	Policy core.ResourcePolicy
	// Ready has one check per source, in file order, for a readiness
	// probe: whether the database or bucket answers now.
	Ready []Ready
	// Lines describe what is served, one line per definition, as
	// mcp-resources check prints them: URI or template, name, source, kind
	// and what decides who reads it.
	Lines []string
	// Revision is the file's [File.Revision].
	Revision string
	// Changes are the change sources of the file's listen channels, one
	// per PostgreSQL source whose resources name one (postgres
	// Source.Listener, connecting with the source's listen_url or url),
	// then one s3store.Poller per S3 source that serves resources of its
	// own, polling the objects subscriptions depend on every
	// poll_interval. Open does not start them: a server watches them for
	// subscriptions.
	Changes []core.ChangeSource

	checks []sourceCheck // the start-up checks, one per source (see Check)

	closers []func()
}

// Ready is the readiness check of one source.
type Ready struct {
	// Source is the source's name.
	Source string
	// Check reports whether the source answers now.
	Check func(ctx context.Context) error
}

// sourceCheck is the start-up check of one source: it returns the *Error
// of the first thing wrong.
type sourceCheck func(ctx context.Context) *Error

// Check runs the start-up check of every source at once: each database
// answers, holds its role and prepares every statement with the columns it
// must return, its listen_url connects, each bucket answers. It waits for
// all of them and returns the first mistake in file order, as one
// [*Error], or nil. Until a source's check has passed, its statements
// serve nothing (postgres.ErrNotChecked). [File.Open] calls it unless
// [OpenOptions].Deferred is set; a server that defers it may answer
// clients meanwhile and call it once.
func (s *Served) Check(ctx context.Context) error {
	found := make([]*Error, len(s.checks))
	var wg sync.WaitGroup
	for i, c := range s.checks {
		wg.Go(func() { found[i] = c(ctx) })
	}
	wg.Wait()
	e := &errs{}
	for _, x := range found {
		if x != nil {
			e.list = append(e.list, x)
		}
	}
	if first := e.first(); first != nil {
		return first
	}
	return nil
}

// Close closes every connection pool Open opened.
func (s *Served) Close() {
	for _, c := range s.closers {
		c()
	}
	s.closers = nil
}

// OpenOptions configure [File.Open]. A nil *OpenOptions selects every
// default.
type OpenOptions struct {
	// Principal returns the caller of a request; nil means
	// core.ContextPrincipal.
	Principal core.PrincipalFunc
	// Logger receives the listeners' disconnects and reconnects; nil
	// discards them.
	Logger *slog.Logger
	// TracerProvider, when set, traces every PostgreSQL statement
	// (postgres.NewTracer) and S3 request (s3store.WithTracing) of the
	// file's sources.
	TracerProvider trace.TracerProvider
	// Deferred makes Open send no request: it builds the bindings and the
	// policy and leaves the checks of the sources to [Served.Check].
	Deferred bool
}

// Open connects to every source of the file and builds its bindings and
// policy with the stores' own constructors (postgres.NewSource,
// Source.Binding with SQLBinding.ObjectOnly for a plan without body,
// Source.Policy or postgres.DatabaseDecides,
// s3store.OpenBucket, Bucket.KeyBindings and Bucket.Binding), then checks
// them against the servers with [Served.Check], unless
// [OpenOptions].Deferred leaves that to the caller. A
// mistake is one [*Error] at the place in the file it concerns; no error
// holds a secret. On error nothing stays open.
func (f *File) Open(ctx context.Context, opts *OpenOptions) (_ *Served, err error) {
	if opts == nil {
		opts = &OpenOptions{}
	}
	e := &errs{file: f.Name}
	s := &Served{Revision: f.Revision()}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	fail := func() (*Served, error) { return nil, e.first() }

	buckets := map[string]*s3store.Bucket{}
	objects := map[string]postgres.ObjectSource{}
	pools := map[string]*pgxpool.Pool{}
	for _, src := range f.Sources {
		switch {
		case src.S3 != nil:
			b := src.S3
			client, err := s3store.NewClient(ctx, s3store.ClientConfig{Endpoint: string(b.Endpoint), Region: string(b.Region),
				UsePathStyle: b.PathStyle, AccessKeyID: b.AccessKey.Value(), SecretAccessKey: b.SecretKey.Value(), SessionToken: b.SessionToken.Value()},
				s3store.WithTracing(opts.TracerProvider))
			if err != nil {
				e.at(src.Spans.Self(), "sources.%s: the S3 client: %s", src.Name, redact(err, src))
				return fail()
			}
			bucket, err := s3store.OpenBucket(ctx, client, string(b.Bucket), &s3store.Options{Principal: opts.Principal, TypeByKey: true})
			if err != nil {
				e.at(b.Spans.Of("bucket"), "sources.%s.s3.bucket: %s", src.Name, reason(err, src))
				return fail()
			}
			buckets[src.Name], objects[src.Name] = bucket, bucket
			s.Ready = append(s.Ready, Ready{Source: src.Name, Check: bucket.Check})
		case src.Postgres != nil:
			p := src.Postgres
			cfg, err := pgxpool.ParseConfig(p.URL.Value())
			if err != nil {
				e.at(p.Spans.Of("url"), "sources.%s.postgres.url: is not a valid PostgreSQL URL", src.Name)
				return fail()
			}
			if opts.TracerProvider != nil {
				cfg.ConnConfig.Tracer = postgres.NewTracer(opts.TracerProvider)
			}
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				e.at(p.Spans.Of("url"), "sources.%s.postgres.url: %s", src.Name, redact(err, src))
				return fail()
			}
			s.closers = append(s.closers, pool.Close)
			pools[src.Name] = pool
			s.Ready = append(s.Ready, Ready{Source: src.Name, Check: pool.Ping})
		}
	}
	sources := map[string]*postgres.Source{}
	for _, src := range f.Sources {
		p := src.Postgres
		if p == nil {
			continue
		}
		ps, err := postgres.NewSource(pools[src.Name], postgres.SourceOptions{Name: src.Name, Role: p.Role, LoginRole: p.LoginRole,
			Principal: opts.Principal, StatementTimeout: time.Duration(p.StatementTimeout), MaxPlanItems: p.MaxPlanItems, Objects: objects})
		if err != nil {
			return nil, f.storeError(err, src.Spans.Self())
		}
		sources[src.Name] = ps
	}

	families := map[string][]s3store.KeyFamily{}
	familyAt := map[string]int{} // bucket -> index in s.Bindings where its families go
	for _, r := range f.Resources {
		def := core.ResourceDefinition{Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType}
		if a := r.Annotations; a != nil {
			def.Annotations = &core.Annotations{Audience: a.Audience, Priority: a.Priority, LastModified: a.LastModified}
		}
		if ps := sources[r.Source]; ps != nil {
			def.URI, def.URITemplate = r.URI, r.Template
			sb := postgres.SQLBinding{Definition: def, Plan: r.Plan, Bundle: r.Bundle, ItemURI: r.ItemURI, Anchored: r.Anchored, Listen: r.Listen, Body: r.Body, Complete: r.Completion}
			if f.withoutObjects[r.Name] {
				sb.WithoutObjects, sb.ObjectURI = true, r.Object.URI
			} else if o := r.Object; o != nil {
				sb.ObjectSource, sb.ObjectURI = o.Source, o.URI
				sb.ObjectOnly = r.Plan != "" && r.Body == ""
			}
			b, err := ps.Binding(sb)
			if err != nil {
				return nil, f.storeError(err, r.Spans.Self())
			}
			objSrc := ""
			if r.Object != nil && !f.withoutObjects[r.Name] {
				objSrc = r.Object.Source
			}
			s.Bindings, s.SourceOf = append(s.Bindings, b), append(s.SourceOf, r.Source)
			s.ObjectSourceOf = append(s.ObjectSourceOf, objSrc)
			s.Lines = append(s.Lines, f.describe(r, def.URI+def.URITemplate))
			continue
		}
		bucket := buckets[r.Source]
		if r.List != "" {
			b, err := f.listingBinding(bucket, def, r, sources)
			if err != nil {
				return nil, err
			}
			s.Bindings, s.SourceOf = append(s.Bindings, b), append(s.SourceOf, r.Source)
			s.ObjectSourceOf = append(s.ObjectSourceOf, "")
			s.Lines = append(s.Lines, f.describe(r, r.Template))
			continue
		}
		grant, err := f.keyGrant(r, sources)
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(r.Template, "/...") {
			if _, ok := familyAt[r.Source]; !ok {
				familyAt[r.Source] = len(s.Bindings)
			}
			families[r.Source] = append(families[r.Source], s3store.KeyFamily{Definition: def, URI: r.Template, Prefix: r.Prefix, MaxDepth: r.MaxDepth, Grant: grant})
			for d := 1; d <= r.MaxDepth; d++ {
				s.Lines = append(s.Lines, f.describe(r, familyTemplate(strings.TrimSuffix(r.Template, "/..."), d)))
			}
			continue
		}
		def.URITemplate = r.Template
		b, err := bucket.GrantedBinding(def, r.Prefix, grant)
		if err != nil {
			return nil, f.storeError(err, r.Spans.Self())
		}
		s.Bindings, s.SourceOf = append(s.Bindings, b), append(s.SourceOf, r.Source)
		s.ObjectSourceOf = append(s.ObjectSourceOf, "")
		s.Lines = append(s.Lines, f.describe(r, def.URITemplate))
	}
	// Key families go in at the place of their bucket's first one, so
	// that the bindings keep the file's order.
	for _, src := range f.Sources {
		fams := families[src.Name]
		if len(fams) == 0 {
			continue
		}
		bs, err := buckets[src.Name].KeyBindings(fams...)
		if err != nil {
			return nil, f.storeError(err, src.Spans.Self())
		}
		at := familyAt[src.Name]
		names := make([]string, len(bs))
		for i := range names {
			names[i] = src.Name
		}
		s.Bindings = append(s.Bindings[:at], append(bs, s.Bindings[at:]...)...)
		s.SourceOf = append(s.SourceOf[:at], append(names, s.SourceOf[at:]...)...)
		s.ObjectSourceOf = append(s.ObjectSourceOf[:at], append(make([]string, len(bs)), s.ObjectSourceOf[at:]...)...)
		for name, i := range familyAt {
			if i > at && name != src.Name {
				familyAt[name] = i + len(bs)
			}
		}
	}

	// Each PostgreSQL source's policy decides its own resources' reads and
	// nothing else; an S3 resource's grant decided before its plan.
	bySource := map[string]core.ResourcePolicy{}
	for _, src := range f.Sources {
		p := f.policyOf(src.Name)
		switch {
		case src.Postgres == nil || p == nil:
		case p.Database:
			bySource[src.Name] = postgres.DatabaseDecides()
		default:
			pol, err := sources[src.Name].Policy(p.Decide)
			if err != nil {
				return nil, f.storeError(err, p.Spans.Of("decide"))
			}
			bySource[src.Name] = pol
		}
	}
	byName := map[string]core.ResourcePolicy{}
	for _, r := range f.Resources {
		pol, ok := bySource[r.Source]
		if !ok {
			pol = postgres.DatabaseDecides()
		}
		byName[r.Name] = pol
	}
	s.Policy = routePolicy(byName)
	s.Policy = f.gateScopes(s.Policy) // scopes.go

	for _, src := range f.Sources {
		if src.S3 != nil {
			s.checks = append(s.checks, f.bucketCheck(src, buckets[src.Name]))
			continue
		}
		p, ps := src.Postgres, sources[src.Name]
		listen := f.listens(src.Name)
		lcfg := pools[src.Name].Config().ConnConfig.Copy()
		at, key := p.Spans.Of("url"), "url"
		var direct *pgx.ConnConfig // listen_url, checked with the source
		if v := p.ListenURL.Value(); v != "" && listen {
			at, key = p.Spans.Of("listen_url"), "listen_url"
			c, err := pgx.ParseConfig(v)
			if err != nil {
				e.at(at, "sources.%s.postgres.listen_url: is not a valid PostgreSQL URL", src.Name)
				return fail()
			}
			lcfg, direct = c, c
		}
		s.checks = append(s.checks, f.postgresCheck(src, pools[src.Name], ps, direct))
		if !listen {
			continue
		}
		var log *slog.Logger
		if opts.Logger != nil {
			log = opts.Logger.With("source", src.Name)
		}
		l, err := ps.Listener(lcfg, &postgres.ListenerOptions{Logger: log})
		if err != nil {
			e.at(at, "sources.%s.postgres.%s: %s", src.Name, key, reason(err, src))
			return fail()
		}
		s.Changes = append(s.Changes, l)
	}
	for _, src := range f.Sources {
		if src.S3 == nil || !f.serves(src.Name) {
			continue
		}
		var log *slog.Logger
		if opts.Logger != nil {
			log = opts.Logger.With("source", src.Name)
		}
		s.Changes = append(s.Changes, s3store.NewPoller(buckets[src.Name], &s3store.PollerOptions{Interval: time.Duration(src.S3.PollInterval), Logger: log}))
	}
	if !opts.Deferred {
		if err := s.Check(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// postgresCheck is the start-up check of the PostgreSQL source src: its
// server answers, ps's role and statements pass Source.Check, and direct,
// its listen_url when it has one, connects.
func (f *File) postgresCheck(src Source, pool *pgxpool.Pool, ps *postgres.Source, direct *pgx.ConnConfig) sourceCheck {
	return func(ctx context.Context) *Error {
		e := &errs{file: f.Name}
		p := src.Postgres
		cfg := pool.Config().ConnConfig
		cctx, cancel := context.WithTimeout(ctx, OpenTimeout)
		defer cancel()
		if err := pool.Ping(cctx); err != nil {
			e.at(p.Spans.Of("url"), "sources.%s.postgres.url: cannot reach PostgreSQL at %s:%d: %s", src.Name, cfg.Host, cfg.Port, pgCause(err, src))
			return e.first()
		}
		if err := ps.Check(cctx); err != nil {
			return asError(f.storeError(err, src.Spans.Self()))
		}
		if direct == nil {
			return nil
		}
		conn, err := pgx.ConnectConfig(cctx, direct)
		if err != nil {
			e.at(p.Spans.Of("listen_url"), "sources.%s.postgres.listen_url: cannot reach PostgreSQL at %s:%d: %s", src.Name, direct.Host, direct.Port, pgCause(err, src))
			return e.first()
		}
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil
	}
}

// bucketCheck is the start-up check of the S3 source src: Bucket.Check.
func (f *File) bucketCheck(src Source, bucket *s3store.Bucket) sourceCheck {
	return func(ctx context.Context) *Error {
		cctx, cancel := context.WithTimeout(ctx, OpenTimeout)
		defer cancel()
		err := bucket.Check(cctx)
		if err == nil {
			return nil
		}
		key := "bucket"
		if ce, ok := errors.AsType[*core.ConfigError](err); ok {
			key = map[string]string{"SecretAccessKey": "secret_key", "AccessKeyID": "access_key"}[ce.Field]
			if key == "" || !src.S3.Spans.Has(key) {
				key = "bucket"
			}
		}
		e := &errs{file: f.Name}
		e.at(src.S3.Spans.Of(key), "sources.%s.s3.%s: %s", src.Name, key, reason(err, src))
		return e.first()
	}
}

// asError is err, which storeError made, as the *Error it is.
func asError(err error) *Error {
	if x, ok := errors.AsType[*Error](err); ok {
		return x
	}
	return &Error{Msg: err.Error()}
}

// serves reports whether a resource of the file is served from source name.
func (f *File) serves(name string) bool {
	for _, r := range f.Resources {
		if r.Source == name {
			return true
		}
	}
	return false
}

// keyGrant builds the grant of an S3 resource from its grant statement;
// nil for a public one (the file's check let no other through).
func (f *File) keyGrant(r Resource, sources map[string]*postgres.Source) (s3store.KeyGrant, error) {
	if r.Grant == nil {
		return nil, nil
	}
	caps := captures(strings.TrimSuffix(r.Template, "/..."))
	if strings.HasSuffix(r.Template, "/...") {
		for d := 1; d <= r.MaxDepth; d++ {
			caps = append(caps, familyVar(d))
		}
	}
	g, err := sources[r.Grant.Source].KeyGrant(r.Name, r.Grant.Keys, caps)
	if err != nil {
		return nil, f.storeError(err, r.Grant.Spans.Of("keys"))
	}
	return g, nil
}

// listingBinding builds the binding of r, a listing of the key family
// r.List: gated as the family is, with the family's grant statement asked
// once about the listed prefix (postgres Source.PrefixGrant).
func (f *File) listingBinding(bucket *s3store.Bucket, def core.ResourceDefinition, r Resource, sources map[string]*postgres.Source) (core.ResourceBinding, error) {
	var fam Resource
	for _, x := range f.Resources {
		if x.Name == r.List {
			fam = x
		}
	}
	kf := s3store.KeyFamily{Definition: core.ResourceDefinition{Name: fam.Name}, URI: fam.Template, Prefix: fam.Prefix, MaxDepth: fam.MaxDepth}
	if g := fam.Grant; g != nil {
		grant, err := sources[g.Source].PrefixGrant(r.Name, g.Keys, captures(r.Template))
		if err != nil {
			return core.ResourceBinding{}, f.storeError(err, r.Spans.Of("list"))
		}
		kf.Grant = grant
	}
	maxKeys := f.limits().MaxPlanItems
	if maxKeys == 0 {
		maxKeys = core.DefaultResourceLimits().MaxPlanItems
	}
	def.URITemplate = r.Template
	b, err := bucket.ListingBinding(s3store.KeyListing{Definition: def, Family: kf, MaxKeys: min(maxKeys, s3store.MaxListingKeys), MaxURIBytes: f.limits().MaxURIBytes})
	if err != nil {
		return core.ResourceBinding{}, f.storeError(err, r.Spans.Of("template"))
	}
	return b, nil
}

// errPerTarget is the private cause when a file's policy is asked about one
// target: the gateway asks Decide, which knows the definition.
var errPerTarget = errors.New("config: a file's policy decides whole passes")

// routePolicy is the policy of a file: a pass, and a discovery, of a
// definition go to the policy of its resource (byName, by the definition's
// name, which is the resource's), and to no other, so that reads of one
// database never ask another. The per-target Visibility and Read, which
// the gateway does not call when Decide is set, hide and deny.
func routePolicy(byName map[string]core.ResourcePolicy) core.ResourcePolicy {
	of := func(name string) (core.ResourcePolicy, error) {
		p, ok := byName[name]
		if !ok {
			return core.ResourcePolicy{}, fmt.Errorf("config: no policy decides the definition %q", name)
		}
		return p, nil
	}
	return core.ResourcePolicy{
		Discover: func(ctx context.Context, d core.ResourceDescription) error {
			p, err := of(d.Name)
			if err != nil {
				return err
			}
			return p.Discover(ctx, d)
		},
		Visibility: func(context.Context, core.ResourceTarget) (core.Visibility, error) { return core.Visibility{}, nil },
		Read:       func(context.Context, core.ResourceTarget) error { return core.Unavailable(errPerTarget) },
		Decide: func(ctx context.Context, pass core.PolicyPass) ([]core.TargetDecision, error) {
			p, err := of(pass.Definition.Name)
			if err != nil {
				return nil, err
			}
			return p.Decide(ctx, pass)
		},
	}
}

// listens reports whether a resource of source name names a channel.
func (f *File) listens(name string) bool {
	for _, r := range f.Resources {
		if r.Source == name && r.Listen != "" {
			return true
		}
	}
	return false
}

// describe is the line check prints for one definition: its URI or
// template, name, source, kind, and what decides who reads it.
func (f *File) describe(r Resource, uri string) string {
	kind := "item"
	switch {
	case r.Bundle != "":
		kind = "bundle"
	case r.Object != nil && r.Body == "":
		kind = "object"
	case r.Object != nil:
		kind = "item+object"
	case r.List != "":
		kind = "listing"
	case r.Grant != nil || r.Public:
		kind = "s3"
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", uri, r.Name, r.Source, kind, f.decider(r))
}

// decider says what decides who reads r's items, as check prints it.
func (f *File) decider(r Resource) string {
	if r.List != "" {
		for _, fam := range f.Resources {
			if fam.Name == r.List && fam.Grant != nil {
				return "grant statement on " + fam.Grant.Source + ", once for the listed prefix"
			}
		}
		return "public: every token holder lists every key"
	}
	switch {
	case r.Public:
		return "public: every token holder reads every key"
	case r.Grant != nil:
		return "grant statement on " + r.Grant.Source
	}
	switch p := f.policyOf(r.Source); {
	case p == nil || p.Database:
		return "plan and body statements' row-level security"
	case p == f.Policy:
		return "plan statement's row-level security, then policy.decide on " + r.Source
	}
	return "plan statement's row-level security, then sources." + r.Source + ".postgres.policy.decide"
}

// The fields of the stores' ConfigErrors, mapped back to the file.
var (
	bindingField = regexp.MustCompile(`^source ([^:]+): binding "([^"]+)": (.+)$`)
	policyField  = regexp.MustCompile(`^source ([^:]+): policy: `)
	sourceField  = regexp.MustCompile(`^source ([^:]+): (Role|LoginRole|db)`)
	familyField  = regexp.MustCompile(`^key family "([^"]+)": (\w+)`)
	completeKind = regexp.MustCompile(`^complete "([^"]+)"`)
)

// storeError turns a store's error into one *Error at the key of the file
// it concerns, else at def.
func (f *File) storeError(err error, def Position) error {
	e := &errs{file: f.Name}
	var ce *core.ConfigError
	if !errors.As(err, &ce) {
		e.at(def, "%s", strings.Join(strings.Fields(f.redactAll(err.Error())), " "))
		return e.first()
	}
	res := func(name string) *Resource {
		for i := range f.Resources {
			if f.Resources[i].Name == name {
				return &f.Resources[i]
			}
		}
		return nil
	}
	src := func(name string) *Source {
		for i := range f.Sources {
			if f.Sources[i].Name == name {
				return &f.Sources[i]
			}
		}
		return nil
	}
	reason := f.redactAll(ce.Reason)
	if m := bindingField.FindStringSubmatch(ce.Field); m != nil && res(m[2]) != nil {
		r := res(m[2])
		key, at := bindingKey(r, m[3])
		e.at(at, "resources.%s.%s: %s", r.Name, key, reason)
		return e.first()
	}
	if m := policyField.FindStringSubmatch(ce.Field); m != nil && f.policyOf(m[1]) != nil {
		p, path := f.policyOf(m[1]), "policy.decide"
		if p != f.Policy {
			path = "sources." + m[1] + ".postgres.policy.decide"
		}
		e.at(p.Spans.Of("decide"), "%s: %s", path, reason)
		return e.first()
	}
	if m := sourceField.FindStringSubmatch(ce.Field); m != nil && src(m[1]) != nil && src(m[1]).Postgres != nil {
		s := src(m[1])
		key := map[string]string{"Role": "role", "LoginRole": "login_role", "db": "url"}[m[2]]
		e.at(s.Postgres.Spans.Of(key), "sources.%s.postgres.%s: %s", s.Name, key, reason)
		return e.first()
	}
	if m := familyField.FindStringSubmatch(ce.Field); m != nil && res(m[1]) != nil {
		r := res(m[1])
		key := map[string]string{"URI": "template", "Prefix": "prefix", "MaxDepth": "max_depth"}[m[2]]
		if key == "" {
			key = "template"
		}
		e.at(r.Spans.Of(key), "resources.%s.%s: %s", r.Name, key, reason)
		return e.first()
	}
	e.at(def, "%s: %s", ce.Field, reason)
	return e.first()
}

// bindingKey maps the field a SQL binding's error names to the file's key.
func bindingKey(r *Resource, field string) (string, Position) {
	kind, _, _ := strings.Cut(field, ": ")
	if m := completeKind.FindStringSubmatch(kind); m != nil {
		return "completion." + m[1], r.Spans.Of("completion." + m[1])
	}
	key := map[string]string{"plan": "plan", "bundle": "bundle", "body": "body", "ItemURI": "item_uri"}[kind]
	switch {
	case key != "":
		return key, r.Spans.Of(key)
	case kind == "ObjectURI" && r.Object != nil:
		return "object.uri", r.Object.Spans.Of("uri")
	case kind == "ObjectSource" && r.Object != nil:
		return "object.source", r.Object.Spans.Of("source")
	case kind == "grant" && r.Grant != nil:
		return "grant.keys", r.Grant.Spans.Of("keys")
	case kind == "grant" && r.List != "":
		return "list", r.Spans.Of("list")
	}
	if r.Spans.Has("template") {
		return "template", r.Spans.Of("template")
	}
	return "uri", r.Spans.Of("uri")
}

// redactAll removes the value of every secret of the file from s, in case
// a driver quoted one.
func (f *File) redactAll(s string) string {
	for _, src := range f.Sources {
		s = redactSource(s, src)
	}
	return s
}

func redactSource(s string, src Source) string {
	var secrets []Secret
	if p := src.Postgres; p != nil {
		secrets = []Secret{p.URL, p.ListenURL}
	}
	if b := src.S3; b != nil {
		secrets = []Secret{b.AccessKey, b.SecretKey, b.SessionToken}
	}
	for _, sec := range secrets {
		if v := sec.Value(); len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[secret]")
		}
	}
	if p := src.Postgres; p != nil {
		if cfg, err := pgconn.ParseConfig(p.URL.Value()); err == nil && len(cfg.Password) >= 4 {
			s = strings.ReplaceAll(s, cfg.Password, "[secret]")
		}
	}
	return s
}

// redact is an error's innermost text, without the source's secrets.
func redact(err error, src Source) string {
	return redactSource(strings.Join(strings.Fields(connerr.Innermost(err).Error()), " "), src)
}

func reason(err error, src Source) string {
	var ce *core.ConfigError
	if errors.As(err, &ce) {
		return redactSource(ce.Reason, src)
	}
	return redact(err, src)
}

// pgCause says in a few words why a connection failed, without the
// source's secrets.
func pgCause(err error, src Source) string {
	return redactSource(connerr.Cause(err, OpenTimeout), src)
}

// SourceNames returns the names of the sources, in file order.
func (s *Served) SourceNames() []string {
	out := make([]string, len(s.Ready))
	for i, r := range s.Ready {
		out[i] = r.Source
	}
	return out
}
