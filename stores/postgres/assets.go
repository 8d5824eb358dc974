package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"

	"go.phpboyscout.uk/mcp/resources/core"
)

// URIs of the reference schema. Project and asset ids are unreserved URI
// characters (the schema checks it), so they appear unescaped.
const (
	// IndexURI is the concrete resource that lists the projects the caller
	// may discover, as one application/json item.
	IndexURI = "asset://projects"
	// ProjectTemplate is a bundle of the fields of every asset of a project
	// that the caller may discover, in id order.
	ProjectTemplate = "asset://project/{project}"
	// FieldsTemplate is one asset's fields as application/json
	// (representation "fields"); with [Options].Objects, followed by the
	// object its row references, if any (the joined bundle).
	FieldsTemplate = "asset://project/{project}/asset/{asset}"
	// BodyTemplate is one asset's inline body with its own MIME type
	// (representation "body").
	BodyTemplate = "asset://project/{project}/asset/{asset}/body"
)

// Representations of the reference schema's targets: the label of each
// target and the kind recorded in its private authorization data.
const (
	ReprIndex   = "index"
	ReprProject = "project"
	ReprFields  = "fields"
	ReprBody    = "body"
)

// Asset is the identity metadata of one asset of the reference schema: what
// a resolver reads to plan, never the body.
type Asset struct {
	// Project is the id of the asset's project.
	Project string
	// ID is the asset's id, unique within its project.
	ID string
	// Version is bumped by a trigger on every update; reads pin it.
	Version int64
	// Name is the asset's programmatic name, such as a file name.
	Name string
	// Title is the asset's human-readable title, possibly empty.
	Title string
	// MIMEType is the media type of the inline body.
	MIMEType string
	// Text says whether the inline body is UTF-8 text or bytes.
	Text bool
	// BodySize is the inline body's size in bytes, or -1 when the asset has
	// no inline body.
	BodySize int64
	// Object is the asset's object reference, or nil.
	Object *ObjectRef
}

// ObjectRef is an asset's reference to an object in an S3 bucket.
type ObjectRef struct {
	Bucket    string // the bucket name
	Key       string // the object key
	ETag      string // "" when unknown
	VersionID string // "" when unversioned
	Size      int64  // -1 when unknown
}

// FieldsURI returns the canonical URI of a's fields representation.
func (a Asset) FieldsURI() string {
	return "asset://project/" + url.PathEscape(a.Project) + "/asset/" + url.PathEscape(a.ID)
}

// BodyURI returns the canonical URI of a's body representation.
func (a Asset) BodyURI() string { return a.FieldsURI() + "/body" }

// ProjectURI returns the URI of the bundle of a project's assets.
func ProjectURI(project string) string { return "asset://project/" + url.PathEscape(project) }

// ref is the private authorization data of the reference schema's targets:
// the planned identity.
type ref struct {
	Kind    string `json:"k"`
	Project string `json:"p,omitempty"`
	Asset   string `json:"a,omitempty"`
	Version int64  `json:"v,omitempty"`
	// Object is the joined object's own target (representation "object").
	Object *objectRef `json:"o,omitempty"`
	// Grants are the principal's grant flags on the target's key, read in
	// the planning transaction by the store's own plan statements; the
	// policy's decision before the reads uses them, its recheck never.
	Grants *grantFlags `json:"g,omitempty"`
}

func parseRef(t core.ResourceTarget) (ref, error) {
	var r ref
	if err := json.Unmarshal(t.AuthorizationData(), &r); err != nil || r.Kind != t.Representation() {
		return ref{}, ErrBadTarget
	}
	return r, nil
}

// ref returns the identity of a's representation kind, pinned to a.Version.
func (a Asset) ref(kind string) ref {
	return ref{Kind: kind, Project: a.Project, Asset: a.ID, Version: a.Version}
}

// withGrants returns r carrying the plan's grant flags f.
func (r ref) withGrants(f grantFlags) ref {
	r.Grants = &f
	return r
}

func newTarget(uri string, r ref) (core.ResourceTarget, error) {
	authz, err := json.Marshal(r)
	if err != nil {
		return core.ResourceTarget{}, err
	}
	return core.NewResourceTarget(uri, r.Kind, authz)
}

// FieldsTarget returns the target of a's fields, pinned to a.Version.
func FieldsTarget(a Asset) (core.ResourceTarget, error) {
	return newTarget(a.FieldsURI(), a.ref(ReprFields))
}

// BodyTarget returns the target of a's inline body, pinned to a.Version.
func BodyTarget(a Asset) (core.ResourceTarget, error) {
	return newTarget(a.BodyURI(), a.ref(ReprBody))
}

// Store serves the reference schema (package migrations) as resources:
// resolver helpers, a reader, ready-made bindings and a grants-backed
// policy. It is safe for concurrent use.
type Store struct {
	s       *session
	objects *Objects // nil: rows only
}

// NewStore returns a store of the reference schema over db, usually a
// *pgxpool.Pool. Errors are *core.ConfigError.
func NewStore(db DB, opts *Options) (*Store, error) {
	s, err := newSession(db, opts)
	if err != nil {
		return nil, err
	}
	st := &Store{s: s}
	if opts != nil && opts.Objects != nil {
		if err := opts.Objects.check(); err != nil {
			return nil, err
		}
		o := *opts.Objects
		st.objects = &o
	}
	return st, nil
}

const assetColumns = `a.project_id, a.id, a.version, a.name, a.title, a.mime_type, a.body_is_text, octet_length(a.body),
	a.object_bucket, a.object_key, a.object_etag, a.object_version_id, a.object_size`

// The plan statements read, besides the identity, the principal's grant
// flags on what they plan (gf for an asset, pf for a project) in the same
// transaction, so that the policy's decision before the reads needs no
// round trip of its own.
var (
	sqlLookupAsset = `SELECT ` + assetColumns + `, gf.*
	FROM mcpres.assets a
	CROSS JOIN LATERAL (SELECT ` + grantAggregates + ` FROM mcpres.grants g WHERE ` + grantsCovering("a.project_id", "a.id") + `) gf
	WHERE a.project_id = $1 AND a.id = $2`
	sqlProjectAssets = `SELECT pf.*, p.id, a.id IS NOT NULL, ` + assetColumns + `, gf.*
	FROM mcpres.projects p
	CROSS JOIN LATERAL (SELECT ` + grantAggregates + ` FROM mcpres.grants g WHERE ` + grantsCovering("p.id", "NULL::text") + `) pf
	LEFT JOIN mcpres.assets a ON a.project_id = p.id
	CROSS JOIN LATERAL (SELECT ` + grantAggregates + ` FROM mcpres.grants g WHERE ` + grantsCovering("a.project_id", "a.id") + `) gf
	WHERE p.id = $1 ORDER BY a.id LIMIT $2`
)

// scanAsset scans a row of pre's columns, the asset columns and post's.
func scanAsset(row pgx.Row, pre []any, post ...any) (Asset, bool, error) {
	var (
		a                               Asset
		project, id, name, title, mime  *string
		version, size, objSize          *int64
		text                            *bool
		bucket, key, etag, objVersionID *string
	)
	dest := append(append(pre, &project, &id, &version, &name, &title, &mime, &text, &size, &bucket, &key, &etag, &objVersionID, &objSize), post...)
	if err := row.Scan(dest...); err != nil {
		return Asset{}, false, err
	}
	if id == nil {
		return Asset{}, false, nil
	}
	a = Asset{Project: *project, ID: *id, Version: *version, Name: *name, Title: *title, MIMEType: *mime, Text: *text, BodySize: -1}
	if size != nil {
		a.BodySize = *size
	}
	if bucket != nil && key != nil {
		a.Object = &ObjectRef{Bucket: *bucket, Key: *key, Size: -1}
		if etag != nil {
			a.Object.ETag = *etag
		}
		if objVersionID != nil {
			a.Object.VersionID = *objVersionID
		}
		if objSize != nil {
			a.Object.Size = *objSize
		}
	}
	return a, true, nil
}

// LookupAsset reads the identity metadata of one asset (ids, version, MIME
// type, body size, object reference; never the body) as the principal of
// ctx, in one read-only transaction under row-level security. An asset the
// principal may not discover is indistinguishable from a missing one: both
// return an Unavailable error. Bindings that join rows with S3 objects build
// on it.
func (s *Store) LookupAsset(ctx context.Context, project, id string) (Asset, error) {
	a, _, err := s.lookupAsset(ctx, project, id)
	return a, err
}

// lookupAsset is LookupAsset that also returns the principal's grant flags
// on the asset, read in the same transaction.
func (s *Store) lookupAsset(ctx context.Context, project, id string) (Asset, grantFlags, error) {
	var a Asset
	var f grantFlags
	var found bool
	err := s.s.query(ctx, sqlLookupAsset, []any{project, id}, func(rows pgx.Rows) error {
		if found { // the key is unique: a second row is not expected
			return nil
		}
		var err error
		a, found, err = scanAsset(rows, nil, &f.Visible, &f.Read, &f.Disclose)
		return err
	})
	if err != nil {
		return Asset{}, grantFlags{}, err
	}
	if !found {
		return Asset{}, grantFlags{}, core.Unavailable(ErrNotVisible)
	}
	return a, f, nil
}

// ProjectAssets reads the identity metadata of every asset of project that
// the principal of ctx may discover, in id order, under row-level security.
// A project the principal may not discover returns an Unavailable error; a
// visible project without visible assets returns none. More assets than
// Options.MaxPlanItems is an error.
func (s *Store) ProjectAssets(ctx context.Context, project string) ([]Asset, error) {
	assets, _, _, err := s.projectAssets(ctx, project)
	return assets, err
}

// projectAssets is ProjectAssets that also returns the principal's grant
// flags on each asset and on the project, read in the same transaction.
func (s *Store) projectAssets(ctx context.Context, project string) ([]Asset, []grantFlags, grantFlags, error) {
	var assets []Asset
	var flags []grantFlags
	var pf grantFlags
	projectVisible := false
	err := s.s.query(ctx, sqlProjectAssets, []any{project, s.s.maxItems + 1}, func(rows pgx.Rows) error {
		var pid string
		var has bool
		var f grantFlags
		a, found, err := scanAsset(rows, []any{&pf.Visible, &pf.Read, &pf.Disclose, &pid, &has}, &f.Visible, &f.Read, &f.Disclose)
		if err != nil {
			return err
		}
		projectVisible = true
		if found {
			assets = append(assets, a)
			flags = append(flags, f)
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, nil, grantFlags{}, err
	case !projectVisible:
		return nil, nil, grantFlags{}, core.Unavailable(ErrNotVisible)
	case len(assets) > s.s.maxItems:
		return nil, nil, grantFlags{}, fmt.Errorf("postgres: project has more than %d assets (Options.MaxPlanItems)", s.s.maxItems)
	}
	return assets, flags, pf, nil
}

// Bindings returns the ready-made bindings of the reference schema, all
// reading through [Store.Reader]:
//
//   - [IndexURI]: the projects the caller may discover, as JSON
//     {"projects":[{"id","title","uri"}]};
//   - [ProjectTemplate]: a bundle of the fields of the project's assets;
//   - [FieldsTemplate]: one asset's fields as JSON;
//   - [BodyTemplate]: one asset's inline body (an asset without one is
//     unavailable).
//
// With [Options].Objects, [FieldsTemplate] plans the joined bundle of an
// asset that references an object (its fields and its object) and the
// bindings include [Store.ObjectBinding].
func (s *Store) Bindings() []core.ResourceBinding {
	bs := []core.ResourceBinding{s.IndexBinding(), s.ProjectBinding(), s.FieldsBinding(), s.BodyBinding()}
	if s.objects != nil {
		bs = append(bs, s.ObjectBinding())
	}
	return bs
}

// IndexBinding returns the binding of [IndexURI].
func (s *Store) IndexBinding() core.ResourceBinding {
	return core.ResourceBinding{
		Definition: core.ResourceDefinition{URI: IndexURI, Name: "projects", Title: "Projects",
			Description: "The projects you may discover", MIMEType: "application/json"},
		Resolver: core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
			t, err := newTarget(IndexURI, ref{Kind: ReprIndex})
			if err != nil {
				return core.ResourceReadPlan{}, err
			}
			return core.NewResourceReadPlan(t, t)
		}),
		Reader: s.Reader(),
	}
}

// ProjectBinding returns the binding of [ProjectTemplate].
func (s *Store) ProjectBinding() core.ResourceBinding {
	return core.ResourceBinding{
		Definition: core.ResourceDefinition{URITemplate: ProjectTemplate, Name: "project",
			Title: "Project assets", Description: "The fields of every asset of a project", MIMEType: "application/json"},
		Resolver: core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
			project, _ := m.Var("project")
			assets, flags, pf, err := s.projectAssets(ctx, project)
			if err != nil {
				return core.ResourceReadPlan{}, err
			}
			requested, err := newTarget(m.URI(), ref{Kind: ReprProject, Project: project}.withGrants(pf))
			if err != nil {
				return core.ResourceReadPlan{}, err
			}
			items := make([]core.ResourceTarget, len(assets))
			for i, a := range assets {
				if items[i], err = newTarget(a.FieldsURI(), a.ref(ReprFields).withGrants(flags[i])); err != nil {
					return core.ResourceReadPlan{}, err
				}
			}
			return core.NewResourceReadPlan(requested, items...)
		}),
		Reader:    s.Reader(),
		Completer: completer{s: s},
	}
}

// FieldsBinding returns the binding of [FieldsTemplate]: the asset's fields
// and, when the store joins objects and the row references one that
// [Objects].Target serves, the object as a second item.
func (s *Store) FieldsBinding() core.ResourceBinding {
	return core.ResourceBinding{
		Definition: core.ResourceDefinition{URITemplate: FieldsTemplate, Name: "asset",
			Title: "Asset", Description: "An asset's fields", MIMEType: "application/json"},
		Resolver:  s.assetResolver(ReprFields),
		Reader:    s.Reader(),
		Completer: completer{s: s},
	}
}

// BodyBinding returns the binding of [BodyTemplate].
func (s *Store) BodyBinding() core.ResourceBinding {
	return core.ResourceBinding{
		Definition: core.ResourceDefinition{URITemplate: BodyTemplate, Name: "asset-body",
			Title: "Asset body", Description: "An asset's inline body"},
		Resolver:  s.assetResolver(ReprBody),
		Reader:    s.Reader(),
		Completer: completer{s: s, bodyOnly: true},
	}
}

// plannedObject is [Store.ObjectTarget] carrying the plan's grant flags.
func (s *Store) plannedObject(a Asset, f grantFlags) (core.ResourceTarget, error) {
	t, err := s.ObjectTarget(a)
	if err != nil {
		return core.ResourceTarget{}, err
	}
	r, err := parseRef(t)
	if err != nil {
		return core.ResourceTarget{}, err
	}
	return newTarget(t.URI(), r.withGrants(f))
}

// assetResolver plans one asset's representation repr.
func (s *Store) assetResolver(repr string) core.Resolver {
	return core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
		project, _ := m.Var("project")
		id, _ := m.Var("asset")
		a, flags, err := s.lookupAsset(ctx, project, id)
		if err != nil {
			return core.ResourceReadPlan{}, err
		}
		if repr == ReprBody && a.BodySize < 0 {
			return core.ResourceReadPlan{}, core.Unavailable(errors.New("postgres: the asset has no inline body"))
		}
		var item core.ResourceTarget
		switch repr {
		case ReprBody:
			item, err = newTarget(a.BodyURI(), a.ref(ReprBody).withGrants(flags))
		case ReprObject:
			item, err = s.plannedObject(a, flags)
		default:
			item, err = newTarget(a.FieldsURI(), a.ref(ReprFields).withGrants(flags))
		}
		if err != nil {
			return core.ResourceReadPlan{}, err
		}
		items := []core.ResourceTarget{item}
		if repr == ReprFields {
			// The joined bundle: the fields, then the object they reference.
			switch obj, err := s.plannedObject(a, flags); {
			case err == nil:
				items = append(items, obj)
			case !errors.Is(err, errNoObject) && core.KindOf(err) != core.FailureUnavailable:
				return core.ResourceReadPlan{}, err
			}
		}
		requested := item
		if m.URI() != item.URI() {
			if requested, err = newTarget(m.URI(), a.ref(repr).withGrants(flags)); err != nil {
				return core.ResourceReadPlan{}, err
			}
		}
		return core.NewResourceReadPlan(requested, items...)
	})
}
