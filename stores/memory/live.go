package memory

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/internal/wire"
)

// changeKeyPrefix starts the change key of every stored item: the prefix
// and the item's key.
const changeKeyPrefix = "memory:item:"

// changeKey returns the change key under which the store reports changes
// of the item under key (its content, its deletion, and grants on it).
func changeKey(key string) string { return changeKeyPrefix + key }

// watchers are the listeners of Watch.
type watchers struct {
	mu   sync.Mutex
	next int
	fns  map[int]func(core.Change)
}

func (w *watchers) add(fn func(core.Change)) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fns == nil {
		w.fns = map[int]func(core.Change){}
	}
	w.next++
	w.fns[w.next] = fn
	return w.next
}

func (w *watchers) drop(id int) {
	w.mu.Lock()
	delete(w.fns, id)
	w.mu.Unlock()
}

func (w *watchers) changed(key string) {
	w.mu.Lock()
	fns := make([]func(core.Change), 0, len(w.fns))
	for _, fn := range w.fns {
		fns = append(fns, fn)
	}
	w.mu.Unlock()
	for _, fn := range fns {
		fn(core.Change{Keys: []string{changeKey(key)}})
	}
}

// Watch makes the store a core.ChangeSource: it calls changed for every
// Put, Delete, Grant and Revoke that changed something, with the item's
// change key, directly from the call that made the change, until ctx ends.
// changed must only queue work: it runs while the store is locked.
func (s *Store) Watch(ctx context.Context, changed func(core.Change)) error {
	id := s.watchers.add(changed)
	defer s.watchers.drop(id)
	<-ctx.Done()
	return ctx.Err()
}

// Watching returns how many Watch calls are listening now. A change made
// before a watcher is listening reaches only the others: a host (or a
// test) that must not miss the first change after starting a hub waits
// until Watching counts it.
func (s *Store) Watching() int {
	s.watchers.mu.Lock()
	defer s.watchers.mu.Unlock()
	return len(s.watchers.fns)
}

// ChangeKeys returns the change key of the item a target of this store pins,
// and nil for any other target (such as a bundle's requested target, whose
// items carry the keys).
func (s *Store) ChangeKeys(t core.ResourceTarget) []string {
	var p pin
	if json.Unmarshal(t.AuthorizationData(), &p) != nil || p.Store != storeTag {
		return nil
	}
	return []string{changeKey(p.Key)}
}

var _ core.ChangeSource = (*Store)(nil)

// KeyBinding returns a binding of the template def whose variable names the
// rest of a key after keyPrefix (mem://notes/{id} with keyPrefix "note/"
// reads the item "note/ID"), like Binding with a one-item plan at the
// request URI. Its Complete offers completion for that variable: the keys
// under keyPrefix that start with the typed prefix and on which the caller
// holds a grant, in key order, at most 100 of them (what MCP allows in one
// completion result), with their total. Keys whose rest holds a '/' are
// never offered: no capture can name them.
func (s *Store) KeyBinding(def core.ResourceDefinition, variable, keyPrefix string) core.ResourceBinding {
	refs := func(m core.ResourceMatch) ([]Ref, error) {
		v, ok := m.Var(variable)
		if !ok {
			return nil, core.NewFailure(core.FailureUnavailable, errNotVisible)
		}
		return []Ref{{URI: m.URI(), Key: keyPrefix + v}}, nil
	}
	b := s.Binding(def, refs)
	b.Complete = keyCompleter{s: s, variable: variable, keyPrefix: keyPrefix}.Complete
	return b
}

// keyCompleter is a KeyBinding's completion.
type keyCompleter struct {
	s         *Store
	variable  string
	keyPrefix string
}

// Complete offers the keys the caller may discover (see KeyBinding).
func (k keyCompleter) Complete(ctx context.Context, req core.CompletionRequest) (core.Completion, error) {
	if req.Variable != k.variable {
		return core.Completion{}, nil
	}
	principal, err := k.s.principal(ctx)
	if err != nil {
		return core.Completion{}, core.NewFailure(core.FailureUnavailable, err)
	}
	want := k.keyPrefix + req.Prefix
	var all []string
	k.s.mu.RLock()
	for key, e := range k.s.items {
		if _, granted := e.grants[principal]; !granted || !strings.HasPrefix(key, want) {
			continue
		}
		if rest := key[len(k.keyPrefix):]; rest != "" && !strings.Contains(rest, "/") {
			all = append(all, rest)
		}
	}
	k.s.mu.RUnlock()
	slices.Sort(all)
	limit := min(max(req.Limit, 0), wire.MaxCompletionValues)
	c := core.Completion{Total: len(all), HasMore: len(all) > limit}
	c.Values = all[:min(len(all), limit)]
	return c, nil
}
