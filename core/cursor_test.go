package core

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

var cursorTestKey = []byte("0123456789abcdef0123456789abcdef")

// cursorClock is a settable clock.
type cursorClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *cursorClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *cursorClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// withClock makes now the clock that issues and expires a Resources
// value's list cursors (time.Now without it).
func withClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

func cursorDefs(n int) []ResourceDefinition {
	var defs []ResourceDefinition
	for i := range n {
		defs = append(defs,
			ResourceDefinition{URI: fmt.Sprintf("file:///c/%02d", i), Name: fmt.Sprintf("c%02d", i)},
			ResourceDefinition{URITemplate: fmt.Sprintf("asset://p/%02d/{id}", i), Name: fmt.Sprintf("t%02d", i)})
	}
	return defs
}

// cursorFirst returns the NextCursor of the first page of size 2.
func cursorFirst(t *testing.T, list listFunc, scope []byte) string {
	t.Helper()
	p, err := list(context.Background(), ListRequest{ScopeKey: scope, PageSize: 2})
	if err != nil || p.NextCursor == "" {
		t.Fatalf("first page: %+v, %v", p, err)
	}
	return p.NextCursor
}

// cursorRefused checks that a cursor fails with FailureInvalidCursor and the
// given private cause, and yields no page (never a restart).
func cursorRefused(t *testing.T, list listFunc, scope []byte, cursor string, cause error) {
	t.Helper()
	p, err := list(context.Background(), ListRequest{ScopeKey: scope, Cursor: cursor, PageSize: 2})
	if KindOf(err) != FailureInvalidCursor {
		t.Fatalf("cursor %.40q: err %v, want FailureInvalidCursor", cursor, err)
	}
	if cause != nil && !errors.Is(err, cause) {
		t.Fatalf("cursor %.40q: cause %v, want %v", cursor, errors.Unwrap(err), cause)
	}
	if p.Descriptions != nil || p.NextCursor != "" {
		t.Fatalf("refused cursor produced a page: %+v", p)
	}
	if err.Error() != "invalid or expired cursor" {
		t.Fatalf("public message %q", err.Error())
	}
}

func TestCursorFormat(t *testing.T) {
	var calls listCalls
	r := listNew(t, &calls, cursorDefs(3), listAllowAll, WithCursorKey(cursorTestKey))
	c := cursorFirst(t, r.List, listScope)
	if len(c) != cursorTextBytes || cursorTextBytes != 128 {
		t.Fatalf("cursor is %d characters, want %d (= 128)", len(c), cursorTextBytes)
	}
	if strings.ContainsAny(c, "+/=") {
		t.Fatalf("cursor %q is not unpadded base64url", c)
	}
	if listEnvelopeMaxBytes > minListEnvelopeBytes {
		t.Fatalf("envelope %d > %d", listEnvelopeMaxBytes, minListEnvelopeBytes)
	}
	raw, err := cursorEncoding.DecodeString(c)
	if err != nil || len(raw) != cursorRawBytes {
		t.Fatal(len(raw), err)
	}
	if raw[0] != cursorVersion || listMethod(raw[cursorOffMethod]) != listMethodResources {
		t.Fatalf("header % x", raw[:2])
	}
	if got := fmt.Sprintf("%x", raw[cursorOffRevision:cursorOffPosition]); got != r.Revision() {
		t.Fatalf("revision %s, Revision() %s", got, r.Revision())
	}
}

func TestCursorRefusals(t *testing.T) {
	clock := &cursorClock{t: time.Date(2030, 1, 2, 3, 4, 5, 6e6, time.UTC)}
	var calls listCalls
	defs := cursorDefs(3)
	r := listNew(t, &calls, defs, listAllowAll, WithCursorKey(cursorTestKey), withClock(clock.now))
	valid := cursorFirst(t, r.List, listScope)
	validTmpl := cursorFirst(t, r.ListTemplates, listScope)

	t.Run("over 4 KiB fails before decoding", func(t *testing.T) {
		long := valid + strings.Repeat("A", wire.MaxCursorBytes+1-len(valid))
		cursorRefused(t, r.List, listScope, long, errCursorTooLong)
		cursorRefused(t, r.List, listScope, strings.Repeat("\xff", 1<<20), errCursorTooLong)
		// 4 KiB exactly is decoded (and is malformed).
		cursorRefused(t, r.List, listScope, strings.Repeat("A", wire.MaxCursorBytes), errCursorMalformed)
	})
	t.Run("malformed", func(t *testing.T) {
		for _, c := range []string{
			"x", valid[:len(valid)-1], valid + "A", valid[:len(valid)-2] + "==",
			strings.ReplaceAll(valid, valid[:1], "+"), strings.Repeat("!", len(valid)),
			strings.Repeat("é", len(valid)/2), valid[:len(valid)-1] + "\x00",
		} {
			cursorRefused(t, r.List, listScope, c, errCursorMalformed)
		}
	})
	t.Run("version", func(t *testing.T) {
		raw, _ := cursorEncoding.DecodeString(valid)
		raw[0] = 2
		cursorRefused(t, r.List, listScope, cursorEncoding.EncodeToString(raw), errCursorVersion)
	})
	t.Run("cross-method", func(t *testing.T) {
		cursorRefused(t, r.ListTemplates, listScope, valid, errCursorMethod)
		cursorRefused(t, r.List, listScope, validTmpl, errCursorMethod)
	})
	t.Run("cross-scope", func(t *testing.T) {
		for _, scope := range [][]byte{[]byte("principal:bob/session:1"), listScope[:len(listScope)-1], append([]byte(string(listScope)), 0)} {
			cursorRefused(t, r.List, scope, valid, errCursorScope)
		}
	})
	t.Run("cross-registry", func(t *testing.T) {
		other := listNew(t, &calls, append(cursorDefs(3), ResourceDefinition{URI: "file:///extra", Name: "extra"}), listAllowAll, WithCursorKey(cursorTestKey), withClock(clock.now))
		cursorRefused(t, other.List, listScope, valid, errCursorRevision)
		changed := cursorDefs(3)
		changed[len(changed)-1].Title = "retitled" // a field other than URI or name
		other = listNew(t, &calls, changed, listAllowAll, WithCursorKey(cursorTestKey), withClock(clock.now))
		cursorRefused(t, other.List, listScope, valid, errCursorRevision)
	})
	t.Run("another key", func(t *testing.T) {
		other := listNew(t, &calls, defs, listAllowAll, WithCursorKey([]byte(strings.Repeat("k", 32))), withClock(clock.now))
		cursorRefused(t, other.List, listScope, valid, errCursorKey)
		// Without the option each value draws its own key.
		a := listNew(t, &calls, defs, listAllowAll)
		b := listNew(t, &calls, defs, listAllowAll)
		cursorRefused(t, b.List, listScope, cursorFirst(t, a.List, listScope), errCursorKey)
	})
	t.Run("position out of range", func(t *testing.T) {
		scope := sha256.Sum256(listScope)
		for _, pos := range []int{0, 3, 1 << 40} {
			cursorRefused(t, r.List, listScope, r.list.encodeCursor(listMethodResources, pos, &scope), errCursorPosition)
		}
		// In range, a forged-by-the-key cursor is fine.
		if _, err := r.List(context.Background(), ListRequest{ScopeKey: listScope, Cursor: r.list.encodeCursor(listMethodResources, 2, &scope)}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("expiry", func(t *testing.T) {
		c := cursorFirst(t, r.List, listScope)
		clock.add(listCursorLifetime - time.Millisecond)
		if _, err := r.List(context.Background(), ListRequest{ScopeKey: listScope, Cursor: c, PageSize: 2}); err != nil {
			t.Fatalf("just before expiry: %v", err)
		}
		clock.add(time.Millisecond)
		cursorRefused(t, r.List, listScope, c, errCursorExpired)
		clock.add(-2 * listCursorLifetime) // a clock that went back still honours the expiry it signed
		if _, err := r.List(context.Background(), ListRequest{ScopeKey: listScope, Cursor: c, PageSize: 2}); err != nil {
			t.Fatalf("clock went back: %v", err)
		}
		clock.add(listCursorLifetime)
	})
}

func TestCursorEveryCharacterAndBitChange(t *testing.T) {
	clock := &cursorClock{t: time.Unix(1_900_000_000, 0)}
	var calls listCalls
	r := listNew(t, &calls, cursorDefs(3), listAllowAll, WithCursorKey(cursorTestKey), withClock(clock.now))
	valid := cursorFirst(t, r.List, listScope)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	checked := 0
	for i := range len(valid) {
		for _, ch := range []byte(alphabet + "+/=.~\x00\x80") {
			if ch == valid[i] {
				continue
			}
			b := []byte(valid)
			b[i] = ch
			cursorRefused(t, r.List, listScope, string(b), nil)
			checked++
		}
	}
	raw, _ := cursorEncoding.DecodeString(valid)
	for bit := range len(raw) * 8 {
		b := append([]byte(nil), raw...)
		b[bit/8] ^= 1 << (bit % 8)
		// Every altered byte is refused as altered, except the version and
		// the key id, whose refusals name them.
		want := errCursorSignature
		switch {
		case bit/8 == 0:
			want = errCursorVersion
		case bit/8 >= cursorOffKeyID && bit/8 < cursorOffRevision:
			want = errCursorKey
		}
		cursorRefused(t, r.List, listScope, cursorEncoding.EncodeToString(b), want)
		checked++
	}
	if _, err := r.List(context.Background(), ListRequest{ScopeKey: listScope, Cursor: valid, PageSize: 2}); err != nil {
		t.Fatalf("the original still works: %v", err)
	}
	t.Logf("%d altered cursors refused", checked)
}

func TestCursorSharedAcrossReplicas(t *testing.T) {
	clock := &cursorClock{t: time.Unix(1_900_000_000, 0)}
	defs := cursorDefs(5)
	defs[3].Meta = json.RawMessage(`{ "a" : [1, 2] }`)
	reversed := make([]ResourceDefinition, len(defs))
	for i, d := range defs {
		reversed[len(defs)-1-i] = d
	}
	reversed[len(defs)-1-3].Meta = json.RawMessage(`{"a":[1,2]}`) // same object, other spacing
	var calls listCalls
	a := listNew(t, &calls, defs, listAllowAll, WithCursorKey(cursorTestKey), withClock(clock.now))
	b := listNew(t, &calls, reversed, listAllowAll, WithCursorKey(append([]byte(nil), cursorTestKey...)), withClock(clock.now))
	if a.Revision() != b.Revision() || len(a.Revision()) != 64 {
		t.Fatalf("revisions %s and %s", a.Revision(), b.Revision())
	}
	for _, pair := range [][2]listFunc{{a.List, b.List}, {a.ListTemplates, b.ListTemplates}} {
		// Alternate replicas page by page; the walk equals one replica's.
		want := listWalk(t, pair[0], "resources", 2, a.Limits().ListPageBytes)
		var got []ResourceDefinition
		cursor := ""
		for i := 0; ; i++ {
			p, err := pair[i%2](context.Background(), ListRequest{ScopeKey: listScope, Cursor: cursor, PageSize: 2})
			if err != nil {
				t.Fatalf("page %d: %v (%v)", i, err, errors.Unwrap(err))
			}
			got = append(got, p.Descriptions...)
			if cursor = p.NextCursor; cursor == "" {
				break
			}
		}
		listSame(t, got, want)
	}
	// A replica with different bindings refuses them.
	c := cursorFirst(t, a.List, listScope)
	other := listNew(t, &calls, cursorDefs(4), listAllowAll, WithCursorKey(cursorTestKey), withClock(clock.now))
	cursorRefused(t, other.List, listScope, c, errCursorRevision)
}

func TestRevision(t *testing.T) {
	var calls listCalls
	rev := func(defs ...ResourceDefinition) string {
		t.Helper()
		return listNew(t, &calls, defs, listAllowAll).Revision()
	}
	base := ResourceDefinition{URI: "a://x", Name: "n", Title: "t", Description: "d", MIMEType: "text/plain", Meta: json.RawMessage(`{"k":1}`)}
	seen := map[string]string{rev(base): "base"}
	variants := map[string]ResourceDefinition{}
	v := base
	v.URI = "a://y"
	variants["uri"] = v
	v = base
	v.URI, v.URITemplate = "", "a://x"
	variants["template instead of uri"] = v
	v = base
	v.Name = "m"
	variants["name"] = v
	v = base
	v.Title = ""
	variants["title"] = v
	v = base
	v.Description = "e"
	variants["description"] = v
	v = base
	v.MIMEType = "text/html"
	variants["mime"] = v
	v = base
	v.Meta = nil
	variants["meta absent"] = v
	v = base
	v.Meta = json.RawMessage(`{}`)
	variants["meta empty"] = v
	v = base
	v.Name, v.Title = "nt", "" // same concatenation as Name+Title of base
	variants["field boundary"] = v
	v = base
	v.Title, v.Description = "td", ""
	variants["field boundary 2"] = v
	for name, d := range variants {
		got := rev(d)
		if prev, dup := seen[got]; dup {
			t.Errorf("%s has the revision of %s", name, prev)
		}
		seen[got] = name
	}
	// Count boundaries: one concrete and one template vs two templates.
	a := rev(ResourceDefinition{URI: "a://1", Name: "x"}, ResourceDefinition{URITemplate: "a://t/{y}", Name: "y"})
	b := rev(ResourceDefinition{URITemplate: "a://1", Name: "x"}, ResourceDefinition{URITemplate: "a://t/{y}", Name: "y"})
	if a == b {
		t.Error("moving a definition between sections kept the revision")
	}
	if empty, again := rev(), rev(); empty == rev(base) || empty != again {
		t.Error("empty registry revision")
	}
	// Deterministic across values and binding order.
	x := ResourceDefinition{URI: "z://1", Name: "z"}
	if rev(base, x) != rev(x, base) {
		t.Error("binding order changed the revision")
	}
}

func TestCursorOptions(t *testing.T) {
	var calls listCalls
	bs := []ResourceBinding{calls.binding(ResourceDefinition{URI: "a://1", Name: "a"})}
	pol := calls.policy(listAllowAll)
	for _, tc := range []struct {
		name  string
		opt   Option
		field string
	}{
		{"nil key", WithCursorKey(nil), "WithCursorKey"},
		{"short key", WithCursorKey(make([]byte, 31)), "WithCursorKey"},
	} {
		_, err := NewResources(bs, pol, tc.opt)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Path.Field != tc.field || ce.Definition != -1 {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// The first error wins over later options.
	_, err := NewResources(bs, pol, WithCursorKey(make([]byte, 31)), WithCursorKey(nil))
	if ce := (*ConfigError)(nil); !errors.As(err, &ce) || !strings.HasSuffix(ce.Reason, "got 31") {
		t.Errorf("two bad options: %v", err)
	}
	// The key is copied: changing the caller's slice changes nothing.
	key := append([]byte(nil), cursorTestKey...)
	opt := WithCursorKey(key)
	a, err := NewResources(bs, pol, opt)
	if err != nil {
		t.Fatal(err)
	}
	key[0] ^= 1
	b, err := NewResources(bs, pol, WithCursorKey(cursorTestKey))
	if err != nil {
		t.Fatal(err)
	}
	scope := sha256.Sum256(listScope)
	if _, err := b.list.decodeCursor(a.list.encodeCursor(listMethodResources, 0, &scope), listMethodResources, &scope, 1); !errors.Is(err, errCursorPosition) {
		t.Errorf("key was not copied: %v", err)
	}
}

// cursorFuzzResources is a fixed registry, key and clock for the fuzz target,
// so that the seed corpus holds cursors it accepts.
func cursorFuzzResources(t testing.TB) *Resources {
	var calls listCalls
	clock := func() time.Time { return time.Unix(1_800_000_000, 0) }
	return listNew(t, &calls, cursorDefs(4), listAllowAll, WithCursorKey(cursorTestKey), withClock(clock))
}

func FuzzDecodeCursor(f *testing.F) {
	r := cursorFuzzResources(f)
	scope := sha256.Sum256(listScope)
	f.Add(r.list.encodeCursor(listMethodResources, 1, &scope))
	f.Add(r.list.encodeCursor(listMethodTemplates, 3, &scope))
	f.Add("")
	n := len(r.list.resources)
	f.Fuzz(func(t *testing.T, s string) {
		for _, m := range []listMethod{listMethodResources, listMethodTemplates} {
			pos, err := r.list.decodeCursor(s, m, &scope, n)
			if err != nil {
				if len(s) > wire.MaxCursorBytes && !errors.Is(err, errCursorTooLong) {
					t.Fatalf("over-long cursor: %v", err)
				}
				continue
			}
			if pos <= 0 || pos >= n {
				t.Fatalf("accepted position %d of %d", pos, n)
			}
			// Only what we issued is accepted: the canonical encoding of
			// this method, position and scope at the fixed clock.
			if want := r.list.encodeCursor(m, pos, &scope); s != want {
				t.Fatalf("accepted %q, issued form %q", s, want)
			}
		}
		if s == "" {
			return
		}
		p, err := r.List(context.Background(), ListRequest{ScopeKey: listScope, Cursor: s, PageSize: 1})
		if err != nil && (KindOf(err) != FailureInvalidCursor || p.Descriptions != nil) {
			t.Fatalf("List: %+v, %v", p, err)
		}
	})
}

// TestCursorGolden pins the cursor format and the revision encoding: a
// cursor issued by an earlier build for the same bindings, key and clock
// (kept in the fuzz seed corpus) is still issued identically and accepted,
// so replicas running different builds keep accepting each other's cursors.
// A deliberate format change bumps cursorVersion and regenerates the seeds.
func TestCursorGolden(t *testing.T) {
	r := cursorFuzzResources(t)
	scope := sha256.Sum256(listScope)
	for _, tc := range []struct {
		file string
		m    listMethod
		pos  int
	}{{"valid_resources", listMethodResources, 1}, {"valid_templates", listMethodTemplates, 3}} {
		b, err := os.ReadFile(filepath.Join("testdata", "fuzz", "FuzzDecodeCursor", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		line := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[1])
		golden, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(line, "string("), ")"))
		if err != nil {
			t.Fatal(err)
		}
		if got := r.list.encodeCursor(tc.m, tc.pos, &scope); got != golden {
			t.Errorf("%s: issued %s, golden %s", tc.file, got, golden)
		}
		if pos, err := r.list.decodeCursor(golden, tc.m, &scope, len(r.list.resources)); err != nil || pos != tc.pos {
			t.Errorf("%s: decoded %d, %v", tc.file, pos, err)
		}
	}
}
