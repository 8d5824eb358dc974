package s3store

import (
	"strings"

	"go.phpboyscout.uk/mcp/resources/core"
)

// The checks a caller runs before it has a bucket: each is the check of
// the Bucket method it names, run on a bucket that serves nothing, so that
// a configuration file is refused by the store's own rules, with the
// store's *core.ConfigError (its Path), before it connects.

// CheckBucketName checks a bucket name as [OpenBucket] does: a
// *core.ConfigError at the path of the Bucket.
func CheckBucketName(name string) error {
	if err := checkBucket(name); err != nil {
		return core.ConfigPath{Field: "Bucket"}.Reject("is not a bucket name: it "+err.Error(), nil)
	}
	return nil
}

// CheckKeyFamily checks f as [Bucket.KeyBindings] does.
func CheckKeyFamily(f KeyFamily) error {
	_, err := (&Bucket{}).keyBindings(f)
	return err
}

// CheckBinding checks def and prefix as [Bucket.Binding] does.
func CheckBinding(def core.ResourceDefinition, prefix string) error {
	_, err := (&Bucket{}).GrantedBinding(def, prefix, nil)
	return err
}

// CheckListing checks l as [Bucket.ListingBinding] does on a bucket opened
// with Options.TypeByKey.
func CheckListing(l KeyListing) error {
	_, err := (&Bucket{typeByKey: true}).ListingBinding(l)
	return err
}

// Captures returns the names a URI of the family captures: the URI's own,
// in order, then k1 ... kMaxDepth for the key's segments (what its Grant
// receives). f must be a family [CheckKeyFamily] accepts.
func (f KeyFamily) Captures() []string {
	_, path, _ := strings.Cut(strings.TrimSuffix(f.URI, "/..."), "://")
	out, _ := patternVars(strings.Split(path, "/")[1:], "URI") // as keyBindings reads them
	for i := 1; i <= f.MaxDepth; i++ {
		out = append(out, keySegmentVar(i))
	}
	return out
}

// Templates returns the family's URI templates, one per depth from 1 to
// MaxDepth: those [Bucket.KeyBindings] registers. f must be a family
// [CheckKeyFamily] accepts.
func (f KeyFamily) Templates() []string {
	tmpl := strings.TrimSuffix(f.URI, "/...")
	out := make([]string, 0, f.MaxDepth)
	for depth := 1; depth <= f.MaxDepth; depth++ {
		tmpl += "/{" + keySegmentVar(depth) + "}"
		out = append(out, tmpl)
	}
	return out
}
