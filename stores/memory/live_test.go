package memory

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/core"
)

func TestWatchReportsPutDeleteGrantAndRevokeByChangeKey(t *testing.T) {
	s := New(nil)
	var mu sync.Mutex
	var got []string
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- s.Watch(ctx, func(c core.Change) {
			mu.Lock()
			got = append(got, c.Keys...)
			mu.Unlock()
		})
	}()
	for deadline := time.Now().Add(5 * time.Second); s.Watching() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Watch is not listening after 5 s")
		}
	}
	s.Put("a", Item{MIMEType: "text/plain", Text: true})
	s.Grant("a", "alice", Access{Read: true})
	s.Grant("missing", "alice", Access{Read: true}) // no item: no change
	s.Revoke("a", "alice")
	s.Revoke("a", "alice") // no grant left: no change
	s.Delete("a")
	s.Delete("a") // gone already: no change
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Watch returned %v, want context.Canceled", err)
	}
	s.Put("b", Item{MIMEType: "text/plain", Text: true}) // after Watch ended
	want := []string{changeKey("a"), changeKey("a"), changeKey("a"), changeKey("a")}
	if !slices.Equal(got, want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
}

func TestChangeKeysNameThePinnedItemOnly(t *testing.T) {
	s := New(nil)
	s.Put("a", Item{MIMEType: "text/plain", Text: true})
	s.Grant("a", "alice", Access{Read: true})
	tg, err := s.Target(core.WithCaller(context.Background(), core.Caller{Principal: "alice"}), "mem://a", "a")
	if err != nil {
		t.Fatal(err)
	}
	if k := s.ChangeKeys(tg); !slices.Equal(k, []string{changeKey("a")}) {
		t.Fatalf("keys %v", k)
	}
	other, _ := core.NewResourceTarget("mem://bundle", "bundle", nil)
	if k := s.ChangeKeys(other); k != nil {
		t.Fatalf("keys of a foreign target: %v", k)
	}
}

func TestKeyBindingCompletesOnlyGrantedKeysUnderItsPrefix(t *testing.T) {
	s := New(nil)
	for _, k := range []string{"note/a1", "note/a2", "note/b1", "note/a/x", "other/a9", "note/a%_"} {
		s.Put(k, Item{MIMEType: "text/plain", Text: true})
		s.Grant(k, "alice", Access{Read: true})
	}
	s.Put("note/a3", Item{MIMEType: "text/plain", Text: true}) // no grant for alice
	s.Grant("note/a3", "bob", Access{Read: true})
	b := s.KeyBinding(core.ResourceDefinition{URITemplate: "mem://notes/{id}", Name: "note"}, "id", "note/")
	res, err := core.NewResources([]core.ResourceBinding{b}, s.Policy())
	if err != nil {
		t.Fatal(err)
	}
	complete := func(p, prefix string) []string {
		c, err := res.Complete(core.WithCaller(context.Background(), core.Caller{Principal: p}), "mem://notes/{id}", "id", prefix, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.Values
	}
	if got := complete("alice", "a"); strings.Join(got, ",") != "a%_,a1,a2" {
		t.Fatalf("alice: %v", got)
	}
	if got := complete("bob", "a"); strings.Join(got, ",") != "a3" {
		t.Fatalf("bob: %v", got)
	}
	if got := complete("alice", "a%"); strings.Join(got, ",") != "a%_" {
		t.Fatalf("a literal %% prefix: %v", got)
	}
	if got := complete("carol", ""); len(got) != 0 {
		t.Fatalf("carol without grants: %v", got)
	}
}

func TestKeyBindingCompletionIsBoundedWithTotal(t *testing.T) {
	s := New(nil)
	for i := range 150 {
		k := "k" + strings.Repeat("0", 3-len(itoa(i))) + itoa(i)
		s.Put(k, Item{MIMEType: "text/plain", Text: true})
		s.Grant(k, "alice", Access{Read: true})
	}
	b := s.KeyBinding(core.ResourceDefinition{URITemplate: "mem://k/{id}", Name: "k"}, "id", "")
	res, _ := core.NewResources([]core.ResourceBinding{b}, s.Policy())
	c, err := res.Complete(core.WithCaller(context.Background(), core.Caller{Principal: "alice"}), "mem://k/{id}", "id", "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Values) != 100 || c.Total != 150 || !c.HasMore {
		t.Fatalf("%d values, total %d, hasMore %v; want 100, 150, true", len(c.Values), c.Total, c.HasMore)
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
