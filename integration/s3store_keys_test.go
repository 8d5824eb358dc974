package integration

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/integration/harness"
	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// TestS3StoreHostileKeysRoundTripExactlyOrAreRefusedAtPlanning proves that
// a capture with spaces, unicode, '%', '+', '?', '#' or dots reads exactly
// the object whose key is the prefix plus the decoded capture, and that
// every capture or key that could leave the prefix or be normalized into
// another key ("..", ".", slashes, backslashes, control characters) is
// refused before any request reaches S3. Every object's body is its own
// key, and decoys sit where a normalized key would land.
func TestS3StoreHostileKeysRoundTripExactlyOrAreRefusedAtPlanning(t *testing.T) {
	t.Parallel()
	env := harness.S3(t)
	w := &wire{}
	store, _ := rootStore(t, env, w)
	root := s3Client(t, env, nil)
	exact := []struct{ uri, key string }{
		{"s3obj://docs/a%20b.txt", "docs/a b.txt"},
		{"s3obj://docs/r%C3%A9sum%C3%A9%20%C3%BC%20%E5%90%8D.txt", "docs/résumé ü 名.txt"},
		{"s3obj://docs/100%25.txt", "docs/100%.txt"},
		{"s3obj://docs/a+b.txt", "docs/a+b.txt"},
		{"s3obj://docs/a%2Bb.txt", "docs/a+b.txt"},
		{"s3obj://docs/what%3F.txt", "docs/what?.txt"},
		{"s3obj://docs/%23hash.txt", "docs/#hash.txt"},
		{"s3obj://docs/a..b", "docs/a..b"},
		{"s3obj://docs/...", "docs/..."},
		{"s3obj://docs/%252F", "docs/%2F"},
		{"s3obj://docs/%2525", "docs/%25"},
		{"s3obj://docs/%3F%23%25%2B%20", "docs/?#%+ "},
	}
	for _, e := range exact {
		putObject(t, root, env.Bucket, e.key, "text/plain", []byte(e.key))
	}
	for _, decoy := range []string{"secret.txt", "docs/secret.txt", "docs/a", "docs/b", "docs/a%20b.txt", "docs/what", "docs/ab", "docs/%2F.txt", "other/x"} {
		putObject(t, root, env.Bucket, decoy, "text/plain", []byte("DECOY "+decoy))
	}
	binding, err := store.Binding(core.ResourceDefinition{URITemplate: "s3obj://docs/{name}", Name: "doc"}, "docs/")
	if err != nil {
		t.Fatal(err)
	}
	res := gateway(t, allowAll(), core.ResourceLimits{}, binding)
	ctx := asHost(t.Context())

	for _, e := range exact {
		w.reset()
		got, err := res.Read(ctx, e.uri)
		if err != nil {
			t.Errorf("%s: %v, want the object at %q", e.uri, err, e.key)
			continue
		}
		// The item answers with the key's one canonical URI (each segment
		// escaped by url.PathEscape), whatever encoding the request used.
		canonical := "s3obj://docs/" + url.PathEscape(strings.TrimPrefix(e.key, "docs/"))
		if b := bodies(got); len(b) != 1 || b[canonical] != e.key {
			t.Errorf("%s: read %v, want exactly the body of %q at %s", e.uri, b, e.key, canonical)
		}
		if w.gets.Load() != 1 {
			t.Errorf("%s: %d GETs, want 1", e.uri, w.gets.Load())
		}
	}

	refused := []struct {
		uri  string
		kind core.FailureKind
	}{
		{"s3obj://docs/..", core.FailureInvalidRequest},
		{"s3obj://docs/.", core.FailureInvalidRequest},
		{"s3obj://docs/%2E%2E", core.FailureInvalidRequest},
		{"s3obj://docs/%2e", core.FailureInvalidRequest},
		{"s3obj://docs/..%2Fsecret.txt", core.FailureInvalidRequest},
		{"s3obj://docs/%2E%2E%2Fsecret.txt", core.FailureInvalidRequest},
		{"s3obj://docs/a%2Fb", core.FailureInvalidRequest},
		{"s3obj://docs/..%5Csecret.txt", core.FailureInvalidRequest},
		{"s3obj://docs/a%00b", core.FailureInvalidRequest},
		{"s3obj://docs/%C0%AE%C0%AE", core.FailureInvalidRequest},
		{"s3obj://docs/a%0Ab", core.FailureInvalidPlan},
		{"s3obj://docs/a%7Fb", core.FailureInvalidPlan},
		{"s3obj://docs/what?.txt", core.FailureUnavailable}, // a query: no template matches
		{"s3obj://docs/a#hash.txt", core.FailureUnavailable},
		{"s3obj://docs/../secret.txt", core.FailureUnavailable}, // two segments: no template matches
	}
	for _, r := range refused {
		w.reset()
		_, err := res.Read(ctx, r.uri)
		if k := core.KindOf(err); k != r.kind {
			t.Errorf("%s: %v (%v), want %v", r.uri, k, err, r.kind)
		}
		if n := w.gets.Load() + w.heads.Load(); n != 0 {
			t.Errorf("%s: %d requests reached S3, want none", r.uri, n)
		}
		if r.kind == core.FailureInvalidPlan {
			var ke *s3store.KeyError
			if !errors.As(err, &ke) {
				t.Errorf("%s: cause %v, want a *s3store.KeyError", r.uri, errors.Unwrap(err))
			}
		}
	}

	// Keys that never come from a capture (a row, a listing) obey the same
	// rules in the helpers.
	for _, key := range []string{"docs/../secret.txt", "docs/./a", "/secret.txt", "docs//a", `docs\..\secret.txt`} {
		w.reset()
		if _, err := store.Head(ctx, key); !errors.As(err, new(*s3store.KeyError)) {
			t.Errorf("Head(%q): %v, want a *s3store.KeyError", key, err)
		}
		if _, err := s3store.NewObjectTarget("s3item://k", s3store.Object{Bucket: env.Bucket, Key: key, ETag: `"x"`, Size: -1}); !errors.As(err, new(*s3store.KeyError)) {
			t.Errorf("NewObjectTarget(%q): %v, want a *s3store.KeyError", key, err)
		}
		if n := w.gets.Load() + w.heads.Load(); n != 0 {
			t.Errorf("%q: %d requests reached S3, want none", key, n)
		}
	}
}
