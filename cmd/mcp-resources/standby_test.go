package main

import (
	"strings"
	"testing"
	"time"
)

// TestStandbyFlagsGoToTheReferenceFilesSourceAndNotBesideConfig: serve's
// --postgres-standby values become the reference file's standbys (each a
// secret, with the lag bound beside them), a bad URL is refused in the
// flag's terms without echoing it, and the flags are refused beside
// --config, whose file lists its standbys itself.
func TestStandbyFlagsGoToTheReferenceFilesSourceAndNotBesideConfig(t *testing.T) {
	f := storageFlags{Postgres: "postgres://app@127.0.0.1:5432/db"}
	f.standby = standbyFlags{URLs: []string{"postgres://app@10.0.0.2:5432/db", "postgres://app@10.0.0.3:5432/db"}, MaxLag: 3 * time.Second}
	file, err := f.referenceFile("")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, src := range file.Sources {
		if p := src.Postgres; p != nil {
			n = len(p.Standbys)
			if time.Duration(p.StandbyMaxLag) != 3*time.Second || p.Standbys[0].String() != "[secret]" {
				t.Fatalf("standbys %v, max lag %v", p.Standbys, p.StandbyMaxLag)
			}
		}
	}
	if n != 2 {
		t.Fatalf("%d standbys on the reference file's source; want 2", n)
	}
	f.standby.URLs = []string{"postgres://app:pw@h:notaport/db"}
	if _, err := f.referenceFile(""); err == nil || !strings.Contains(err.Error(), "--postgres-standby 1 is not a valid PostgreSQL URL") || strings.Contains(err.Error(), "pw") {
		t.Fatalf("a bad standby URL: %v", err)
	}
	if err := (standbyFlags{URLs: []string{"postgres://h/db"}}).withConfig(); err == nil || !strings.Contains(err.Error(), "standbys") {
		t.Fatalf("the flags beside --config: %v", err)
	}
	if err := (standbyFlags{}).withConfig(); err != nil {
		t.Fatal(err)
	}
}
