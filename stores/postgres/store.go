package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/core"
)

// storeSource is the name of a Store's Source, the reference resources
// file's "postgres".
const storeSource = "postgres"

// errNoObject is the private cause for the object of an asset that a store
// without [Options].Objects is asked for.
var errNoObject = errors.New("postgres: the store serves no objects (Options.Objects is empty)")

// Store serves the reference schema (package migrations) as resources: it
// is a [Source] with the bindings [ReferenceBindings] and the policy
// [ReferenceDecide], the same statements the reference server serves from
// examples/reference/resources.yaml. It is safe for concurrent use.
//
// Its statements are checked against the database (see [Source.Check])
// before they serve: by [Store.Check], which a host calls at startup to
// learn of a database without the migrations or a login that is not a
// member of the role before the first request, or else by the first
// request that needs the database, once. A failed check fails that request
// and is retried by the next one; a check that succeeded is never repeated.
type Store struct {
	src      *Source
	bindings map[string]core.ResourceBinding // by binding name, as Bindings returns them
	readers  map[string]core.Reader          // the Source's own reader of each binding
	policy   core.ResourcePolicy
	objects  bool

	checked atomic.Bool
	mu      sync.Mutex // serializes checks
}

// NewStore returns a store of the reference schema over db, usually a
// *pgxpool.Pool (a *pgx.Conn works too; any other [DB] must offer
// Acquire like a pool, because the check prepares the statements on a
// connection of its own). It makes no request: see [Store.Check]. With [Options].Objects, an asset whose row references an
// object is served with it: the asset's URI plans its fields and then the
// object, pinned by the row's ETag and version id, and [ObjectTemplate]
// serves the object alone. Errors are *core.ConfigError values.
func NewStore(db DB, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	so := SourceOptions{Name: o.Name, Role: o.Role, LoginRole: o.LoginRole, Principal: o.Principal,
		StatementTimeout: o.StatementTimeout, MaxPlanItems: o.MaxPlanItems}
	if so.Role == "" {
		so.Role = ReaderRole
	}
	if so.Name == "" {
		so.Name = storeSource
	}
	if o.Objects != "" {
		so.Objects = map[string]string{ReferenceObjectSource: o.Objects}
	}
	src, err := NewSource(db, so)
	if err != nil {
		return nil, err
	}
	st := &Store{src: src, bindings: map[string]core.ResourceBinding{}, readers: map[string]core.Reader{}, objects: o.Objects != ""}
	for _, b := range ReferenceBindings() {
		name := b.Definition.Name
		if !st.objects && b.ObjectSource != "" {
			if b.ObjectOnly {
				st.bindings[name] = core.ResourceBinding{Definition: b.Definition, Reader: st.Reader(),
					Resolver: core.ResolverFunc(func(context.Context, core.ResourceMatch) (core.ResourceReadPlan, error) {
						return core.ResourceReadPlan{}, core.Unavailable(errNoObject)
					})}
				continue
			}
			b.ObjectSource, b.WithoutObjects = "", true
		}
		rb, err := src.Binding(b)
		if err != nil {
			return nil, err
		}
		st.readers[name] = rb.Reader
		st.bindings[name] = st.guard(rb)
	}
	policy, err := src.Policy(ReferenceDecide)
	if err != nil {
		return nil, err
	}
	st.policy = st.guardPolicy(policy)
	return st, nil
}

// Check checks the store's statements against the database, as
// [Source.Check] does: the role exists, the pool's login is a member of it
// and neither bypasses row-level security, and every statement of the
// reference schema prepares with the columns it must return (so a database
// without the migrations is one *core.ConfigError). It makes the requests
// of the check only until one succeeds; after that it returns nil at once.
// A store that is never checked explicitly checks itself on the first
// request that needs the database. A database that cannot be reached is a
// core.Outage error matching [ErrConnection].
func (s *Store) Check(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.checked.Load() {
		return nil
	}
	if err := s.src.Check(ctx); err != nil {
		if ce := (*core.ConfigError)(nil); errors.As(err, &ce) {
			return err
		}
		return classify(err)
	}
	s.checked.Store(true)
	return nil
}

// ready checks the store once before its first statement. The principal and
// the deadline are checked first, as every statement checks them, so that
// a request refused for them never reaches the database.
func (s *Store) ready(ctx context.Context) error {
	if s.checked.Load() {
		return nil
	}
	if _, err := s.principal(ctx); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= 0 {
		return fmt.Errorf("postgres: %w", context.DeadlineExceeded)
	}
	return s.Check(ctx)
}

// principal returns the valid principal of ctx, or an Unavailable error.
func (s *Store) principal(ctx context.Context) (string, error) {
	p, err := s.src.s.principal(ctx)
	if err != nil {
		return "", err
	}
	if err := CheckPrincipal(p); err != nil {
		return "", core.Unavailable(err)
	}
	return p, nil
}

// guard returns b checking the store before its resolver, reader and
// completer run. Its reader is the binding's own, which reads what its
// resolver plans (its rows and their objects) and refuses any other target.
func (s *Store) guard(b core.ResourceBinding) core.ResourceBinding {
	inner, rd := b.Resolver, b.Reader
	b.Resolver = core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
		if err := s.ready(ctx); err != nil {
			return core.ResourceReadPlan{}, err
		}
		return inner.Resolve(ctx, m)
	})
	b.Reader = core.ItemReader(func(ctx context.Context, item core.ReadItem) (core.ResourcePayload, error) {
		if err := s.ready(ctx); err != nil {
			return core.ResourcePayload{}, err
		}
		return readOne(ctx, rd, item)
	})
	if c := b.Completer; c != nil {
		b.Completer = core.CompleterFunc(func(ctx context.Context, req core.CompletionRequest) (core.Completion, error) {
			if err := s.ready(ctx); err != nil {
				return core.Completion{}, err
			}
			return c.Complete(ctx, req)
		})
	}
	return b
}

// guardPolicy returns p checking the store before it asks the database.
func (s *Store) guardPolicy(p core.ResourcePolicy) core.ResourcePolicy {
	dec := p.Decide
	p.Decide = func(ctx context.Context, pass core.PolicyPass) ([]core.TargetDecision, error) {
		if err := s.ready(ctx); err != nil {
			return nil, err
		}
		return dec(ctx, pass)
	}
	return p
}

// Listener returns the [core.ChangeSource] of the store's targets: the
// store's [Source.Listener], whose one dedicated connection, opened from
// cfg, LISTENs on [ReferenceKeyChannel] ("mcpres_keys"), where the
// triggers of migrations version 3 NOTIFY the keys of changed items
// (PROJECT/ASSET, PROJECT/* for every asset of a project, "projects" for
// the index). A database without version 3 sends nothing on it. cfg must
// reach PostgreSQL directly, never through a transaction-pooling
// PgBouncer, which breaks LISTEN; the store's own pool may go through
// one. An asset's fields, body and object depend on the asset's key and
// its project's PROJECT/*, a project bundle on any change, the index on
// "projects". A nil cfg is a *core.ConfigError.
func (s *Store) Listener(cfg *pgx.ConnConfig, opts *ListenerOptions) (*Listener, error) {
	return s.src.Listener(cfg, opts)
}

// Bindings returns the reference schema's bindings: [Store.IndexBinding], [Store.ProjectBinding],
// [Store.FieldsBinding] and [Store.BodyBinding], and with [Options].Objects
// [Store.ObjectBinding] too.
func (s *Store) Bindings() []core.ResourceBinding {
	bs := []core.ResourceBinding{s.IndexBinding(), s.ProjectBinding(), s.FieldsBinding(), s.BodyBinding()}
	if s.objects {
		bs = append(bs, s.ObjectBinding())
	}
	return bs
}

// IndexBinding returns the binding of [IndexURI]: the projects the caller
// may discover, as JSON {"projects":[{"id","title","uri"}]}.
func (s *Store) IndexBinding() core.ResourceBinding { return s.bindings["projects"] }

// ProjectBinding returns the binding of [ProjectTemplate]: a bundle of the
// fields of the project's assets the caller may discover, in id order. A
// project the caller may not discover is unavailable; one without assets
// is an empty bundle.
func (s *Store) ProjectBinding() core.ResourceBinding { return s.bindings["project"] }

// FieldsBinding returns the binding of [FieldsTemplate]: the asset's fields
// as JSON and, when the store has [Options].Objects and the row references
// an object in that store's bucket, the object as a second item.
func (s *Store) FieldsBinding() core.ResourceBinding { return s.bindings["asset"] }

// BodyBinding returns the binding of [BodyTemplate]: the asset's inline
// body with its own MIME type; an asset without one is unavailable.
func (s *Store) BodyBinding() core.ResourceBinding { return s.bindings["asset-body"] }

// ObjectBinding returns the binding of [ObjectTemplate]: the object one
// asset's row references, read by [Options].Objects. An asset without an
// object reference is unavailable, and so is every read of a store without
// [Options].Objects.
func (s *Store) ObjectBinding() core.ResourceBinding { return s.bindings["asset-object"] }

// Reader returns the reader of every target the store's bindings plan (each
// binding's own reader reads those it plans): a
// row through its binding's body statement, pinned to the planned key and
// version and bounded by the item's Limit in the statement (one read-only
// transaction in one round trip), an object through [Options].Objects.
//
// Outcomes: an asset the principal cannot see or read now is
// core.Unavailable; one that is visible with another version is
// [ErrChanged] (the gateway's read_failed); one larger than the limit is
// core.TooLarge with its size, and its content is never transferred. A
// target the store did not plan is [ErrBadTarget], before any request.
func (s *Store) Reader() core.Reader {
	return core.ItemReader(func(ctx context.Context, item core.ReadItem) (core.ResourcePayload, error) {
		ref, ok := parseSQLRef(item.Target)
		if !ok || ref.Source != s.src.name {
			return core.ResourcePayload{}, ErrBadTarget
		}
		rd, ok := s.readers[ref.Binding]
		if !ok {
			return core.ResourcePayload{}, ErrBadTarget
		}
		if err := s.ready(ctx); err != nil {
			return core.ResourcePayload{}, err
		}
		return readOne(ctx, rd, item)
	})
}

// readOne reads item alone with rd.
func readOne(ctx context.Context, rd core.Reader, item core.ReadItem) (core.ResourcePayload, error) {
	out, err := rd.Read(ctx, core.ReadRequest{Items: []core.ReadItem{item}, Budget: item.Limit})
	switch {
	case err != nil:
		return core.ResourcePayload{}, err
	case len(out) != 1:
		return core.ResourcePayload{}, fmt.Errorf("postgres: the reader returned %d results for one item", len(out))
	}
	return out[0].Payload, out[0].Err
}

// Policy returns the [core.ResourcePolicy] of the grants table
// ([Source.Policy] with [ReferenceDecide]):
//
//   - Discover allows every definition to a caller with a valid principal,
//     without a round trip.
//   - The index is visible and readable to every such caller. An asset's
//     fields, body and object are visible when a grant of the caller on
//     the asset or its project lets it discover or read, readable with
//     can_read, and issues disclose the URI when such a grant sets
//     disclose_issue_uri. A project bundle is readable when the caller may
//     discover the project (its plan is unavailable otherwise); its items
//     are decided one by one.
//   - Decide answers a whole pass: before the reads from the grant flags
//     the plan statements read in the planning transaction (no round
//     trip), the recheck after them in one statement for all targets.
//
// The body statements enforce can_read again, so a grant revoked after
// these checks still withholds the content.
func (s *Store) Policy() core.ResourcePolicy { return s.policy }

// defOf returns a resource definition of a concrete uri or a template.
func defOf(name, uri, template, title, description, mime string) core.ResourceDefinition {
	return core.ResourceDefinition{Name: name, URI: uri, URITemplate: template, Title: title, Description: description, MIMEType: mime}
}
