package s3store

import (
	"context"
	"errors"
	"strings"

	"go.phpboyscout.uk/mcp/resources/core"
)

// Binding returns a binding that serves the objects under prefix through
// def, whose URITemplate must have at least one variable: the template's
// captures, in template order and joined by '/', appended to prefix form the
// key (asset://docs/{project}/{file} with prefix "public/" reads
// public/PROJECT/FILE). The gateway has already refused captures that hold
// '/', '\' or NUL or that are "." or "..", so a capture can never leave the
// prefix or name a bucket; the key is checked by [CheckKey] all the same.
//
// Each read plans one item, the requested URI in its canonical form (each
// capture decoded and escaped as one path segment, as a bundle's item URIs
// are: doc://%61cme/x is doc://acme/x), from a HEAD under the
// requesting principal's access ([Bucket.Head]), read by [Bucket.Read].
// The binding serves the current version: it pins the planned ETag and
// size but not the version id, so an object overwritten or deleted after
// planning is refused (read_failed or unavailable) rather than served from
// the bucket's history. A host that wants a named version plans it with
// [NewObjectTarget]. prefix is "" or ends with '/'. Errors are
// *core.ConfigError values.
func (b *Bucket) Binding(def core.ResourceDefinition, prefix string) (core.ResourceBinding, error) {
	return b.GrantedBinding(def, prefix, nil)
}

// GrantedBinding is [Bucket.Binding] with grant deciding each key before
// any request to S3, as [KeyFamily].Grant does: a key grant does not grant
// is unavailable without a HEAD. A nil grant is Binding.
func (b *Bucket) GrantedBinding(def core.ResourceDefinition, prefix string, grant KeyGrant) (core.ResourceBinding, error) {
	if def.URITemplate == "" {
		return core.ResourceBinding{}, core.ConfigPath{Binding: def.Name, Field: "URITemplate"}.Reject("an s3store binding needs a URI template", nil)
	}
	names, err := core.TemplateVariables(def.URITemplate)
	if err != nil {
		return core.ResourceBinding{}, core.ConfigPath{Binding: def.Name, Field: "URITemplate"}.Reject(errors.Unwrap(err).Error(), err)
	}
	if len(names) == 0 {
		return core.ResourceBinding{}, core.ConfigPath{Binding: def.Name, Field: "URITemplate"}.Reject("an s3store template needs at least one {variable} to form the key", nil)
	}
	if err := checkPrefix(prefix); err != nil {
		return core.ResourceBinding{}, core.ConfigPath{Binding: def.Name, Field: "Prefix"}.Reject("must be empty or a key prefix that ends with '/'", err)
	}
	scheme, path, _ := strings.Cut(def.URITemplate, "://")
	canonical := func(m core.ResourceMatch) string {
		if path == "" || strings.ContainsAny(path, "?#") {
			return m.URI()
		}
		return canonicalURI(scheme, strings.Split(path, "/"), m, nil)
	}
	resolve := func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
		var key strings.Builder
		key.WriteString(prefix)
		for i, name := range names {
			v, ok := m.Var(name)
			if !ok || v == "" {
				return core.ResourceReadPlan{}, &KeyError{keyEmptySegment}
			}
			if i > 0 {
				key.WriteByte('/')
			}
			key.WriteString(v)
		}
		return b.planHead(ctx, grant, m, key.String(), canonical(m), func(o Object) string {
			if b.typeByKey {
				return keyContentType(o.Key, "")
			}
			return o.ContentType // the stored type, as Head gives it
		})
	}
	return core.ResourceBinding{Definition: def, Resolver: core.ResolverFunc(resolve), Reader: core.ItemReader(b.Read)}, nil
}
