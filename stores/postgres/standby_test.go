package postgres

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.phpboyscout.uk/mcp/resources/core"
)

// TestStandbyOptionsAreCheckedAndReported: a negative lag bound or probe
// interval is refused by CheckSource and NewSource, a nil standby is
// refused naming its position, and a source's stats list its standbys,
// unchecked and with every fallback reason at zero, before any probe.
func TestStandbyOptionsAreCheckedAndReported(t *testing.T) {
	for _, opts := range []SourceOptions{
		{Role: "r", StandbyMaxLag: -time.Second},
		{Role: "r", StandbyProbeInterval: -time.Second},
	} {
		var ce *core.ConfigError
		if err := CheckSource(opts); !errors.As(err, &ce) || !strings.Contains(err.Error(), "must not be negative") {
			t.Errorf("CheckSource(%+v): %v", opts, err)
		}
		if _, err := NewSource(&countingDB{}, opts); err == nil {
			t.Errorf("NewSource(%+v) accepted it", opts)
		}
	}
	if _, err := NewSource(&countingDB{}, SourceOptions{Role: "r", Standbys: []DB{&countingDB{}, nil}}); err == nil || !strings.Contains(err.Error(), "Standbys[1]") {
		t.Errorf("a nil standby: %v", err)
	}
	src, err := NewSource(&countingDB{}, SourceOptions{Role: "r", Standbys: []DB{&countingDB{}, &countingDB{}}})
	if err != nil {
		t.Fatal(err)
	}
	st := src.StandbyStats()
	if len(st.Standbys) != 2 || st.Standbys[1].Index != 1 || st.Standbys[0].State != "unchecked" || len(st.Fallbacks) != len(FallbackReasons) {
		t.Fatalf("stats %+v", st)
	}
	if plain, _ := NewSource(&countingDB{}, SourceOptions{Role: "r"}); plain.StandbyStats().Standbys != nil {
		t.Fatal("a source without standbys reports some")
	}
}
