package postgres

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRewriteNamedBindsEachNameOnceInOrderOfFirstUse(t *testing.T) {
	got, err := rewriteNamed("SELECT * FROM d WHERE tenant_id = $tenant AND id = $id::uuid OR owner = $tenant", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "SELECT * FROM d WHERE tenant_id = ($1::text) AND id = ($2::text)::uuid OR owner = ($1::text)"
	if got.SQL != want || !slices.Equal(got.Names, []string{"tenant", "id"}) {
		t.Fatalf("got %q %v\nwant %q [tenant id]", got.SQL, got.Names, want)
	}
}

func TestRewriteNamedLeavesConstantsCommentsAndIdentifiersAlone(t *testing.T) {
	for _, sql := range []string{
		`SELECT '$tenant'`,
		`SELECT 'it''s $tenant'`,
		`SELECT E'\'$tenant'`,
		`SELECT "$tenant" FROM t`,
		`SELECT "a""$x" FROM t`,
		`SELECT 1 -- $tenant`,
		"SELECT 1 /* $tenant /* nested $id */ still $x */",
		`SELECT $$ $tenant $$`,
		`SELECT $q$ $tenant $x$ $q$`,
		`SELECT a$tenant FROM t`,
		`SELECT é$tenant FROM t`,
	} {
		got, err := rewriteNamed(sql, nil)
		if err != nil {
			t.Errorf("%s: %v", sql, err)
			continue
		}
		if got.SQL != sql || len(got.Names) != 0 {
			t.Errorf("%s: rewrote to %q with %v, want it unchanged", sql, got.SQL, got.Names)
		}
	}
}

func TestRewriteNamedRefusesWhatIsNotOneNamedStatement(t *testing.T) {
	for sql, want := range map[string]string{
		"":                        "empty",
		"  -- only a comment":     "empty",
		"SELECT 1;":               "semicolon",
		"SELECT 1; -- trailing":   "semicolon",
		"SELECT 1; DELETE FROM t": "more than one statement",
		"SELECT ';' ; SELECT 2":   "more than one statement",
		"SELECT $1":               "positional",
		"SELECT 'open":            "unterminated string",
		`SELECT "open`:            "unterminated quoted identifier",
		"SELECT /* open":          "unterminated block comment",
		"SELECT $q$ open":         "unterminated dollar-quoted",
		"SELECT $ FROM t":         "starts no parameter",
		"SELECT E'\\' ":           "unterminated string",
		"SELECT /* a /* b */ c":   "unterminated block comment",
	} {
		_, err := rewriteNamed(sql, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error about %q", sql, err, want)
		}
	}
}

func TestRewriteNamedCastsByName(t *testing.T) {
	got, err := rewriteNamed("SELECT k FROM unnest($keys) k WHERE $principal <> ''", func(n string) string {
		if n == "keys" {
			return "text[]"
		}
		return "text"
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.SQL != "SELECT k FROM unnest(($1::text[])) k WHERE ($2::text) <> ''" {
		t.Fatalf("got %q", got.SQL)
	}
}

// FuzzRewriteNamed checks the rewriter on any input: it never panics; what
// it accepts binds only valid, distinct names, each as a ($n::text) it
// numbered itself; and text inside a string constant, a quoted identifier,
// a comment or a dollar-quoted string is never taken for a parameter and
// comes out byte for byte; every use it reports is its $name at its
// offset, and a refusal's offset is inside the statement.
func FuzzRewriteNamed(f *testing.F) {
	for _, s := range []string{"SELECT $a", "x $b $a $b", "'$a'", `"$a"`, "-- $a\n$b", "/* $a */", "$$ $a $$", "$t$ $a $t$", "a$b", "E'\\'' $c", "$1", "SELECT é$x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := rewriteNamed(s, nil)
		if se, ok := errors.AsType[*SQLError](err); ok && (se.Offset < 0 || se.Offset > len(s)) {
			t.Fatalf("%q: refusal at offset %d outside the statement", s, se.Offset)
		}
		for _, u := range got.Uses {
			if u.Offset < 0 || u.Offset+1+len(u.Name) > len(s) || s[u.Offset:u.Offset+1+len(u.Name)] != "$"+u.Name {
				t.Fatalf("%q: use %+v is not at its offset", s, u)
			}
		}
		if err == nil {
			seen := map[string]bool{}
			for i, n := range got.Names {
				if !validParamName(n) || seen[n] {
					t.Fatalf("%q: name %d %q invalid or repeated", s, i, n)
				}
				seen[n] = true
				if !strings.Contains(got.SQL, "($"+itoa(i+1)+"::text)") {
					t.Fatalf("%q: $%d never bound in %q", s, i+1, got.SQL)
				}
			}
		}
		// Inside a constant, an identifier, a comment or a dollar quote,
		// s is data: no parameter, unchanged output.
		quote := func(q string) string { return strings.ReplaceAll(s, q, q+q) }
		cases := []string{
			"SELECT '" + quote("'") + "'",
			`SELECT "` + quote(`"`) + `"`,
		}
		if !strings.Contains(s, "\n") && !strings.Contains(s, "\r") {
			cases = append(cases, "SELECT 1 -- "+s+"\n")
		}
		if !strings.Contains(s, "*/") && !strings.Contains(s, "/*") && !strings.HasSuffix(s, "/") && !strings.HasSuffix(s, "*") {
			cases = append(cases, "SELECT 1 /* "+s+" */")
		}
		if !strings.Contains(s, "$zz$") && !strings.HasSuffix(s, "$zz") && !strings.HasSuffix(s, "$z") && !strings.HasSuffix(s, "$") {
			cases = append(cases, "SELECT $zz$"+s+"$zz$")
		}
		if !strings.Contains(s, "\\") && utf8.ValidString(s) {
			cases = append(cases, "SELECT E'"+quote("'")+"'")
		}
		for _, c := range cases {
			got, err := rewriteNamed(c, nil)
			if err != nil || got.SQL != c || len(got.Names) != 0 {
				t.Fatalf("%q: rewrote to %q %v (%v), want it unchanged", c, got.SQL, got.Names, err)
			}
		}
	})
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// TestNamedParamsReportsEveryUseAndWhereARefusalIs proves the offsets the
// rewriter gives: each use of a name at its '$', and a refused
// statement at the byte that makes it wrong.
func TestNamedParamsReportsEveryUseAndWhereARefusalIs(t *testing.T) {
	sql := "SELECT '$no', $a, $b -- $no\n, $a"
	n, err := rewriteNamed(sql, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := n.Uses
	want := []namedParam{{"a", strings.Index(sql, "$a")}, {"b", strings.Index(sql, "$b")}, {"a", strings.LastIndex(sql, "$a")}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("use %d: got %v, want %v", i, got[i], want[i])
		}
	}
	for sql, off := range map[string]int{"SELECT 'open": 7, "SELECT 1; SELECT 2": 8, "SELECT 1 ;": 9, "SELECT $1": 7, "SELECT /* x": 7} {
		_, err := rewriteNamed(sql, nil)
		se, ok := err.(*SQLError)
		if !ok || se.Offset != off {
			t.Errorf("%q: %v, want an *SQLError at %d", sql, err, off)
		}
	}
}
