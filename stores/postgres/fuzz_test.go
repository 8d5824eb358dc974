package postgres

import (
	"encoding/json"
	"errors"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/storetest"
)

// FuzzReaderRefusesMalformedTargets: whatever representation and
// authorization data a target carries, neither reader panics or returns a
// payload without the database, and a target the store did not plan never
// reaches the database.
func FuzzReaderRefusesMalformedTargets(f *testing.F) {
	f.Add(ReprRow, `{"k":"row","s":"postgres","b":"asset-body","key":"p/a","v":"1"}`)
	f.Add(ReprRow, `{"k":"row","s":"postgres","b":"projects","key":"projects","v":""}`)
	f.Add("s3-object", `{"k":"object","s":"postgres","b":"asset","key":"p/a","v":"1","os":"s3","o":{"r":"s3-object","d":{"bucket":"b","key":"k"}}}`)
	f.Add(ReprRow, `{"k":"bundle","s":"postgres","b":"project"}`)
	f.Add(ReprRow, `{"k":"row","s":"notes","b":"note","key":"x","v":"1"}`)
	f.Add(ReprRow, `null`)
	f.Add(ReprRow, `{"k":"row","s":"postgres","b":"asset-body","key":"' OR 1=1 --","v":"\u0000"}`)
	f.Fuzz(func(t *testing.T, repr, authz string) {
		db := &countingDB{}
		_, b, _ := notesSource(t, db, SourceOptions{})
		_, q, _ := notesSource(t, db, SourceOptions{Name: "notes", Role: "notes_reader"})
		target, err := core.NewResourceTarget("asset://project/p/asset/a/body", repr, json.RawMessage(authz))
		if err != nil {
			return
		}
		ctx := core.WithCaller(t.Context(), core.Caller{Principal: "alice"})
		for _, r := range []core.Reader{b.Reader, q.Reader} {
			before := db.sent.Load()
			p, err := storetest.ReadOne(ctx, r, whole(target))
			if err == nil || !p.IsZero() {
				t.Fatalf("a read without a database returned a payload (err %v)", err)
			}
			if errors.Is(err, ErrBadTarget) && db.sent.Load() != before {
				t.Fatalf("a target the store did not plan reached the database")
			}
		}
	})
}
