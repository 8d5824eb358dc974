package core

import (
	"strings"
	"testing"
)

// A target's version is kept through WithObject and bounded like the
// object fields.
func TestTargetVersion(t *testing.T) {
	tg, err := NewResourceTarget("doc://a", "row", nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := tg.WithVersion("42")
	if err != nil || v.Version() != "42" || tg.Version() != "" {
		t.Fatalf("WithVersion: %q, %v (original %q)", v.Version(), err, tg.Version())
	}
	o, err := v.WithObject(ObjectRef{Source: "s", Key: "k", Size: -1})
	if err != nil || o.Version() != "42" {
		t.Fatalf("WithObject dropped the version: %q, %v", o.Version(), err)
	}
	if _, err := tg.WithVersion(strings.Repeat("x", maxObjectFieldBytes+1)); err == nil {
		t.Fatal("an over-long version was accepted")
	}
	if _, err := tg.WithVersion("\xff"); err == nil {
		t.Fatal("a version that is not UTF-8 was accepted")
	}
	if _, err := (ResourceTarget{}).WithVersion("1"); err == nil {
		t.Fatal("a zero target took a version")
	}
}
