package postgres

import "encoding/json"

// decodeSQLRef decodes a target's authorization data into r exactly as
// json.Unmarshal would. The shape json.Marshal writes for the row and
// bundle targets a Source plans (the string fields, t and g, no
// whitespace, ASCII strings without escapes) is read without reflection:
// it is decoded for every target of every pass, up to three times per
// item. Anything else (an object item, another store's data, any other
// JSON) goes to json.Unmarshal; FuzzDecodeSQLRef holds both to the same
// answer.
func decodeSQLRef(data []byte, r *sqlRef) error {
	var out sqlRef
	if plainSQLRef(data, &out) {
		*r = out
		return nil
	}
	return json.Unmarshal(data, r)
}

// plainSQLRef decodes data into out when data has the plain shape, and
// reports whether it had. A repeated member overwrites as json.Unmarshal
// does (a repeated g merges into the first).
func plainSQLRef(d []byte, out *sqlRef) bool {
	if len(d) < 2 || d[0] != '{' {
		return false
	}
	i := 1
	if d[i] == '}' {
		return len(d) == 2
	}
	for {
		key, j, ok := plainString(d, i)
		if !ok || j >= len(d) || d[j] != ':' {
			return false
		}
		i = j + 1
		switch string(key) {
		case "k", "s", "b", "key", "v", "m":
			v, j, ok := plainString(d, i)
			if !ok {
				return false
			}
			s := string(v)
			switch string(key) {
			case "k":
				out.Kind = s
			case "s":
				out.Source = s
			case "b":
				out.Binding = s
			case "key":
				out.Key = s
			case "v":
				out.Version = s
			case "m":
				out.MIME = s
			}
			i = j
		case "t":
			if i, ok = plainBool(d, i, &out.Text); !ok {
				return false
			}
		case "g":
			if out.Grants == nil {
				out.Grants = &grantFlags{}
			}
			if i, ok = plainGrants(d, i, out.Grants); !ok {
				return false
			}
		default:
			return false
		}
		if i >= len(d) {
			return false
		}
		switch d[i] {
		case ',':
			i++
		case '}':
			return i+1 == len(d)
		default:
			return false
		}
	}
}

// plainString returns the content of the JSON string at d[i] and the index
// past it, when it is ASCII without escapes or control characters.
func plainString(d []byte, i int) ([]byte, int, bool) {
	if i >= len(d) || d[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(d); j++ {
		switch c := d[j]; {
		case c == '"':
			return d[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// plainBool reads the literal true or false at d[i] into b.
func plainBool(d []byte, i int, b *bool) (int, bool) {
	switch {
	case len(d)-i >= 4 && string(d[i:i+4]) == "true":
		*b = true
		return i + 4, true
	case len(d)-i >= 5 && string(d[i:i+5]) == "false":
		*b = false
		return i + 5, true
	}
	return 0, false
}

// plainGrants reads the grant flags object at d[i] into g.
func plainGrants(d []byte, i int, g *grantFlags) (int, bool) {
	if i+1 >= len(d) || d[i] != '{' {
		return 0, false
	}
	i++
	if d[i] == '}' {
		return i + 1, true
	}
	for {
		key, j, ok := plainString(d, i)
		if !ok || j >= len(d) || d[j] != ':' {
			return 0, false
		}
		var dst *bool
		switch string(key) {
		case "v":
			dst = &g.Visible
		case "r":
			dst = &g.Read
		case "d":
			dst = &g.Disclose
		default:
			return 0, false
		}
		if i, ok = plainBool(d, j+1, dst); !ok || i >= len(d) {
			return 0, false
		}
		switch d[i] {
		case ',':
			i++
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}
