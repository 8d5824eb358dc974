// Package mediatype holds the rules core and the stores share for MIME
// types: which types are valid at all ([Valid]), which are served as text,
// and the type of an object named only by its key's extension. It imports
// nothing but the standard library, like core.
package mediatype

import (
	"mime"
	"path"
	"strings"
)

// IsText reports whether content of MIME type ct is served as text: text/*,
// JSON, XML, YAML, JavaScript and the +json/+xml/+yaml structured suffixes,
// unless a charset parameter names something other than UTF-8 (or its
// subset US-ASCII), in which case the bytes are served as a blob.
func IsText(ct string) bool {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	if cs, ok := params["charset"]; ok {
		switch strings.ToLower(cs) {
		case "utf-8", "utf8", "us-ascii":
		default:
			return false
		}
	}
	if strings.HasPrefix(mt, "text/") {
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/yaml", "application/x-yaml",
		"application/javascript", "application/ecmascript", "application/x-ndjson",
		"application/toml", "application/sql", "image/svg+xml":
		return true
	}
	return strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml") || strings.HasSuffix(mt, "+yaml")
}

// byExtension is the fixed table ByExtension consults before the
// standard library's, so that the answer does not depend on the host's
// /etc/mime.types for the common document types.
var byExtension = map[string]string{
	".txt": "text/plain; charset=utf-8", ".md": "text/markdown; charset=utf-8",
	".csv": "text/csv; charset=utf-8", ".html": "text/html; charset=utf-8",
	".json": "application/json", ".xml": "application/xml", ".yaml": "application/yaml",
	".yml": "application/yaml", ".toml": "application/toml", ".sql": "application/sql",
	".pdf": "application/pdf", ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
	".gif": "image/gif", ".svg": "image/svg+xml", ".zip": "application/zip",
}

// ByExtension returns the MIME type of an object whose key ends in one of
// the well-known extensions (case-insensitive), else the standard library's
// guess, else "" (the caller's default, application/octet-stream).
func ByExtension(key string) string {
	ext := strings.ToLower(path.Ext(key))
	if ext == "" {
		return ""
	}
	if t, ok := byExtension[ext]; ok {
		return t
	}
	return mime.TypeByExtension(ext)
}

// Valid reports whether s is a MIME type the gateway accepts for a
// definition, an icon or a payload: a type/subtype with optional
// parameters, at most 255 bytes, without control characters. Stores can use
// it to refuse a bad type when content is stored rather than when it is
// read (where the gateway reports invalid_content).
func Valid(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	if slash := strings.IndexByte(s, '/'); slash > 0 && isToken(s[:slash]) && isToken(s[slash+1:]) {
		return true // type/subtype without parameters: the common case, no allocation
	}
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] == 0x7f {
			return false
		}
	}
	_, _, err := mime.ParseMediaType(s)
	return err == nil && strings.Contains(s, "/")
}

// isToken reports whether s is a non-empty RFC 2045 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`()<>@,;:\"/[]?=`, c) >= 0 {
			return false
		}
	}
	return true
}
