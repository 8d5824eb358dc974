package config

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// openTimeout bounds each request of the start-up check ([Served.Check])
// that is not a statement: a connection, a ping, a bucket's check. The
// statements of a PostgreSQL source are bounded one by one by postgres
// Source.Check (each within the source's statement_timeout), so that a
// file of many statements is not cut off by one bound on all of them.
const openTimeout = 10 * time.Second

// Served is what a file serves once [File.Open] has opened its sources
// (and checked them, unless [OpenOptions].Deferred leaves that to
// [Served.Check]): the bindings and the policy for core.NewResources, and
// what a server needs around them.
type Served struct {
	// Bindings are the file's bindings, in file order (a key family gives
	// one per depth), each with the source it reads; CoreBindings lists
	// them for core.NewResources.
	Bindings []Binding
	// Objects are the readers of the object items that rows reference, by
	// S3 source name: register each with core.WithObjectSource.
	Objects map[string]core.Reader
	// Policy is the file's policy.
	Policy core.ResourcePolicy
	// Ready has one check per source, in file order, for a readiness
	// probe: whether the database or bucket answers now.
	Ready []Ready
	// Lines describe what is served, one line per definition, as
	// mcp-resources check prints them: URI or template, name, source, kind
	// and what decides who reads it, as the proof found it once
	// [Served.Check] has run (the exempt tables, views and functions its
	// statements read, and whether they answer alike for every caller).
	Lines []string
	// Exemptions are the file's exemptions from the proof, one line each
	// as check prints them: "exempt NAME on SOURCE: REASON", by source in
	// file order, then by name.
	Exemptions []string
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

	closers []func()
	checks  []sourceCheck   // the start-up checks, one per source (see Check)
	serving chan struct{}   // closed once every source's check has reached serving (see Serving)
	serve   func()          // closes serving, once however many Check calls reach it
	lines   func() []string // Lines, from what the proof found
	// deciders is the last column of Lines, by binding, for DecidedBy
	// while Check may set Lines again (decided.go).
	deciders atomic.Pointer[[]string]
}

// Binding is one binding of a file and the source it reads.
type Binding struct {
	core.ResourceBinding
	// Source names the binding's source (a metric label).
	Source string
}

// CoreBindings returns the bindings alone, in order, for core.NewResources.
func (s *Served) CoreBindings() []core.ResourceBinding {
	out := make([]core.ResourceBinding, len(s.Bindings))
	for i, b := range s.Bindings {
		out[i] = b.ResourceBinding
	}
	return out
}

// Ready is the readiness check of one source.
type Ready struct {
	// Source is the source's name.
	Source string
	// Check reports whether the source answers now.
	Check func(ctx context.Context) error
	// Prove runs a PostgreSQL source's storage-enforcement proof again
	// (postgres Source.Prove): while the last one failed, the source
	// refuses its reads. Nil for an S3 source.
	Prove func(ctx context.Context) error
	// Pool is a PostgreSQL source's connection pool, for a host's own
	// start-up checks on the connections it serves with (the schema it
	// expects); nil for an S3 source. [Served.Close] closes it.
	Pool *pgxpool.Pool
	// Reconnected receives, for a PostgreSQL source, after its pool made a
	// new connection while it held no other established one (it lost
	// every connection and connected again, or had closed its idle ones),
	// coalesced so that the pool never waits: a server proves the source
	// again then. The connections of the start-up check count too. Nil
	// for an S3 source.
	Reconnected <-chan struct{}
	// Standbys reports a PostgreSQL source's standbys (postgres
	// Source.StandbyStats) for metrics; nil for a source without any and
	// for an S3 source. Readiness does not depend on them.
	Standbys func() postgres.StandbyStats
}

// ObjectSources returns the core.WithObjectSource option of each of
// Objects, for core.NewResources.
func (s *Served) ObjectSources() []core.Option {
	opts := make([]core.Option, 0, len(s.Objects))
	for name, rd := range s.Objects {
		opts = append(opts, core.WithObjectSource(name, rd))
	}
	return opts
}

// sourceCheck is the start-up check of one source; it calls reached once
// the source may serve while the rest of its check runs: it returns the *Error
// of the first thing wrong.
type sourceCheck func(ctx context.Context, reached func()) *Error

// Check runs the start-up check of every source at once: each database
// answers, holds its role and prepares every statement with the columns it
// must return, the catalog proves that it enforces access for each
// (postgres Source.Check, with the source's exempt), its listen_url
// connects, each bucket answers. Each connection, ping and bucket check
// is bounded by 10 s, each statement by its source's statement_timeout;
// nothing bounds the whole check, however many statements it holds. It
// waits for
// all of them and returns the first mistake in file order, as one
// [*Error], or nil. Until a source's check has passed, its statements
// serve nothing (postgres.ErrNotChecked). [File.Open] calls it unless
// [OpenOptions].Deferred is set; a server that defers it may answer
// clients meanwhile and call it once.
func (s *Served) Check(ctx context.Context) error {
	found := make([]*Error, len(s.checks))
	var wg sync.WaitGroup
	var left atomic.Int64
	left.Store(int64(len(s.checks)))
	reached := func() {
		if left.Add(-1) == 0 {
			s.serve()
		}
	}
	if len(s.checks) == 0 {
		s.serve()
	}
	for i, c := range s.checks {
		wg.Go(func() { found[i] = c(ctx, sync.OnceFunc(reached)) })
	}
	wg.Wait()
	if first := (&errs{list: slices.DeleteFunc(found, func(x *Error) bool { return x == nil })}).first(); first != nil {
		return first
	}
	if s.lines != nil {
		s.Lines = s.lines()
		s.deciders.Store(deciders(s.Lines))
	}
	return nil
}

// Serving returns a channel that is closed, while [Served.Check] runs,
// once every source may serve: each bucket has answered its check, and
// each database has answered and begun checking its statements (a read
// through a statement that check has not accepted yet checks and proves
// that statement first: postgres Source.CheckStarted). A server
// holds its reads until then rather than until Check returns, so that a
// file of thousands of templates serves its first read at once. It is
// never closed when a source fails before it may serve.
func (s *Served) Serving() <-chan struct{} { return s.serving }

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
	// Caller returns the caller of a request; nil means [core.CallerFrom].
	Caller func(context.Context) (core.Caller, error)
	// Logger receives the listeners' disconnects and reconnects (nil
	// discards them) and, for a [OpenOptions].Deferred host that never
	// calls [Served.Check], the one ERROR line of a PostgreSQL source whose
	// check at first use failed (postgres SourceOptions.Logger; nil means
	// slog.Default()).
	Logger *slog.Logger
	// TracerProvider, when set, traces every PostgreSQL statement
	// (postgres.NewTracer) and S3 request (s3store.WithTracing) of the
	// file's sources.
	TracerProvider trace.TracerProvider
	// Deferred makes Open send no request: it builds the bindings and the
	// policy and leaves the checks of the sources to [Served.Check].
	Deferred bool
	// UnusableGrantRows, when set, is told each time a resource's grant
	// refused a key while its statement returned rows that can never grant
	// one (postgres SourceOptions.UnusableGrantRows): the resource's name
	// and how many such rows. It must not block.
	UnusableGrantRows func(resource string, rows int64)
}

// Open connects to every source of the file and builds its bindings and
// policy with the stores' own constructors (postgres.NewSource,
// Source.Binding, Source.Policy or postgres.DatabaseDecides,
// s3store.OpenBucket, Bucket.KeyBindings and Bucket.Binding), then checks
// them against the servers with [Served.Check], unless
// [OpenOptions].Deferred leaves that to the caller. A
// mistake is one [*Error] at the place in the file it concerns; no error
// holds a secret. On error nothing stays open.
func (f *File) Open(ctx context.Context, opts *OpenOptions) (_ *Served, err error) {
	if opts == nil {
		opts = &OpenOptions{}
	}
	s := &Served{Revision: f.Revision(), Objects: map[string]core.Reader{}, serving: make(chan struct{})}
	s.serve = sync.OnceFunc(func() { close(s.serving) })
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	buckets := map[string]*s3store.Bucket{}
	objects := map[string]string{} // S3 source -> its bucket, for the rows that reference objects
	pools := map[string]*pgxpool.Pool{}
	standbys := map[string][]postgres.DB{}
	for _, src := range f.Sources {
		if b := src.S3; b != nil {
			bucket, err := f.openBucket(ctx, src, opts)
			if err != nil {
				return nil, err
			}
			buckets[src.Name], objects[src.Name] = bucket, string(b.Bucket)
			s.Objects[src.Name] = core.ItemReader(bucket.Read)
			s.Ready = append(s.Ready, Ready{Source: src.Name, Check: bucket.Check})
			continue
		}
		watch := newReconnects()
		pool, err := f.openPool(ctx, src, "url", src.Postgres.URL, opts, watch.afterConnect)
		if err != nil {
			return nil, err
		}
		watch.pool.Store(pool)
		s.closers = append(s.closers, pool.Close)
		pools[src.Name] = pool
		// Each standby is a pool of its own, without a reconnect watch:
		// the primary's decides the proof.
		for i, u := range src.Postgres.Standbys {
			sp, err := f.openPool(ctx, src, "standbys."+strconv.Itoa(i), u, opts, nil)
			if err != nil {
				return nil, err
			}
			s.closers = append(s.closers, sp.Close)
			standbys[src.Name] = append(standbys[src.Name], sp)
		}
		s.Ready = append(s.Ready, Ready{Source: src.Name, Check: pool.Ping, Pool: pool, Reconnected: watch.c})
	}
	sources := map[string]*postgres.Source{}
	for i, src := range f.Sources { // s.Ready[i] is src's
		p := src.Postgres
		if p == nil {
			continue
		}
		ps, err := postgres.NewSource(pools[src.Name], postgres.SourceOptions{Name: src.Name, Role: p.Role, LoginRole: p.LoginRole,
			Caller: opts.Caller, StatementTimeout: time.Duration(p.StatementTimeout), MaxPlanItems: f.planItems(p.MaxPlanItems), Objects: objects, Exempt: p.Exempt,
			UnusableGrantRows: opts.UnusableGrantRows, Logger: opts.Logger, Standbys: standbys[src.Name], StandbyMaxLag: time.Duration(p.StandbyMaxLag)})
		if err != nil {
			return nil, f.storeError(err, src.Name, src.Spans.start())
		}
		sources[src.Name] = ps
		s.Ready[i].Prove = ps.Prove
		if len(p.Standbys) > 0 {
			s.Ready[i].Standbys = ps.StandbyStats
		}
		for _, e := range ps.Exemptions() {
			s.Exemptions = append(s.Exemptions, fmt.Sprintf("exempt %s on %s: %s", e.Name, src.Name, e.Reason))
		}
	}

	type describing struct {
		r   Resource
		uri string
	}
	var described []describing
	for _, r := range f.Resources {
		def, b := r.definition(), Binding{Source: r.Source}
		switch ps := sources[r.Source]; {
		case ps != nil:
			if b.ResourceBinding, err = ps.Binding(f.sqlBinding(r, def)); err != nil {
				return nil, f.storeError(err, r.Source, r.Spans.start())
			}
		case r.List != "":
			if b.ResourceBinding, err = f.listingBinding(buckets[r.Source], def, r, sources); err != nil {
				return nil, err
			}
		default:
			grant, err := f.keyGrant(r, sources)
			if err != nil {
				return nil, err
			}
			if strings.HasSuffix(r.Template, "/...") {
				// One binding per depth; the file's check refused families
				// that overlap, as it refuses any two templates.
				fam := r.family()
				fam.Grant = grant
				bs, err := buckets[r.Source].KeyBindings(fam)
				if err != nil {
					return nil, f.storeError(err, r.Source, r.Spans.start())
				}
				for _, kb := range bs {
					s.Bindings = append(s.Bindings, Binding{ResourceBinding: kb, Source: r.Source})
					described = append(described, describing{r, kb.Definition.URITemplate})
				}
				continue
			}
			def.URITemplate = r.Template
			if b.ResourceBinding, err = buckets[r.Source].GrantedBinding(def, r.Prefix, grant); err != nil {
				return nil, f.storeError(err, r.Source, r.Spans.start())
			}
		}
		s.Bindings = append(s.Bindings, b)
		described = append(described, describing{r, r.URI + r.Template})
	}

	s.lines = func() []string {
		out := make([]string, len(described))
		for i, d := range described {
			out[i] = f.describe(d.r, d.uri, sources)
		}
		return out
	}
	s.Lines = s.lines()
	s.deciders.Store(deciders(s.Lines))

	if s.Policy, err = f.policy(sources); err != nil {
		return nil, err
	}
	if s.Changes, s.checks, err = f.changes(opts, pools, sources, buckets); err != nil {
		return nil, err
	}
	if !opts.Deferred {
		if err := s.Check(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// openBucket opens the bucket of the S3 source src, sending no request.
func (f *File) openBucket(ctx context.Context, src Source, opts *OpenOptions) (*s3store.Bucket, error) {
	b := src.S3
	client, err := s3store.NewClient(ctx, s3store.ClientConfig{Endpoint: string(b.Endpoint), Region: string(b.Region),
		UsePathStyle: b.PathStyle, AccessKeyID: b.AccessKey.expanded(), SecretAccessKey: b.SecretKey.expanded(), SessionToken: b.SessionToken.expanded()},
		s3store.WithTracing(opts.TracerProvider))
	if err != nil {
		return nil, f.mistake(src.Spans.start(), "sources."+src.Name, "the S3 client: %s", redact(err, src))
	}
	bucket, err := s3store.OpenBucket(ctx, client, string(b.Bucket), &s3store.Options{Caller: opts.Caller, TypeByKey: true})
	if err != nil {
		return nil, f.mistake(b.Spans.of("bucket"), "sources."+src.Name+".s3.bucket", "%s", reason(err, src))
	}
	return bucket, nil
}

// openPool opens a pool on url, the value of key of the PostgreSQL source
// src (its url, or one of its standbys), sending no request; afterConnect,
// when set, is the pool's AfterConnect hook.
func (f *File) openPool(ctx context.Context, src Source, key string, url Secret, opts *OpenOptions,
	afterConnect func(context.Context, *pgx.Conn) error) (*pgxpool.Pool, error) {
	at, path := src.Postgres.Spans.of(key), "sources."+src.Name+".postgres."+key
	cfg, err := pgxpool.ParseConfig(url.expanded())
	if err != nil {
		return nil, f.mistake(at, path, "is not a valid PostgreSQL URL")
	}
	if opts.TracerProvider != nil {
		cfg.ConnConfig.Tracer = postgres.NewTracer(opts.TracerProvider)
	}
	cfg.AfterConnect = afterConnect
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, f.mistake(at, path, "%s", redact(err, src))
	}
	return pool, nil
}

// policy is the file's policy: each PostgreSQL source's decides its own
// resources' reads and nothing else; an S3 resource's grant decided before
// its plan.
func (f *File) policy(sources map[string]*postgres.Source) (core.ResourcePolicy, error) {
	bySource := map[string]core.ResourcePolicy{}
	for _, src := range f.Sources {
		bySource[src.Name] = postgres.DatabaseDecides() // unless a decide statement decides
		if p := f.policyOf(src.Name); src.Postgres != nil && p != nil && !p.Database {
			pol, err := sources[src.Name].Policy(p.Decide)
			if err != nil {
				return core.ResourcePolicy{}, f.storeError(err, src.Name, p.Spans.of("decide"))
			}
			bySource[src.Name] = pol
		}
	}
	byName := map[string]core.ResourcePolicy{}
	for _, r := range f.Resources {
		byName[r.Name] = bySource[r.Source] // the file's check let no resource name another source
	}
	return f.gateScopes(routePolicy(byName)), nil // scopes.go
}

// changes are the change sources of the file (Served.Changes) and the
// start-up check of each source (Served.Check), which they send no request
// to build.
func (f *File) changes(opts *OpenOptions, pools map[string]*pgxpool.Pool, sources map[string]*postgres.Source,
	buckets map[string]*s3store.Bucket) ([]core.ChangeSource, []sourceCheck, error) {
	var out []core.ChangeSource
	var checks []sourceCheck
	for _, src := range f.Sources {
		if src.S3 != nil {
			checks = append(checks, f.bucketCheck(src, buckets[src.Name]))
			continue
		}
		p, ps := src.Postgres, sources[src.Name]
		listen := f.uses(src.Name, true)
		lcfg := pools[src.Name].Config().ConnConfig.Copy()
		at, key := p.Spans.of("url"), "url"
		var direct *pgx.ConnConfig // listen_url, checked with the source
		if v := p.ListenURL.expanded(); v != "" && listen {
			at, key = p.Spans.of("listen_url"), "listen_url"
			c, err := pgx.ParseConfig(v)
			if err != nil {
				return nil, nil, f.mistake(at, "sources."+src.Name+".postgres.listen_url", "is not a valid PostgreSQL URL")
			}
			lcfg, direct = c, c
		}
		checks = append(checks, f.postgresCheck(src, pools[src.Name], ps, direct))
		if !listen {
			continue
		}
		l, err := ps.Listener(lcfg, &postgres.ListenerOptions{Logger: opts.sourceLog(src.Name)})
		if err != nil {
			return nil, nil, f.mistake(at, "sources."+src.Name+".postgres."+key, "%s", reason(err, src))
		}
		out = append(out, l)
	}
	for _, src := range f.Sources {
		if src.S3 != nil && f.uses(src.Name, false) {
			out = append(out, s3store.NewPoller(buckets[src.Name], &s3store.PollerOptions{Interval: time.Duration(src.S3.PollInterval), Logger: opts.sourceLog(src.Name)}))
		}
	}
	return out, checks, nil
}

// sourceLog is the logger of the change source of source name, or nil.
func (o *OpenOptions) sourceLog(name string) *slog.Logger {
	if o.Logger == nil {
		return nil
	}
	return o.Logger.With("source", name)
}

// definition is r's core definition, without its URI or template.
func (r *Resource) definition() core.ResourceDefinition {
	def := core.ResourceDefinition{Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType}
	if a := r.Annotations; a != nil {
		def.Annotations = &core.Annotations{Audience: a.Audience, Priority: a.Priority, LastModified: a.LastModified}
	}
	return def
}

// sqlBinding is the postgres binding of r, a resource of a postgres
// source, whose definition is def. An object whose source the file no
// longer holds (an optional S3 source left out) names none: the rows
// stand alone.
func (f *File) sqlBinding(r Resource, def core.ResourceDefinition) postgres.SQLBinding {
	def.URI, def.URITemplate = r.URI, r.Template
	sb := postgres.SQLBinding{Definition: def, Plan: r.Plan, Bundle: r.Bundle, ItemURI: r.ItemURI, Anchored: r.Anchored, Listen: r.Listen, Body: r.Body, Complete: r.Completion, Public: r.Public}
	if o := r.Object; o != nil {
		sb.ObjectURI, sb.Unpinned = o.URI, o.Unpinned
		if f.source(o.Source) != nil {
			sb.ObjectSource = o.Source
		}
	}
	return sb
}

// postgresCheck is the start-up check of the PostgreSQL source src: its
// server answers, ps's role and statements pass Source.Check, and direct,
// its listen_url when it has one, connects.
func (f *File) postgresCheck(src Source, pool *pgxpool.Pool, ps *postgres.Source, direct *pgx.ConnConfig) sourceCheck {
	return func(ctx context.Context, reached func()) *Error {
		p := src.Postgres
		cfg := pool.Config().ConnConfig
		pctx, cancel := context.WithTimeout(ctx, openTimeout)
		err := pool.Ping(pctx)
		cancel()
		if err != nil {
			return f.mistake(p.Spans.of("url"), "sources."+src.Name+".postgres.url", "cannot reach PostgreSQL at %s:%d: %s", cfg.Host, cfg.Port, pgCause(err, src))
		}
		begun, done := ps.CheckStarted(), make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-begun:
				reached()
			case <-done:
			}
		}()
		if err := ps.Check(ctx); err != nil {
			return f.storeError(err, src.Name, src.Spans.start())
		}
		if direct == nil {
			return nil
		}
		cctx, cancel := context.WithTimeout(ctx, openTimeout)
		defer cancel()
		conn, err := pgx.ConnectConfig(cctx, direct)
		if err != nil {
			return f.mistake(p.Spans.of("listen_url"), "sources."+src.Name+".postgres.listen_url", "cannot reach PostgreSQL at %s:%d: %s", direct.Host, direct.Port, pgCause(err, src))
		}
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil
	}
}

// bucketCheck is the start-up check of the S3 source src: Bucket.Check.
func (f *File) bucketCheck(src Source, bucket *s3store.Bucket) sourceCheck {
	return func(ctx context.Context, reached func()) *Error {
		ctx, cancel := context.WithTimeout(ctx, openTimeout)
		defer cancel()
		err := bucket.Check(ctx)
		if err == nil {
			reached()
			return nil
		}
		if _, ok := errors.AsType[*core.ConfigError](err); ok {
			return f.storeError(err, src.Name, src.Spans.start()) // the credential S3 refused, else the bucket
		}
		return f.mistake(src.S3.Spans.of("bucket"), "sources."+src.Name+".s3.bucket", "%s", redact(err, src))
	}
}

// uses reports whether a resource of the file is served from source name
// (and, when listen is set, names a channel).
func (f *File) uses(name string, listen bool) bool {
	for _, r := range f.Resources {
		if r.Source == name && (!listen || r.Listen != "") {
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
	g, err := sources[r.Grant.Source].KeyGrant(r.Name, r.Grant.Keys, r.captures())
	if err != nil {
		return nil, f.storeError(err, r.Grant.Source, r.Grant.Spans.of("keys"))
	}
	return g, nil
}

// listingBinding builds the binding of r, a listing of the key family
// r.List: gated as the family is, with the family's grant statement asked
// once about the listed prefix (postgres Source.PrefixGrant).
func (f *File) listingBinding(bucket *s3store.Bucket, def core.ResourceDefinition, r Resource, sources map[string]*postgres.Source) (core.ResourceBinding, error) {
	fam := f.resource(r.List)
	kf := fam.family()
	if g := fam.Grant; g != nil {
		grant, err := sources[g.Source].PrefixGrant(r.Name, g.Keys, r.captures())
		if err != nil {
			return core.ResourceBinding{}, f.storeError(err, r.Source, r.Spans.of("list"))
		}
		kf.Grant = grant
	}
	l := f.ResourceLimits() // zero: the gateway's defaults, the listing's too
	def.URITemplate = r.Template
	b, err := bucket.ListingBinding(s3store.KeyListing{Definition: def, Family: kf, MaxKeys: min(l.MaxPlanItems, s3store.MaxListingKeys), MaxURIBytes: l.MaxURIBytes})
	if err != nil {
		return core.ResourceBinding{}, f.storeError(err, r.Source, r.Spans.of("template"))
	}
	return b, nil
}

// planItems is the MaxPlanItems of a PostgreSQL source whose file says n
// (0: the store's default): at most the gateway's limits.max_plan_items,
// so that a bundle past it is cut by the store, truncated and reported
// partial, rather than refused by the gateway as an invalid plan.
func (f *File) planItems(n int) int {
	limit := cmp.Or(f.ResourceLimits().MaxPlanItems, core.DefaultResourceLimits().MaxPlanItems)
	if n == 0 {
		return limit
	}
	return min(n, limit)
}

// routePolicy is the policy of a file: a pass, and a discovery, of a
// definition go to the policy of its resource (byName, by the definition's
// name, which is the resource's), and to no other, so that reads of one
// database never ask another.
func routePolicy(byName map[string]core.ResourcePolicy) core.ResourcePolicy {
	of := func(name string) (core.ResourcePolicy, error) {
		p, ok := byName[name]
		if !ok {
			return core.ResourcePolicy{}, fmt.Errorf("config: no policy decides the definition %q", name)
		}
		return p, nil
	}
	return core.ResourcePolicy{
		// A definition's passes are its resource's policy's: storage may
		// decide with the bodies for that one.
		Key: func(d core.ResourceDefinition) any {
			if p, ok := byName[d.Name]; ok && p.Key != nil {
				return p.Key(d)
			}
			return nil
		},
		Discover: func(ctx context.Context, d core.ResourceDefinition) error {
			p, err := of(d.Name)
			if err != nil {
				return err
			}
			return p.Discover(ctx, d)
		},
		Decide: func(ctx context.Context, pass core.PolicyPass) ([]core.TargetDecision, error) {
			p, err := of(pass.Definition.Name)
			if err != nil {
				return nil, err
			}
			return p.Decide(ctx, pass)
		},
	}
}

// describe is the line check prints for one definition: its URI or
// template, name, source, kind, and what decides who reads it.
func (f *File) describe(r Resource, uri string, sources map[string]*postgres.Source) string {
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
	case r.Plan == "" && (r.Grant != nil || r.Public):
		kind = "s3"
	}
	if r.Object != nil && r.Object.Unpinned {
		kind += ", unpinned" // its objects are read as they are, with no pin
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", uri, r.Name, r.Source, kind, f.decider(r, sources))
}

// decider says what decides who reads r's items, as check prints it: from
// the file, and from what the proof of its source found (the statements
// of a public resource that answer alike for every caller, the exempt
// tables, views and functions they read).
func (f *File) decider(r Resource, sources map[string]*postgres.Source) string {
	proof := func(source, binding string) postgres.BindingProof {
		if ps := sources[source]; ps != nil {
			pr, _ := ps.Proof(binding)
			return pr
		}
		return postgres.BindingProof{}
	}
	exempt := func(pr postgres.BindingProof) string {
		if len(pr.Exempted) == 0 {
			return ""
		}
		return " (exempt from the proof: " + strings.Join(pr.Exempted, ", ") + ")"
	}
	if r.List != "" {
		if fam := f.resource(r.List); fam != nil && fam.Grant != nil {
			return "grant statement on " + fam.Grant.Source + ", once for the listed prefix" + exempt(proof(fam.Grant.Source, r.Name))
		}
		return "public: every token holder lists every key"
	}
	switch {
	case r.Grant != nil:
		return "grant statement on " + r.Grant.Source + exempt(proof(r.Grant.Source, r.Name))
	case r.Public && f.source(r.Source) != nil && f.source(r.Source).S3 != nil:
		return "public: every token holder reads every key"
	}
	pr := proof(r.Source, r.Name)
	var says string
	switch p := f.policyOf(r.Source); {
	case r.Public && pr.CallerFree:
		return "public: every token holder reads every item" + exempt(pr)
	case p == nil || p.Database:
		says = "plan and body statements' row-level security"
	case p == f.Policy:
		says = "plan statement's row-level security, then policy.decide on " + r.Source
	default:
		says = "plan statement's row-level security, then sources." + r.Source + ".postgres.policy.decide"
	}
	if r.Public {
		says += "; public: true"
	}
	return says + exempt(pr)
}

// storeError turns a store's error into one *Error at the key of the file
// its core.ConfigPath names, else at def. source is the file's source the
// failing call was about, for a path that names none.
func (f *File) storeError(err error, source string, def Position) *Error {
	ce, ok := errors.AsType[*core.ConfigError](err)
	if !ok {
		return f.mistake(def, "", "%s", strings.Join(strings.Fields(f.redactAll(err.Error())), " "))
	}
	reason := f.redactAll(ce.Reason)
	p := ce.Path
	p.Source = cmp.Or(p.Source, source)
	pl, ok := f.locate(p)
	if !ok {
		return f.mistake(def, "", "%s: %s", ce.Path, reason)
	}
	at := pl.spans.of(pl.key)
	if se, ok := errors.AsType[*postgres.SQLError](err); ok && pl.sql != "" {
		at = f.sqlPos(pl.spans, pl.key, pl.sql, se.Offset)
	}
	return f.mistake(at, pl.path, "%s", reason)
}

// place is where a store's path is in the file: the path errors name it
// by, the key of the mapping spans it is written under, and the statement
// written there, if any.
type place struct {
	path  string
	spans Spans
	key   string
	sql   string
}

// resource is the resource named name, or nil.
func (f *File) resource(name string) *Resource {
	for i := range f.Resources {
		if name != "" && f.Resources[i].Name == name {
			return &f.Resources[i]
		}
	}
	return nil
}

// source is the source named name, or nil.
func (f *File) source(name string) *Source {
	for i := range f.Sources {
		if f.Sources[i].Name == name {
			return &f.Sources[i]
		}
	}
	return nil
}

// locate maps a store's path to its place in the file.
func (f *File) locate(p core.ConfigPath) (place, bool) {
	if r := f.resource(p.Binding); r != nil {
		if p.Field == "" { // the binding as a whole
			return place{"resources." + r.Name, r.Spans, "", ""}, true
		}
		if fam := f.resource(r.List); p.Field == "Grant" && r.Grant == nil && fam != nil && fam.Grant != nil {
			r = fam // a listing's grant is the family's it lists
		}
		pl := resourcePlace(r, p)
		pl.path = "resources." + r.Name + "." + pl.path
		return pl, true
	}
	s := f.source(p.Source)
	if s == nil {
		return place{}, false
	}
	kind, key, _ := strings.Cut(fileKeys[p.Field], ".")
	switch pol := f.policyOf(s.Name); {
	case key == "policy.decide" && pol != nil:
		path := "policy.decide"
		if pol != f.Policy {
			path = "sources." + s.Name + ".postgres.policy.decide"
		}
		return place{path, pol.Spans, "decide", pol.Decide}, true
	case s.Postgres != nil && kind == "postgres" && key == "exempt" && p.Key != "":
		return place{"sources." + s.Name + ".postgres.exempt." + p.Key, s.Postgres.Spans, "exempt." + p.Key + ":key", ""}, true
	case s.Postgres != nil && kind == "postgres" && key != "policy.decide":
		return place{"sources." + s.Name + ".postgres." + key, s.Postgres.Spans, key, ""}, true
	case s.S3 != nil:
		if kind != "s3" || !s.S3.Spans.has(key) {
			key = "bucket"
		}
		return place{"sources." + s.Name + ".s3." + key, s.S3.Spans, key, ""}, true
	}
	return place{}, false
}

// resourcePlace is the place in r of the field a store's path names, its
// path relative to r.
func resourcePlace(r *Resource, p core.ConfigPath) place {
	key := fileKeys[p.Field]
	sub, k, _ := strings.Cut(key, ".")
	switch {
	case p.Field == "Complete":
		return place{"completion." + p.Key, r.Spans, "completion." + p.Key, r.Completion[p.Key]}
	case sub == "object" && r.Object != nil:
		return place{key, r.Object.Spans, k, ""}
	case sub == "grant" && r.Grant != nil:
		return place{key, r.Grant.Spans, k, r.Grant.Keys}
	case sub == "grant" && r.List != "":
		return place{"list", r.Spans, "list", ""}
	case key != "" && k == "" && !r.Spans.has(key):
		// A key the file leaves out: at the statement it goes with.
		for _, at := range []string{"plan", "bundle", "template"} {
			if r.Spans.has(at) {
				return place{key, r.Spans, at, ""}
			}
		}
		fallthrough
	case key != "" && k == "":
		return place{key, r.Spans, key, map[string]string{"plan": r.Plan, "bundle": r.Bundle, "body": r.Body}[key]}
	case r.Spans.has("template"):
		return place{"template", r.Spans, "template", ""}
	}
	return place{"uri", r.Spans, "uri", ""}
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
		secrets = append([]Secret{p.URL, p.ListenURL}, p.Standbys...)
	}
	if b := src.S3; b != nil {
		secrets = []Secret{b.AccessKey, b.SecretKey, b.SessionToken}
	}
	for _, sec := range secrets {
		if v := sec.expanded(); len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[secret]")
		}
	}
	if p := src.Postgres; p != nil {
		for _, u := range append([]Secret{p.URL}, p.Standbys...) {
			if cfg, err := pgconn.ParseConfig(u.expanded()); err == nil && len(cfg.Password) >= 4 {
				s = strings.ReplaceAll(s, cfg.Password, "[secret]")
			}
		}
	}
	return s
}

// redact is an error's innermost text, without the source's secrets.
func redact(err error, src Source) string {
	return redactSource(strings.Join(strings.Fields(connerr.Innermost(err).Error()), " "), src)
}

func reason(err error, src Source) string {
	if ce, ok := errors.AsType[*core.ConfigError](err); ok {
		return redactSource(ce.Reason, src)
	}
	return redact(err, src)
}

// pgCause says in a few words why a connection failed, without the
// source's secrets.
func pgCause(err error, src Source) string {
	return redactSource(connerr.Cause(err, openTimeout), src)
}
