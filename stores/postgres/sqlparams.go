package postgres

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// namedSQL is a host statement whose $name parameters were rewritten to
// positional ones: SQL holds ($1::text), ($2::text), ... in place of the
// names, and Names[i] is the name bound as $i+1.
type namedSQL struct {
	SQL   string
	Names []string
	Uses  []namedParam // every use of a name, in order, at its offset in the host statement
}

// namedParam is one use of a $name parameter in a host statement: Name
// without the '$', at byte offset Offset of the statement.
type namedParam struct {
	Name   string
	Offset int
}

// SQLError is a host statement that a [Source] refuses before preparing
// it (or [CheckBinding] before there is a database): Reason says why, at
// byte offset Offset of the statement.
type SQLError struct {
	Offset int
	Reason string
}

// Error returns the reason.
func (e *SQLError) Error() string { return e.Reason }

func sqlErr(off int, reason string) error { return &SQLError{Offset: off, Reason: reason} }

// paramCast returns the cast the rewriter gives a named parameter: every
// parameter is bound as text except the ones a statement kind declares
// otherwise (a policy's $keys is text[], $limit is bigint).
type paramCast func(name string) string

func textCast(string) string { return "text" }

// rewriteNamed rewrites the $name parameters of one SQL statement into
// positional parameters, each wrapped as ($n::TYPE) so that PostgreSQL never
// has to guess a parameter's type and a comparison with a column of another
// type fails when the statement is prepared (cast the parameter: $id::uuid).
// Names are numbered in order of first appearance; a name used twice binds
// once. It recognises string constants ('...', E'...'), quoted identifiers,
// dollar-quoted strings, line and nested block comments, and identifiers
// holding '$', none of which hold parameters. It refuses positional
// parameters ($1), an empty statement, any semicolon outside constants and
// comments, and any unterminated constant or comment. No SQL is ever built from a bound value:
// the names only pick the position.
func rewriteNamed(sql string, cast paramCast) (namedSQL, error) {
	if cast == nil {
		cast = textCast
	}
	var (
		out   strings.Builder
		names []string
		uses  []namedParam
		pos   = map[string]int{}
		last  = -1 // index of the last byte that is not space or comment
		semi  = -1 // index of the first semicolon outside constants and comments
	)
	out.Grow(len(sql) + 16)
	n := len(sql)
	for i := 0; i < n; {
		c := sql[i]
		switch {
		case c == '-' && i+1 < n && sql[i+1] == '-':
			end := strings.IndexByte(sql[i:], '\n')
			if end < 0 {
				end = n - i
			}
			out.WriteString(sql[i : i+end])
			i += end
			continue
		case c == '/' && i+1 < n && sql[i+1] == '*':
			end, err := blockComment(sql, i)
			if err != nil {
				return namedSQL{}, sqlErr(i, err.Error())
			}
			out.WriteString(sql[i:end])
			i = end
			continue
		case c == '\'' || c == '"': // a string constant (E'...' takes escapes) or a quoted identifier
			escapes := c == '\'' && i > 0 && (sql[i-1] == 'E' || sql[i-1] == 'e') && (i < 2 || !identByte(sql[i-2]))
			end, err := quoted(sql, i, c, escapes)
			if err != nil {
				return namedSQL{}, sqlErr(i, err.Error())
			}
			out.WriteString(sql[i:end])
			last, i = end-1, end
			continue
		case c == '$' && (i == 0 || !identByte(sql[i-1])):
			j := i + 1
			if j < n && sql[j] >= '0' && sql[j] <= '9' {
				return namedSQL{}, sqlErr(i, "uses a positional parameter ($1); name the parameters ($tenant)")
			}
			for j < n && identByte(sql[j]) && sql[j] != '$' {
				j++
			}
			if j < n && sql[j] == '$' { // $$ or $tag$: a dollar-quoted string
				tag := sql[i : j+1]
				end := strings.Index(sql[j+1:], tag)
				if end < 0 {
					return namedSQL{}, sqlErr(i, "has an unterminated dollar-quoted string")
				}
				stop := j + 1 + end + len(tag)
				out.WriteString(sql[i:stop])
				last, i = stop-1, stop
				continue
			}
			name := sql[i+1 : j]
			if name == "" || !validParamName(name) {
				return namedSQL{}, sqlErr(i, "has a '$' that starts no parameter name")
			}
			uses = append(uses, namedParam{Name: name, Offset: i})
			p, ok := pos[name]
			if !ok {
				names = append(names, name)
				p = len(names)
				pos[name] = p
			}
			out.WriteString("($")
			out.WriteString(strconv.Itoa(p))
			out.WriteString("::")
			out.WriteString(cast(name))
			out.WriteByte(')')
			last, i = i, j
			continue
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f' {
			last = i
		}
		if c == ';' && semi < 0 {
			semi = i
		}
		out.WriteByte(c)
		i++
	}
	switch {
	case last < 0:
		return namedSQL{}, sqlErr(0, "is empty")
	case semi == last:
		return namedSQL{}, sqlErr(last, "ends with a semicolon; give one statement without it")
	case semi >= 0:
		return namedSQL{}, sqlErr(semi, "holds more than one statement; give one statement without a semicolon")
	}
	return namedSQL{SQL: out.String(), Names: names, Uses: uses}, nil
}

// identByte reports whether c continues an identifier: ASCII letters,
// digits, '_', '$' and any byte of a multibyte UTF-8 character.
func identByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// validParamName matches [A-Za-z_][A-Za-z0-9_]*, the names of template
// variables.
func validParamName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// quoted returns the index just past the constant or identifier opened by
// q at sql[i]; a doubled quote is part of it, and with escapes a backslash
// escapes the next byte.
func quoted(sql string, i int, q byte, escapes bool) (int, error) {
	for j := i + 1; j < len(sql); j++ {
		switch sql[j] {
		case '\\':
			if escapes {
				j++
			}
		case q:
			if j+1 < len(sql) && sql[j+1] == q {
				j++
				continue
			}
			return j + 1, nil
		}
	}
	if q == '"' {
		return 0, errors.New("has an unterminated quoted identifier")
	}
	return 0, errors.New("has an unterminated string constant")
}

// blockComment returns the index just past the (nested) block comment that
// starts at sql[i].
func blockComment(sql string, i int) (int, error) {
	depth := 0
	for j := i; j+1 < len(sql); j++ {
		switch {
		case sql[j] == '/' && sql[j+1] == '*':
			depth++
			j++
		case sql[j] == '*' && sql[j+1] == '/':
			depth--
			j++
			if depth == 0 {
				return j + 1, nil
			}
		}
	}
	return 0, errors.New("has an unterminated block comment")
}

// paramIndex returns the position ($n) of name in s, or 0.
func (s namedSQL) paramIndex(name string) int {
	for i, n := range s.Names {
		if n == name {
			return i + 1
		}
	}
	return 0
}

// args returns the bind arguments of s from values by name; a name without
// a value binds NULL.
func (s namedSQL) args(values map[string]any) []any {
	out := make([]any, len(s.Names))
	for i, n := range s.Names {
		out[i] = values[n]
	}
	return out
}

// parseNamed is the check every host statement gets: it rewrites sql
// ([rewriteNamed]) and refuses a parameter that is not in allowed, an
// [*SQLError] at its first use whose reason ends with what.
func parseNamed(sql string, cast paramCast, allowed func(string) bool, what string) (namedSQL, error) {
	s, err := rewriteNamed(sql, cast)
	if err != nil {
		return s, err
	}
	for _, u := range s.Uses {
		if !allowed(u.Name) {
			return s, sqlErr(u.Offset, fmt.Sprintf("parameter $%s: %s", u.Name, what))
		}
	}
	return s, nil
}
