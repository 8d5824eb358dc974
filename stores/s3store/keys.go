package s3store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/mediatype"
)

// MaxKeyDepth bounds [KeyFamily].MaxDepth.
const MaxKeyDepth = 32

// KeyFamily serves the objects under a key prefix, at any depth up to
// MaxDepth, as a family of whole-segment templates: the contract allows no
// {+path} or {path*} variable and no '/' in a capture, so a nested key is
// served by one template per depth, each of whose segments is a checked
// capture. With
//
//	URI:      "report://tenants/{tenant}/reports/...",
//	Prefix:   "tenants/{tenant}/reports/",
//	MaxDepth: 3,
//
// the family is report://tenants/{tenant}/reports/{k1},
// .../{k1}/{k2} and .../{k1}/{k2}/{k3}, and
// report://tenants/acme/reports/2026/q3.pdf reads the key
// tenants/acme/reports/2026/q3.pdf. Templates of different depths have
// different numbers of segments, so the family is never ambiguous with
// itself; [Bucket.KeyBindings] also refuses families that overlap each
// other (core.TemplateOverlaps).
type KeyFamily struct {
	// Definition names the family (Name is required; Title, Description,
	// MIMEType, Meta, Annotations and Icons are copied to every template).
	// URI and URITemplate must be empty: URI below gives the templates.
	Definition core.ResourceDefinition
	// URI is the family's URI: literal and {captured} whole path segments,
	// ending in "/..." where the nested key segments go.
	URI string
	// Prefix is the key prefix: "" or literal and {captured} whole
	// segments ending in '/'. Every capture of URI must appear in Prefix
	// exactly once, and Prefix may use no other, so that each URI names one
	// key and each key one URI.
	Prefix string
	// MaxDepth is the most key segments after Prefix, 1 to MaxKeyDepth:
	// the family serves keys of every depth from 1 to MaxDepth, each only
	// where Grant grants that exact key (or a prefix of it).
	MaxDepth int
	// Grant, when set, decides each key before any request to S3: the
	// binding's name, the key and the URI's decoded captures (the
	// template's, then k1, k2, ...) go to it, and a key it does not grant is
	// unavailable without a HEAD or GET. Nil leaves the decision to the
	// gateway's policy alone, after the planning HEAD.
	Grant KeyGrant
}

// KeyGrant reports whether the caller of ctx may read key, the object that
// a URI of the binding named binding addresses, whose decoded captures are
// vars. It is asked before any request to S3 and must make none itself;
// false is unavailable, as for a missing object, and an error fails the
// read. Package postgres's Source.KeyGrant builds one from a statement.
type KeyGrant func(ctx context.Context, binding, key string, vars map[string]string) (bool, error)

// errNotGranted is the private cause of a key that the grant refused.
var errNotGranted = errors.New("s3store: no grant for the key")

// granted checks key ([CheckKey]) and asks grant about it, when there is
// one: nil when the read may go on, core.FailureUnavailable when the key is not
// granted.
func granted(ctx context.Context, grant KeyGrant, m core.ResourceMatch, key string) error {
	if err := CheckKey(key); err != nil || grant == nil {
		return err
	}
	ok, err := grant(ctx, m.Definition().Name, key, m.Vars())
	switch {
	case err != nil:
		return err
	case !ok:
		return core.NewFailure(core.FailureUnavailable, errNotGranted)
	}
	return nil
}

// planHead plans m's one item, the object under key (after [granted]),
// from a HEAD: the current version, pinned by ETag, typed by typ. The
// item's URI is itemURI, the object's canonical URI (see [canonicalURI]);
// the requested target, of the same identity, keeps the request URI.
func (b *Bucket) planHead(ctx context.Context, grant KeyGrant, m core.ResourceMatch, key, itemURI string, typ func(Object) string) (core.ResourceReadPlan, error) {
	if err := granted(ctx, grant, m, key); err != nil {
		return core.ResourceReadPlan{}, err
	}
	obj, err := b.Head(ctx, key)
	if err != nil {
		return core.ResourceReadPlan{}, err
	}
	obj.VersionID = ""
	obj.ContentType = typ(obj)
	requested, err := NewObjectTarget(m.URI(), obj)
	if err != nil {
		return core.ResourceReadPlan{}, err
	}
	item := requested
	if itemURI != m.URI() {
		if item, err = NewObjectTarget(itemURI, obj); err != nil {
			return core.ResourceReadPlan{}, err
		}
	}
	return core.NewResourceReadPlan(requested, item)
}

// canonicalURI is the one wire URI of an object that a URI of the
// whole-segment pattern scheme://segs[0]/segs[1]/... names, followed by the
// key segments rest: each {capture} of segs replaced by m's decoded
// capture and each segment of rest, both escaped as one path segment
// (url.PathEscape, as package postgres escapes a bundle's item URIs), and
// each literal segment as it is. A key family's read and a listing of
// the same object give the same URI, whatever encoding the request used
// (report://tenants/%61cme/... is report://tenants/acme/...).
func canonicalURI(scheme string, segs []string, m core.ResourceMatch, rest []string) string {
	var b strings.Builder
	b.WriteString(scheme)
	b.WriteString("://")
	b.WriteString(segs[0])
	for _, seg := range segs[1:] {
		b.WriteByte('/')
		if name, ok := captureName(seg); ok {
			v, _ := m.Var(name)
			b.WriteString(url.PathEscape(v))
			continue
		}
		b.WriteString(seg)
	}
	for _, seg := range rest {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(seg))
	}
	return b.String()
}

// keySegmentVar names the variable of nested key segment i (1-based).
func keySegmentVar(i int) string { return "k" + strconv.Itoa(i) }

// KeyBindings returns the bindings of families: for each family, one
// template binding per depth from 1 to MaxDepth, in that order. Each plans
// one item, the object's canonical URI (the request URI with each capture
// decoded and escaped as one path segment, the URI a [KeyListing] of the
// object gives), from a HEAD of the key under the
// requesting principal's access (after the family's Grant, if any, granted
// the key: a refused key costs no request), pinned to the current ETag like
// [Bucket.Binding], with the MIME type the HEAD returned or, when the object
// has none, the one its key's extension names ([ContentTypeOf]; with
// Options.TypeByKey, by its key alone, as a [KeyListing] types it). Every
// segment of the key is checked ([CheckKey]: no empty, "." or ".." segment,
// no backslash or control character) before any request. Errors are
// *core.ConfigError values: a malformed URI or Prefix, a capture Prefix does
// not use, a depth out of range, or two families (or depths) that some URI
// would match at once.
func (b *Bucket) KeyBindings(families ...KeyFamily) ([]core.ResourceBinding, error) {
	var out []core.ResourceBinding
	for _, f := range families {
		bs, err := b.keyBindings(f)
		if err != nil {
			return nil, err
		}
		out = append(out, bs...)
	}
	if err := checkDisjoint(out); err != nil {
		return nil, err
	}
	return out, nil
}

func (b *Bucket) keyBindings(f KeyFamily) ([]core.ResourceBinding, error) {
	name := f.Definition.Name
	fail := func(field, reason string) ([]core.ResourceBinding, error) {
		return nil, core.ConfigPath{Binding: name, Field: field}.Reject(reason, nil)
	}
	switch {
	case name == "":
		return fail("Definition.Name", "is required")
	case f.Definition.URI != "" || f.Definition.URITemplate != "":
		return fail("Definition", "must leave URI and URITemplate empty: KeyFamily.URI gives the templates")
	case f.MaxDepth == 0:
		return fail("MaxDepth", fmt.Sprintf(`is required: how many key segments the URI's "..." stands for at most, 1 to %d`, MaxKeyDepth))
	case f.MaxDepth < 1 || f.MaxDepth > MaxKeyDepth:
		return fail("MaxDepth", fmt.Sprintf("must be from 1 to %d", MaxKeyDepth))
	}
	base, ok := strings.CutSuffix(f.URI, "/...")
	if !ok {
		return fail("URI", `must end in "/..." where the key's segments go`)
	}
	scheme, path, ok := strings.Cut(base, "://")
	if !ok || scheme == "" || path == "" {
		return fail("URI", "must be scheme://authority/... with an authority and no variable in it")
	}
	uriVars, err := patternVars(strings.Split(path, "/")[1:], "URI")
	if err != nil {
		return fail("URI", err.Error())
	}
	if strings.ContainsAny(strings.Split(path, "/")[0], "{}") {
		return fail("URI", "has a variable in its authority")
	}
	prefix, err := parseKeyPrefix(f.Prefix)
	if err != nil {
		return fail("Prefix", reasonOf(err))
	}
	var prefixVars []string
	for _, seg := range prefix {
		switch {
		case !seg.capture:
		case slices.Contains(prefixVars, seg.text):
			return fail("Prefix", fmt.Sprintf("uses {%s} twice", seg.text))
		default:
			prefixVars = append(prefixVars, seg.text)
		}
	}
	exactly := fmt.Sprintf("it must capture exactly the template's captures (%s), so that each URI names one key", strings.Join(uriVars, ", "))
	for _, v := range uriVars {
		if !slices.Contains(prefixVars, v) {
			return fail("Prefix", fmt.Sprintf("does not use the template's capture {%s}: %s", v, exactly))
		}
	}
	for _, v := range prefixVars {
		if !slices.Contains(uriVars, v) {
			return fail("Prefix", fmt.Sprintf("uses {%s}, which the template does not capture: %s", v, exactly))
		}
	}
	for i := 1; i <= f.MaxDepth; i++ {
		if slices.Contains(uriVars, keySegmentVar(i)) {
			return fail("URI", fmt.Sprintf("{%s} is the name of key segment %d of the family", keySegmentVar(i), i))
		}
	}
	out := make([]core.ResourceBinding, 0, f.MaxDepth)
	for depth, tmpl := range f.Templates() {
		def := f.Definition
		def.URITemplate = tmpl
		out = append(out, core.ResourceBinding{Definition: def, Resolver: b.keyResolver(scheme, strings.Split(path, "/"), prefix, depth+1, f.Grant), Reader: core.ItemReader(b.Read)})
	}
	return out, nil
}

// keySegment is one segment of a key prefix: literal text or a capture.
type keySegment struct {
	text    string
	capture bool
}

// reasonOf is the rule err names: a *KeyError's reason, without the
// package's name.
func reasonOf(err error) string {
	if ke, ok := errors.AsType[*KeyError](err); ok {
		return ke.reason
	}
	return err.Error()
}

// parseKeyPrefix parses "" or segments ending in '/'.
func parseKeyPrefix(p string) ([]keySegment, error) {
	if p == "" {
		return nil, nil
	}
	if len(p) > maxKeyBytes {
		return nil, &KeyError{keyTooLong}
	}
	body, ok := strings.CutSuffix(p, "/")
	if !ok {
		return nil, errors.New("must be empty or end in /")
	}
	var out []keySegment
	for _, seg := range strings.Split(body, "/") {
		if name, ok := captureName(seg); ok {
			out = append(out, keySegment{text: name, capture: true})
			continue
		}
		if strings.ContainsAny(seg, "{}") {
			return nil, fmt.Errorf("segment %q mixes literal text and a capture; captures are whole segments", seg)
		}
		if err := checkSegment(seg); err != nil {
			return nil, fmt.Errorf("segment %q: %s", seg, reasonOf(err))
		}
		out = append(out, keySegment{text: seg})
	}
	return out, nil
}

// patternVars returns the captures of URI path segments, refusing partial
// segments and repeated names.
func patternVars(segs []string, what string) ([]string, error) {
	var vars []string
	for _, seg := range segs {
		if name, ok := captureName(seg); ok {
			if slices.Contains(vars, name) {
				return nil, fmt.Errorf("captures {%s} twice", name)
			}
			vars = append(vars, name)
			continue
		}
		if strings.ContainsAny(seg, "{}") {
			return nil, fmt.Errorf("segment %q mixes literal text and a capture; captures are whole segments", seg)
		}
		if seg == "" {
			return nil, fmt.Errorf("%s has an empty segment", what)
		}
	}
	return vars, nil
}

// captureName returns name for a segment "{name}" with a valid name.
func captureName(seg string) (string, bool) {
	name, ok := strings.CutPrefix(seg, "{")
	if !ok {
		return "", false
	}
	name, ok = strings.CutSuffix(name, "}")
	if !ok || name == "" {
		return "", false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return "", false
		}
	}
	return name, true
}

// checkSegment refuses a key segment that is empty, "." or "..", or holds
// '/', a backslash or a control character.
func checkSegment(seg string) error {
	if seg == "" || strings.IndexByte(seg, '/') >= 0 {
		return &KeyError{keyEmptySegment}
	}
	return CheckKey(seg) // "." and "..": its dot-segment rule
}

// keyResolver plans the key that a depth-depth template's captures name,
// as the item of the object's canonical URI in the family whose URI is
// scheme://uriSegs/... ([canonicalURI]). A grant decides the key before
// the HEAD.
func (b *Bucket) keyResolver(scheme string, uriSegs []string, prefix []keySegment, depth int, grant KeyGrant) core.Resolver {
	return core.ResolverFunc(func(ctx context.Context, m core.ResourceMatch) (core.ResourceReadPlan, error) {
		key, err := fillPrefix(prefix, m)
		if err != nil {
			return core.ResourceReadPlan{}, err
		}
		segs := make([]string, depth)
		for i := range segs {
			segs[i], _ = m.Var(keySegmentVar(i + 1))
			if err := checkSegment(segs[i]); err != nil {
				return core.ResourceReadPlan{}, err
			}
		}
		return b.planHead(ctx, grant, m, key+strings.Join(segs, "/"), canonicalURI(scheme, uriSegs, m, segs), func(o Object) string { return b.typeOf(o.Key, "", o.ContentType) })
	})
}

// fillPrefix is the key prefix that m's captures name: each segment of
// prefix, literal or captured, checked ([checkSegment]) and followed by
// '/'.
func fillPrefix(prefix []keySegment, m core.ResourceMatch) (string, error) {
	var key strings.Builder
	for _, seg := range prefix {
		v := seg.text
		if seg.capture {
			v, _ = m.Var(seg.text)
		}
		if err := checkSegment(v); err != nil {
			return "", err
		}
		key.WriteString(v)
		key.WriteByte('/')
	}
	return key.String(), nil
}

// checkDisjoint refuses bindings some of whose templates overlap.
func checkDisjoint(bs []core.ResourceBinding) error {
	defs := make([]core.ResourceDefinition, len(bs))
	for i, b := range bs {
		defs[i] = b.Definition
	}
	overlaps, err := core.CheckDefinitions(defs, core.ResourceLimits{})
	if err != nil || len(overlaps) == 0 {
		return err
	}
	o := overlaps[0]
	return core.ConfigPath{Binding: bs[o.SecondBinding].Definition.Name, Field: "URI"}.Reject(
		fmt.Sprintf("templates %s and %s both match %s", o.First, o.Second, o.Example), nil)
}

// ContentTypeOf returns the MIME type to serve an object as: stored, the
// Content-Type a request already returned for it, when that is a usable
// type other than application/octet-stream or binary/octet-stream (what S3
// reports for an object stored without a type); else the type key's extension
// names (.txt, .md, .json, .pdf, ...); else application/octet-stream. It
// makes no request.
func ContentTypeOf(key, stored string) string {
	if ct := mediaType(stored); ct != octetStream && !strings.HasPrefix(ct, "binary/octet-stream") {
		return ct
	}
	return mediaType(mediatype.ByExtension(key))
}

// keyContentType returns the MIME type to serve the object key as under
// Options.TypeByKey, the one rule of a bucket's reads and listings:
// declared (a type the record that references the object gives, such as a
// row's object_mime) when it is a usable MIME type; else the type key's
// extension names (.txt is text/plain; charset=utf-8, .md, .json, .pdf,
// ...); else application/octet-stream. The Content-Type the object was
// stored with is never consulted, so a listing, which has no type per
// object, and a read of the same object always agree. It makes no request.
func keyContentType(key, declared string) string {
	if declared != "" && mediaType(declared) == declared {
		return declared
	}
	return mediaType(mediatype.ByExtension(key))
}

// typeOf is the MIME type of the object key, by the bucket's rule: with
// Options.TypeByKey keyContentType of declared, else [ContentTypeOf]
// declared or, without one, the stored type.
func (b *Bucket) typeOf(key, declared, stored string) string {
	if b.typeByKey {
		return keyContentType(key, declared)
	}
	return ContentTypeOf(key, cmp.Or(declared, stored))
}

// Check asks S3, with the client given to OpenBucket, whether the bucket
// exists and that client may use it (one HeadBucket request; when it is
// refused, one ListObjectsV2 of at most one key, whose error says why: a
// HEAD answer has no body). It returns a *core.ConfigError whose Path.Field
// names what is wrong: "SecretAccessKey" when S3 refuses the signature,
// "AccessKeyID" when it does not know the key, "Bucket" when the bucket
// does not exist or the credentials may not use it; and the error itself
// when S3 cannot be reached.
func (b *Bucket) Check(ctx context.Context) error {
	_, err := b.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(b.name)})
	if err == nil {
		return nil
	}
	if core.KindOf(classify(err)) != core.FailureUnavailable {
		return fmt.Errorf("s3store: check bucket: %w", err)
	}
	_, lerr := b.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b.name), MaxKeys: aws.Int32(1)})
	var ae smithy.APIError
	code := ""
	if errors.As(lerr, &ae) {
		code = ae.ErrorCode()
	}
	switch code {
	case "SignatureDoesNotMatch":
		return core.ConfigPath{Field: "SecretAccessKey"}.Reject("S3 refuses the requests' signature: the secret key is not the access key's", err)
	case "InvalidAccessKeyId":
		return core.ConfigPath{Field: "AccessKeyID"}.Reject("S3 does not know the access key", err)
	case "NoSuchBucket":
		return core.ConfigPath{Field: "Bucket"}.Reject(fmt.Sprintf("bucket %q does not exist", b.name), err)
	case "AccessDenied":
		return core.ConfigPath{Field: "Bucket"}.Reject(fmt.Sprintf("the credentials may not use bucket %q", b.name), err)
	}
	return core.ConfigPath{Field: "Bucket"}.Reject(fmt.Sprintf("bucket %q does not exist or the client may not use it", b.name), err)
}
