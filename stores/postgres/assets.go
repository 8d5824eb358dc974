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
}

func parseRef(t core.ResourceTarget) (ref, error) {
	var r ref
	if err := json.Unmarshal(t.AuthorizationData(), &r); err != nil || r.Kind != t.Representation() {
		return ref{}, ErrBadTarget
	}
	return r, nil
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
	return newTarget(a.FieldsURI(), ref{Kind: ReprFields, Project: a.Project, Asset: a.ID, Version: a.Version})
}

// BodyTarget returns the target of a's inline body, pinned to a.Version.
func BodyTarget(a Asset) (core.ResourceTarget, error) {
	return newTarget(a.BodyURI(), ref{Kind: ReprBody, Project: a.Project, Asset: a.ID, Version: a.Version})
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

const (
	sqlLookupAsset   = `SELECT ` + assetColumns + ` FROM mcpres.assets a WHERE a.project_id = $1 AND a.id = $2`
	sqlProjectAssets = `SELECT p.id, a.id IS NOT NULL, ` + assetColumns + `
	FROM mcpres.projects p LEFT JOIN mcpres.assets a ON a.project_id = p.id
	WHERE p.id = $1 ORDER BY a.id LIMIT $2`
)

func scanAsset(row pgx.Row, pre ...any) (Asset, bool, error) {
	var (
		a                               Asset
		project, id, name, title, mime  *string
		version, size, objSize          *int64
		text                            *bool
		bucket, key, etag, objVersionID *string
	)
	dest := append(pre, &project, &id, &version, &name, &title, &mime, &text, &size, &bucket, &key, &etag, &objVersionID, &objSize)
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
	b, err := s.s.begin(ctx)
	if err != nil {
		return Asset{}, err
	}
	b.Queue(sqlLookupAsset, project, id)
	var a Asset
	var found bool
	err = s.s.run(ctx, b, func(br pgx.BatchResults) error {
		a, found, err = scanAsset(br.QueryRow())
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	if err != nil {
		return Asset{}, err
	}
	if !found {
		return Asset{}, core.Unavailable(ErrNotVisible)
	}
	return a, nil
}

// ProjectAssets reads the identity metadata of every asset of project that
// the principal of ctx may discover, in id order, under row-level security.
// A project the principal may not discover returns an Unavailable error; a
// visible project without visible assets returns none. More assets than
// Options.MaxPlanItems is an error.
func (s *Store) ProjectAssets(ctx context.Context, project string) ([]Asset, error) {
	b, err := s.s.begin(ctx)
	if err != nil {
		return nil, err
	}
	b.Queue(sqlProjectAssets, project, s.s.maxItems+1)
	var assets []Asset
	projectVisible := false
	err = s.s.run(ctx, b, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var pid string
			var has bool
			a, found, err := scanAsset(rows, &pid, &has)
			if err != nil {
				return err
			}
			projectVisible = true
			if found {
				assets = append(assets, a)
			}
		}
		return rows.Err()
	})
	switch {
	case err != nil:
		return nil, err
	case !projectVisible:
		return nil, core.Unavailable(ErrNotVisible)
	case len(assets) > s.s.maxItems:
		return nil, fmt.Errorf("postgres: project has more than %d assets (Options.MaxPlanItems)", s.s.maxItems)
	}
	return assets, nil
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
		Resolver: completing{s: s, Resolver: core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
			project, _ := m.Var("project")
			assets, err := s.ProjectAssets(ctx, project)
			if err != nil {
				return core.ResourceReadPlan{}, err
			}
			requested, err := newTarget(m.URI(), ref{Kind: ReprProject, Project: project})
			if err != nil {
				return core.ResourceReadPlan{}, err
			}
			items := make([]core.ResourceTarget, len(assets))
			for i, a := range assets {
				if items[i], err = FieldsTarget(a); err != nil {
					return core.ResourceReadPlan{}, err
				}
			}
			return core.NewResourceReadPlan(requested, items...)
		})},
		Reader: s.Reader(),
	}
}

// FieldsBinding returns the binding of [FieldsTemplate]: the asset's fields
// and, when the store joins objects and the row references one that
// [Objects].Target serves, the object as a second item.
func (s *Store) FieldsBinding() core.ResourceBinding {
	return core.ResourceBinding{
		Definition: core.ResourceDefinition{URITemplate: FieldsTemplate, Name: "asset",
			Title: "Asset", Description: "An asset's fields", MIMEType: "application/json"},
		Resolver: completing{Resolver: s.assetResolver(ReprFields), s: s},
		Reader:   s.Reader(),
	}
}

// BodyBinding returns the binding of [BodyTemplate].
func (s *Store) BodyBinding() core.ResourceBinding {
	return core.ResourceBinding{
		Definition: core.ResourceDefinition{URITemplate: BodyTemplate, Name: "asset-body",
			Title: "Asset body", Description: "An asset's inline body"},
		Resolver: completing{Resolver: s.assetResolver(ReprBody), s: s, bodyOnly: true},
		Reader:   s.Reader(),
	}
}

// assetResolver plans one asset's representation repr.
func (s *Store) assetResolver(repr string) core.Resolver {
	return core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
		project, _ := m.Var("project")
		id, _ := m.Var("asset")
		a, err := s.LookupAsset(ctx, project, id)
		if err != nil {
			return core.ResourceReadPlan{}, err
		}
		if repr == ReprBody && a.BodySize < 0 {
			return core.ResourceReadPlan{}, core.Unavailable(errors.New("postgres: the asset has no inline body"))
		}
		var item core.ResourceTarget
		switch repr {
		case ReprBody:
			item, err = BodyTarget(a)
		case ReprObject:
			item, err = s.ObjectTarget(a)
		default:
			item, err = FieldsTarget(a)
		}
		if err != nil {
			return core.ResourceReadPlan{}, err
		}
		items := []core.ResourceTarget{item}
		if repr == ReprFields {
			// The joined bundle: the fields, then the object they reference.
			switch obj, err := s.ObjectTarget(a); {
			case err == nil:
				items = append(items, obj)
			case !errors.Is(err, errNoObject) && core.KindOf(err) != core.FailureUnavailable:
				return core.ResourceReadPlan{}, err
			}
		}
		requested := item
		if m.URI() != item.URI() {
			r := ref{Kind: repr, Project: a.Project, Asset: a.ID, Version: a.Version}
			if requested, err = newTarget(m.URI(), r); err != nil {
				return core.ResourceReadPlan{}, err
			}
		}
		return core.NewResourceReadPlan(requested, items...)
	})
}
