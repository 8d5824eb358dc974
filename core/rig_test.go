package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

// The rig is a scripted host: one bundle definition whose plan names items,
// and a policy whose answers can change between the first and the final
// check. The final check begins with the second Discover call of a read.

const bundleURI = "test://bundle"

type rigItem struct {
	uri   string
	repr  string
	authz json.RawMessage
	read  func(ctx context.Context, t ResourceTarget) (ResourcePayload, error)
}

type rig struct {
	t     testing.TB
	items []rigItem

	hidden   [2]map[string]bool // by phase: 0 first check, 1 final check
	denied   [2]map[string]bool
	disclose [2]map[string]bool
	noFind   [2]bool // Discover denies

	discoverErr   func(phase int) error
	visibilityErr func(phase int, uri string) error
	readPermErr   func(phase int, uri string) error
	resolve       func(ctx context.Context, m ResourceMatch) (ResourceReadPlan, error)

	opts []Option

	// batch makes the policy decide whole passes through Decide from the
	// same maps (stage before reads is phase 0, recheck phase 1; the
	// recheck applies noFind[1] and discoverErr(1) as discovery).
	// passHook, when set, may replace a pass's answer.
	batch      bool
	passHook   func(pass PolicyPass, ds []TargetDecision) ([]TargetDecision, error)
	passes     []PolicyPass
	readLimits []int64 // the Limit of every item read, in order

	discovers atomic.Int32
	mu        sync.Mutex
	events    []string
}

func newRig(t testing.TB, uris ...string) *rig {
	g := &rig{t: t}
	for i := range 2 {
		g.hidden[i] = map[string]bool{}
		g.denied[i] = map[string]bool{}
		g.disclose[i] = map[string]bool{}
	}
	for _, u := range uris {
		g.items = append(g.items, rigItem{uri: u})
	}
	return g
}

func (g *rig) log(format string, args ...any) {
	g.mu.Lock()
	g.events = append(g.events, fmt.Sprintf(format, args...))
	g.mu.Unlock()
}

func (g *rig) eventLog() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.events...)
}

// phase is 0 until the final check's Discover call, then 1.
func (g *rig) phase() int {
	if g.discovers.Load() >= 2 {
		return 1
	}
	return 0
}

// item returns the rig item with uri, for setting its reader.
func (g *rig) item(uri string) *rigItem {
	for i := range g.items {
		if g.items[i].uri == uri {
			return &g.items[i]
		}
	}
	g.t.Fatalf("no rig item %s", uri)
	return nil
}

// hide hides uri in the given phases.
func (g *rig) hide(uri string, phases ...int) {
	for _, p := range phases {
		g.hidden[p][uri] = true
	}
}

func (g *rig) deny(uri string, phases ...int) {
	for _, p := range phases {
		g.denied[p][uri] = true
	}
}

func textOf(uri string) string { return "body of " + uri }

func (g *rig) policy() ResourcePolicy {
	p := g.perTargetPolicy()
	if g.batch {
		p.Decide = g.decide
	}
	return p
}

// decide is the rig's Decide: the per-target answers of the pass's phase.
func (g *rig) decide(ctx context.Context, pass PolicyPass) ([]TargetDecision, error) {
	p := 0
	if pass.Stage == PassRecheck {
		p = 1
	}
	g.log("decide %s %d", pass.Stage, len(pass.Targets))
	g.mu.Lock()
	g.passes = append(g.passes, PolicyPass{Stage: pass.Stage, Definition: pass.Definition, Targets: append([]ResourceTarget(nil), pass.Targets...)})
	g.mu.Unlock()
	var err error
	if p == 1 && g.discoverErr != nil {
		err = g.discoverErr(p)
	}
	if err == nil && p == 1 && g.noFind[p] {
		err = NewFailure(FailureUnavailable, errors.New("not discoverable"))
	}
	var ds []TargetDecision
	if err == nil {
		ds = make([]TargetDecision, len(pass.Targets))
		for i, t := range pass.Targets {
			u := t.URI()
			ds[i] = TargetDecision{Visibility: Visibility{Visible: !g.hidden[p][u], DiscloseIssueURI: g.disclose[p][u]}, Read: !g.denied[p][u]}
		}
	}
	if g.passHook != nil {
		return g.passHook(pass, ds)
	}
	return ds, err
}

// passLog returns a copy of the passes Decide was asked.
func (g *rig) passLog() []PolicyPass {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]PolicyPass(nil), g.passes...)
}

// perTargetPolicy answers Discover, Visibility and Read from the maps.
func (g *rig) perTargetPolicy() ResourcePolicy {
	return PerTarget(TargetPolicy{
		Discover: func(ctx context.Context, d ResourceDefinition) error {
			p := int(g.discovers.Add(1)) - 1
			p = min(p, 1)
			g.log("discover")
			if g.discoverErr != nil {
				if err := g.discoverErr(p); err != nil {
					return err
				}
			}
			if g.noFind[p] {
				return NewFailure(FailureUnavailable, errors.New("not discoverable"))
			}
			return nil
		},
		Visibility: func(ctx context.Context, t ResourceTarget) (Visibility, error) {
			p := g.phase()
			g.log("vis %s", t.URI())
			if g.visibilityErr != nil {
				if err := g.visibilityErr(p, t.URI()); err != nil {
					return Visibility{}, err
				}
			}
			return Visibility{Visible: !g.hidden[p][t.URI()], DiscloseIssueURI: g.disclose[p][t.URI()]}, nil
		},
		Read: func(ctx context.Context, t ResourceTarget) error {
			p := g.phase()
			g.log("perm %s", t.URI())
			if g.readPermErr != nil {
				if err := g.readPermErr(p, t.URI()); err != nil {
					return err
				}
			}
			if g.denied[p][t.URI()] {
				return NewFailure(FailureUnavailable, errors.New("read denied"))
			}
			return nil
		},
	})
}

func (g *rig) binding() ResourceBinding {
	return ResourceBinding{
		Definition: ResourceDefinition{URI: bundleURI, Name: "bundle", MIMEType: "text/plain"},
		Resolver: ResolverFunc(func(ctx context.Context, m ResourceMatch) (ResourceReadPlan, error) {
			g.log("resolve")
			if g.resolve != nil {
				return g.resolve(ctx, m)
			}
			req, err := NewResourceTarget(m.URI(), "bundle", nil)
			if err != nil {
				return ResourceReadPlan{}, err
			}
			ts := make([]ResourceTarget, len(g.items))
			for i, it := range g.items {
				repr := it.repr
				if repr == "" {
					repr = "item"
				}
				if ts[i], err = NewResourceTarget(it.uri, repr, it.authz); err != nil {
					return ResourceReadPlan{}, err
				}
			}
			return NewResourceReadPlan(req, ts...)
		}),
		Reader: ItemReader(func(ctx context.Context, item ReadItem) (ResourcePayload, error) {
			t := item.Target
			g.log("read %s", t.URI())
			g.mu.Lock()
			g.readLimits = append(g.readLimits, item.Limit)
			g.mu.Unlock()
			for _, it := range g.items {
				if it.uri == t.URI() && it.read != nil {
					return it.read(ctx, t)
				}
			}
			return TextPayload("text/plain", textOf(t.URI())), nil
		}),
	}
}

func (g *rig) resources() *Resources {
	g.t.Helper()
	r, err := NewResources([]ResourceBinding{g.binding()}, g.policy(), g.opts...)
	if err != nil {
		g.t.Fatalf("NewResources: %v", err)
	}
	return r
}

// read builds a fresh Resources value and reads the bundle once.
func (g *rig) read() (*ResourceResult, error) {
	return g.readCtx(context.Background())
}

func (g *rig) readCtx(ctx context.Context) (*ResourceResult, error) {
	g.t.Helper()
	r := g.resources()
	g.discovers.Store(0)
	g.mu.Lock()
	g.passes = nil
	g.mu.Unlock()
	return r.Read(ctx, bundleURI)
}

// itemURIs lists the application item URIs of a result (warning excluded).
func itemURIs(res *ResourceResult) []string {
	var out []string
	for _, it := range res.Items() {
		if !strings.HasPrefix(it.URI(), wire.WarningURIPrefix) {
			out = append(out, it.URI())
		}
	}
	return out
}

func issueCodes(res *ResourceResult) []IssueCode {
	var out []IssueCode
	for _, is := range res.Issues() {
		out = append(out, is.Code())
	}
	return out
}

func wantKind(t testing.TB, err error, kind FailureKind) *Failure {
	t.Helper()
	var f *Failure
	if !errors.As(err, &f) {
		t.Fatalf("error %v (%T) is not a *Failure; want kind %v", err, err, kind)
	}
	if f.Kind != kind {
		t.Fatalf("failure kind = %v (cause %v); want %v", f.Kind, f.Unwrap(), kind)
	}
	return f
}

func mustRead(t testing.TB, g *rig) *ResourceResult {
	t.Helper()
	res, err := g.read()
	if err != nil {
		var f *Failure
		if errors.As(err, &f) {
			t.Fatalf("read failed: %v (kind %v, cause %v)", err, f.Kind, f.Unwrap())
		}
		t.Fatalf("read failed: %v", err)
	}
	return res
}

// content is one content entry in the shape the adapter writes.
type content struct {
	URI      string          `json:"uri"`
	MIMEType string          `json:"mimeType"`
	Text     *string         `json:"text,omitempty"`
	Blob     *[]byte         `json:"blob,omitempty"`
	Meta     json.RawMessage `json:"_meta,omitempty"`
}

// encodeResult writes a result as the adapter will: the module's content
// shape with encoding/json, HTML escaping off.
func encodeResult(t testing.TB, res *ResourceResult) []byte {
	t.Helper()
	type result struct {
		Meta     json.RawMessage `json:"_meta"`
		Contents []content       `json:"contents"`
	}
	out := result{Meta: res.Meta(), Contents: []content{}}
	for _, it := range res.Items() {
		c := content{URI: it.URI(), MIMEType: it.MIMEType(), Meta: it.Meta()}
		if it.IsBlob() {
			b := it.Blob()
			c.Blob = &b
		} else {
			s := it.Text()
			c.Text = &s
		}
		out.Contents = append(out.Contents, c)
	}
	return []byte(jsonOf(t, out))
}

// jsonOf encodes v as the go-sdk does: encoding/json, HTML escaping off.
func jsonOf(t testing.TB, v any) string {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
