package config

import "strings"

// sqlParam is one $name parameter of a statement, at byte offset Off.
type sqlParam struct {
	Name string
	Off  int
}

func isIdentStart(c byte) bool { return c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' }
func isIdentChar(c byte) bool  { return isIdentStart(c) || '0' <= c && c <= '9' }

// scanSQL finds the named parameters ($tenant) of one PostgreSQL
// statement, skipping string literals, quoted identifiers, comments and
// dollar-quoted strings. It refuses positional parameters ($1), a
// semicolon, and literals or comments left open; problem then says why and
// off where.
func scanSQL(sql string) (params []sqlParam, problem string, off int) {
	if strings.TrimSpace(sql) == "" {
		return nil, "is empty", 0
	}
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '\'':
			// E'...' and e'...' take backslash escapes.
			esc := i > 0 && (sql[i-1] == 'E' || sql[i-1] == 'e') && (i == 1 || !isIdentChar(sql[i-2]))
			j := i + 1
			for ; j < len(sql); j++ {
				if esc && sql[j] == '\\' {
					j++
					continue
				}
				if sql[j] == '\'' {
					if j+1 < len(sql) && sql[j+1] == '\'' {
						j++
						continue
					}
					break
				}
			}
			if j >= len(sql) {
				return nil, "a string literal is not closed", i
			}
			i = j + 1
		case c == '"':
			j := i + 1
			for ; j < len(sql); j++ {
				if sql[j] == '"' {
					if j+1 < len(sql) && sql[j+1] == '"' {
						j++
						continue
					}
					break
				}
			}
			if j >= len(sql) {
				return nil, "a quoted identifier is not closed", i
			}
			i = j + 1
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				return params, "", 0
			}
			i += j + 1
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			depth, j := 1, i+2
			for j < len(sql) && depth > 0 {
				switch {
				case strings.HasPrefix(sql[j:], "/*"):
					depth, j = depth+1, j+2
				case strings.HasPrefix(sql[j:], "*/"):
					depth, j = depth-1, j+2
				default:
					j++
				}
			}
			if depth > 0 {
				return nil, "a /* comment is not closed", i
			}
			i = j
		case c == ';':
			return nil, "must be one statement without a semicolon", i
		case c == '$' && (i == 0 || !isIdentChar(sql[i-1])):
			j := i + 1
			if j < len(sql) && '0' <= sql[j] && sql[j] <= '9' {
				return nil, "positional parameters such as $1 are not supported: name the parameter ($tenant, $key)", i
			}
			for j < len(sql) && isIdentChar(sql[j]) {
				j++
			}
			if j < len(sql) && sql[j] == '$' { // $tag$ ... $tag$
				tag := sql[i : j+1]
				end := strings.Index(sql[j+1:], tag)
				if end < 0 {
					return nil, "a dollar-quoted string " + tag + " is not closed", i
				}
				i = j + 1 + end + len(tag)
				continue
			}
			if j == i+1 || !isIdentStart(sql[i+1]) {
				return nil, "a $ that starts no parameter name", i
			}
			params = append(params, sqlParam{Name: sql[i+1 : j], Off: i})
			i = j
		default:
			i++
		}
	}
	return params, "", 0
}
