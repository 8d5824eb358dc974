package config

import (
	"log/slog"
	"regexp"
	"strings"
)

// Secret is the value of a field that may hold credentials: a database
// URL, an S3 key. Only in fields of this type and of type [Env] are
// ${NAME} references expanded from the environment; the value is never
// printed: String,
// GoString, MarshalText and LogValue all give "[secret]", and no [Error]
// quotes it.
type Secret struct {
	value string
	raw   string // as written in the file, references unexpanded
	set   bool
}

// expanded returns the expanded value, to hand to a driver. Never log it.
func (s Secret) expanded() string { return s.value }

// isSet reports whether the field was written in the file.
func (s Secret) isSet() bool { return s.set }

// String returns "[secret]" for a set value and "" for an unset one.
func (s Secret) String() string {
	if !s.set {
		return ""
	}
	return "[secret]"
}

// GoString is String, so that %#v does not print the value either.
func (s Secret) GoString() string { return s.String() }

// MarshalText is String, so that encoders do not print the value either.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// LogValue is String, so that log/slog does not print the value either.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

var (
	// envName is what the NAME of a ${NAME} reference matches.
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// secretRef is what a secret that is never written in the file holds.
	secretRef = regexp.MustCompile(secretRefPattern)
)

// expand replaces every ${NAME} in raw by the environment's value, and
// every ${NAME:-DEFAULT} by its value or, when NAME is unset or empty, by
// DEFAULT (literal text without '}'; empty is allowed), as a shell does. A
// $ not followed by { stands for itself; values are not expanded again.
// The error names the variable or the offset of the bad reference, never
// a value.
func expand(raw string, lookup func(string) (string, bool)) (string, string) {
	var b strings.Builder
	for i := 0; i < len(raw); {
		j := strings.Index(raw[i:], "${")
		if j < 0 {
			b.WriteString(raw[i:])
			break
		}
		b.WriteString(raw[i : i+j])
		i += j + 2
		end := strings.IndexByte(raw[i:], '}')
		if end < 0 {
			return "", "a ${ without its closing }"
		}
		name, def, hasDef := strings.Cut(raw[i:i+end], ":-")
		if !envName.MatchString(name) {
			return "", "${...} must name an environment variable ([A-Za-z_][A-Za-z0-9_]*), optionally with :-DEFAULT"
		}
		v, ok := lookup(name)
		switch {
		case hasDef && v == "":
			v = def
		case !ok:
			return "", "the environment variable " + name + " is not set (write ${" + name + ":-} for an optional value)"
		}
		b.WriteString(v)
		i += end + 1
	}
	return b.String(), ""
}
