package s3store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"go.phpboyscout.uk/mcp/resources/core"
)

// Listing bounds.
const (
	// MaxListingKeys bounds [KeyListing].MaxKeys: at most ten LIST pages
	// of 1000 keys.
	MaxListingKeys = 10_000
	// listPageKeys is the most keys S3 returns in one ListObjectsV2 page.
	listPageKeys = 1000
)

// listingRepresentation is the representation of a listing's requested
// target: the listing itself, never read.
const listingRepresentation = "s3-listing"

// KeyListing serves, as a bundle, the objects of a [KeyFamily] under the
// prefix the listing's captures name: with the family
// report://tenants/{tenant}/reports/... (prefix tenants/{tenant}/reports/)
// and the listing template report://tenants/{tenant}/reports, a read of
// report://tenants/acme/reports plans one item per object under
// tenants/acme/reports/, each with the URI that reads it through the
// family (report://tenants/acme/reports/2026/q3.pdf), pinned by the ETag
// the listing returned and typed from its key alone,
// exactly as a read of that URI is in a bucket opened with
// Options.TypeByKey (which ListingBinding requires): no HEAD per object.
//
// Keys the family cannot serve (deeper than its MaxDepth, or with a
// segment [CheckKey] refuses) are left out. The family's Grant, when set,
// is asked once, before any request to S3, about the listed prefix itself
// (key: the prefix, ending in '/'; vars: the listing's decoded captures);
// false is unavailable with no request to S3. A grant can answer for a
// whole prefix only when it grants prefixes and does not depend on the
// key or its segments: postgres Source.PrefixGrant builds one that is
// checked so. Nil Grant lists every object (a public family).
type KeyListing struct {
	// Definition names the listing; its URITemplate must capture exactly
	// the captures of Family.URI, which fill Family.Prefix.
	Definition core.ResourceDefinition
	// Family is the key family whose objects are listed.
	Family KeyFamily
	// MaxKeys bounds the keys listed, over all LIST pages together (at
	// most MaxKeys/1000+1 pages); zero means the gateway's default
	// MaxPlanItems (1024), more than [MaxListingKeys] is refused. Keys
	// beyond it are left out of the bundle, which then holds the first
	// MaxKeys in key order and is truncated (core.ResourceReadPlan.Truncated):
	// the read is partial, with a budget_exceeded issue for the rest.
	MaxKeys int
	// MaxURIBytes is the gateway's MaxURIBytes: an object whose item URI
	// would be longer (a URI no read could request) is left out, rather
	// than failing the whole listing. Zero means the gateway's default.
	MaxURIBytes int
}

// ListingBinding returns the binding of l (see [KeyListing]). Errors are
// *core.ConfigError values.
func (b *Bucket) ListingBinding(l KeyListing) (core.ResourceBinding, error) {
	name := l.Definition.Name
	fail := func(field, reason string) (core.ResourceBinding, error) {
		return core.ResourceBinding{}, core.ConfigPath{Binding: name, Field: field}.Reject(reason, nil)
	}
	switch {
	case name == "":
		return fail("Definition.Name", "is required")
	case l.Definition.URITemplate == "":
		return fail("Definition.URITemplate", "is required")
	case !b.typeByKey:
		return fail("Options.TypeByKey", "a listing needs a bucket opened with TypeByKey, so that its items' types are those a read gives")
	case l.MaxKeys < 0 || l.MaxKeys > MaxListingKeys:
		return fail("MaxKeys", fmt.Sprintf("must be 0 to %d", MaxListingKeys))
	}
	maxKeys := l.MaxKeys
	if maxKeys == 0 {
		// The gateway's default MaxPlanItems, so that a larger prefix gives
		// a bundle the gateway cuts at its MaxItems with a budget issue.
		maxKeys = core.DefaultResourceLimits().MaxPlanItems
	}
	// The family's own checks: URI, Prefix and MaxDepth.
	fam := l.Family
	fam.Definition.URI, fam.Definition.URITemplate = "", ""
	if _, err := b.keyBindings(fam); err != nil {
		return core.ResourceBinding{}, err
	}
	base := strings.TrimSuffix(fam.URI, "/...")
	scheme, path, _ := strings.Cut(base, "://")
	segs := strings.Split(path, "/")
	famVars, _ := patternVars(segs[1:], "URI")
	vars, err := core.TemplateVariables(l.Definition.URITemplate)
	if err != nil {
		return fail("Definition.URITemplate", errors.Unwrap(err).Error())
	}
	same := len(vars) == len(famVars)
	for _, v := range famVars {
		same = same && slices.Contains(vars, v)
	}
	if !same {
		return fail("Definition.URITemplate", fmt.Sprintf("must capture exactly the family's captures (%s)", strings.Join(famVars, ", ")))
	}
	maxURI := l.MaxURIBytes
	if maxURI <= 0 {
		maxURI = core.DefaultResourceLimits().MaxURIBytes
	}
	prefix, _ := parseKeyPrefix(fam.Prefix)
	lst := &listing{b: b, family: fam.Definition.Name, scheme: scheme, uriSegs: segs, prefix: prefix, depth: fam.MaxDepth, grant: fam.Grant, maxKeys: maxKeys, maxURI: maxURI}
	return core.ResourceBinding{Definition: l.Definition, Resolver: core.ResolverFunc(lst.resolve), Reader: core.ItemReader(b.Read)}, nil
}

// listing is one KeyListing's resolver.
type listing struct {
	b       *Bucket
	family  string
	scheme  string
	uriSegs []string // authority, then literal and {captured} segments
	prefix  []keySegment
	depth   int
	grant   KeyGrant
	maxKeys int
	maxURI  int
}

// errListingNotGranted is the private cause of a listing the grant refused.
var errListingNotGranted = errors.New("s3store: no grant for the listed prefix")

func (l *listing) resolve(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
	prefix, err := fillPrefix(l.prefix, m)
	if err != nil {
		return core.ResourceReadPlan{}, core.NewFailure(core.FailureUnavailable, err)
	}
	if l.grant != nil {
		ok, err := l.grant(ctx, l.family, prefix, m.Vars())
		switch {
		case err != nil:
			return core.ResourceReadPlan{}, err
		case !ok:
			return core.ResourceReadPlan{}, core.NewFailure(core.FailureUnavailable, errListingNotGranted)
		}
	}
	objs, more, err := l.list(ctx, prefix)
	if err != nil {
		return core.ResourceReadPlan{}, err
	}
	items := make([]core.ResourceTarget, 0, len(objs))
	for _, o := range objs {
		uri := canonicalURI(l.scheme, l.uriSegs, m, strings.Split(strings.TrimPrefix(o.Key, prefix), "/"))
		if len(uri) > l.maxURI {
			continue // no read could name it
		}
		t, err := NewObjectTarget(uri, o)
		if err != nil {
			continue // an identity S3 should not have listed: leave it out
		}
		items = append(items, t)
	}
	authz, _ := json.Marshal(struct {
		Bucket string `json:"bucket"`
		Prefix string `json:"prefix"`
	}{l.b.name, prefix})
	requested, err := core.NewResourceTarget(m.URI(), listingRepresentation, authz)
	if err != nil {
		return core.ResourceReadPlan{}, err
	}
	plan, err := core.NewResourceReadPlan(requested, items...)
	if more {
		plan = plan.Truncated() // reported as partial, with a budget issue
	}
	return plan, err
}

// list returns the objects under prefix that the family serves, in key
// order: at most l.maxKeys keys looked at, over as few LIST pages as that
// takes, each typed by its key alone. more reports that S3 holds keys
// under prefix past the l.maxKeys looked at, which the listing leaves out.
func (l *listing) list(ctx context.Context, prefix string) (out []Object, more bool, err error) {
	_, c, err := l.b.access(ctx)
	if err != nil {
		return nil, false, err
	}
	var token *string
	for seen := 0; ; {
		page := min(listPageKeys, l.maxKeys-seen)
		res, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
			Bucket: aws.String(l.b.name), Prefix: aws.String(prefix), MaxKeys: aws.Int32(int32(page)), ContinuationToken: token,
		})
		if err != nil {
			return nil, false, classify(err)
		}
		for _, o := range res.Contents {
			if seen == l.maxKeys {
				return out, true, nil // a key past the bound: cut short
			}
			seen++
			key := aws.ToString(o.Key)
			if !l.serves(prefix, key) || aws.ToString(o.ETag) == "" {
				continue
			}
			obj := Object{Bucket: l.b.name, Key: key, ETag: aws.ToString(o.ETag), Size: -1, ContentType: keyContentType(key, "")}
			if o.Size != nil {
				obj.Size = *o.Size
			}
			out = append(out, obj)
		}
		if !aws.ToBool(res.IsTruncated) || res.NextContinuationToken == nil || len(res.Contents) == 0 {
			return out, false, nil
		}
		if seen == l.maxKeys {
			return out, true, nil // S3 holds more than the bound
		}
		token = res.NextContinuationToken
	}
}

// serves reports whether the family reads key, listed under prefix: a key
// [CheckKey] accepts (so that each of its segments is one [checkSegment]
// accepts too) with 1 to depth segments after prefix.
func (l *listing) serves(prefix, key string) bool {
	rest, ok := strings.CutPrefix(key, prefix)
	return ok && rest != "" && CheckKey(key) == nil && strings.Count(rest, "/") < l.depth
}
