package integration

import (
	"context"
	"slices"
	"strings"
	"testing"

	"go.phpboyscout.uk/mcp/resources/migrations"
)

// TestLiveTriggersNotifyChangedIdsOnCommitOnly proves what migration 2
// sends: ids (never rows or bodies), after the commit and not before, once
// per distinct payload per transaction, and both ids when a row moves.
func TestLiveTriggersNotifyChangedIdsOnCommitOnly(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	ctx := context.Background()
	ch := listenOn(t, d.url, migrations.ChangeChannel)

	d.project(t, "p")
	d.project(t, "q")
	big := strings.Repeat("BODY-CANARY ", 100000) // 1.2 MB
	d.textAsset(t, "p", "a1", big)
	d.grant(t, "alice", "p", "")
	d.grant(t, "bob", "p", "a1")
	got := ch.since(t)
	want := []string{`{"p": "p", "t": "p"}`, `{"p": "q", "t": "p"}`, `{"a": "a1", "p": "p", "t": "a"}`, `{"p": "p", "t": "g"}`, `{"a": "a1", "p": "p", "t": "g"}`}
	if !slices.Equal(got, want) {
		t.Fatalf("payloads %q, want %q", got, want)
	}

	// Nothing before the commit; one payload for many identical changes.
	tx, err := d.admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := tx.Exec(ctx, `UPDATE mcpres.assets SET body = convert_to($1, 'UTF8') WHERE id = 'a1'`, big+"x"); err != nil {
			t.Fatal(err)
		}
	}
	if got := ch.since(t); len(got) != 0 {
		t.Fatalf("notified before the commit: %q", got)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ch.since(t); !slices.Equal(got, []string{`{"a": "a1", "p": "p", "t": "a"}`}) {
		t.Fatalf("after five updates in one transaction: %q", got)
	}

	// A moved row names where it was and where it is; a rollback sends nothing.
	d.exec(t, `DELETE FROM mcpres.grants WHERE asset_id = 'a1'`)
	if got := ch.since(t); !slices.Equal(got, []string{`{"a": "a1", "p": "p", "t": "g"}`}) {
		t.Fatalf("after deleting bob's grant: %q", got)
	}
	d.exec(t, `UPDATE mcpres.assets SET id = 'a2' WHERE id = 'a1'`)
	got = ch.since(t)
	for _, p := range got {
		if strings.Contains(p, "CANARY") || len(p) > 200 {
			t.Fatalf("a payload carries row data: %.80s", p)
		}
	}
	if !slices.Contains(got, `{"a": "a1", "p": "p", "t": "a"}`) || !slices.Contains(got, `{"a": "a2", "p": "p", "t": "a"}`) {
		t.Fatalf("after moving a1 to a2: %q", got)
	}
	if tx, err = d.admin.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM mcpres.grants`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ch.since(t); len(got) != 0 {
		t.Fatalf("a rolled-back change was notified: %q", got)
	}
}

// TestKeyTriggersNotifyTheKeysOfChangedItems proves what migration 3 sends
// on its key channel, per committed change: PROJECT/* and projects for a
// project row, PROJECT/ASSET for an asset row (both keys when it moves),
// and for a grant the key it covers (PROJECT/* for a project-wide one)
// with projects; never row data.
func TestKeyTriggersNotifyTheKeysOfChangedItems(t *testing.T) {
	t.Parallel()
	d := newPGDB(t)
	ch := listenOn(t, d.url, migrations.KeyChannel)
	for _, step := range []struct {
		what string
		do   func()
		want []string
	}{
		{"a project", func() { d.project(t, "p") }, []string{"p/*", "projects"}},
		{"an asset", func() { d.textAsset(t, "p", "a1", strings.Repeat("BODY-CANARY ", 1000)) }, []string{"p/a1"}},
		{"a project-wide grant", func() { d.grant(t, "alice", "p", "") }, []string{"p/*", "projects"}},
		{"a grant on one asset", func() { d.grant(t, "bob", "p", "a1") }, []string{"p/a1", "projects"}},
		{"a revoked grant on one asset", func() { d.exec(t, `DELETE FROM mcpres.grants WHERE asset_id = 'a1'`) }, []string{"p/a1", "projects"}},
		{"an asset moved", func() { d.exec(t, `UPDATE mcpres.assets SET id = 'a2' WHERE id = 'a1'`) }, []string{"p/a1", "p/a2"}},
		{"a revoked grant", func() { d.exec(t, `DELETE FROM mcpres.grants WHERE principal = 'alice'`) }, []string{"p/*", "projects"}},
	} {
		step.do()
		got := ch.since(t)
		slices.Sort(got) // one change's keys come in any order
		if !slices.Equal(got, step.want) {
			t.Fatalf("%s: payloads %q, want %q", step.what, got, step.want)
		}
	}
}
