package postgres

import (
	"strings"
	"testing"
)

func TestNullParamsReplacesEachParameterByATypedNull(t *testing.T) {
	cast := func(n string) string {
		if n == "keys" {
			return "text[]"
		}
		return "text"
	}
	n, err := rewriteNamed(`SELECT k FROM unnest($keys) k WHERE $principal = '$principal' AND $keys IS NOT NULL -- $keys`, cast)
	if err != nil {
		t.Fatal(err)
	}
	got, err := nullParams(n)
	if err != nil {
		t.Fatal(err)
	}
	want := `SELECT k FROM unnest((NULL::text[])) k WHERE (NULL::text) = '$principal' AND (NULL::text[]) IS NOT NULL -- $keys`
	if got != want {
		t.Errorf("nullParams:\n got %s\nwant %s", got, want)
	}
}

func TestCheckSourceRefusesAnExemptionWithoutANameOrReason(t *testing.T) {
	for name, reason := range map[string]string{"tenants": "a lookup", ".tenants": "x", "public.": "x", "public.tenants": " \t"} {
		err := CheckSource(SourceOptions{Name: "db", Role: "r", Exempt: map[string]string{name: reason}})
		if err == nil || !strings.Contains(err.Error(), "Exempt["+name+"]") {
			t.Errorf("exempt %q: %q: %v, want a refusal naming it", name, reason, err)
		}
	}
	if err := CheckSource(SourceOptions{Name: "db", Role: "r", Exempt: map[string]string{"public.tenants": "tenant names"}}); err != nil {
		t.Errorf("a qualified name with a reason: %v", err)
	}
}

// FuzzNullParams: for any statement rewriteNamed accepts, nullParams
// leaves no positional parameter of its own behind and never fails.
func FuzzNullParams(f *testing.F) {
	for _, s := range []string{`SELECT $a, $b::int, '$c', "$d", $$ $e $$, $a`, `SELECT 1 /* $x */ WHERE $y = E'\'$z'`, `SELECT $k`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		n, err := rewriteNamed(sql, nil)
		if err != nil {
			return
		}
		got, err := nullParams(n)
		if err != nil {
			t.Fatalf("nullParams(%q): %v", n.SQL, err)
		}
		if c := strings.Count(got, "(NULL::text)"); c < len(n.Uses) {
			t.Fatalf("nullParams(%q) = %q: %d NULLs for %d uses", n.SQL, got, c, len(n.Uses))
		}
		if len(n.Uses) == 0 && got != n.SQL {
			t.Fatalf("nullParams changed a statement without parameters: %q -> %q", n.SQL, got)
		}
	})
}
