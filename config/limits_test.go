package config

import (
	"reflect"
	"testing"

	"go.phpboyscout.uk/mcp/resources/core"
)

// TestResourceLimitsSetsEveryLimitOfTheFile proves that each key of limits
// reaches the core.ResourceLimits field of its Go name, and that the file
// has a key for every field of core.ResourceLimits.
func TestResourceLimitsSetsEveryLimitOfTheFile(t *testing.T) {
	var l Limits
	v := reflect.ValueOf(&l).Elem()
	keyed := 0
	for i := range v.NumField() {
		if v.Type().Field(i).Type == typeSpans {
			continue
		}
		v.Field(i).SetInt(int64(i + 1))
		keyed++
	}
	got := reflect.ValueOf((&File{Limits: &l}).ResourceLimits())
	if n := got.NumField(); n != keyed {
		t.Errorf("core.ResourceLimits has %d fields, limits %d keys", n, keyed)
	}
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if name == "Spans" {
			continue
		}
		if f := got.FieldByName(name); !f.IsValid() || f.Int() != int64(i+1) {
			t.Errorf("limits.%s = %d gives core.ResourceLimits.%s = %v", limitKey(name), i+1, name, f)
		}
	}
	if (&File{}).ResourceLimits() != (core.ResourceLimits{}) {
		t.Error("a file without limits sets some")
	}
}
