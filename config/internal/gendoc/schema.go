package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"slices"
	"strconv"
	"strings"

	"go.phpboyscout.uk/mcp/resources/stores/s3store"
)

// The JSON Schema of a resources file is written from the same model as the
// page: each struct of the model is one object of $defs (the top level is
// File), each keyed field one property with the field's doc comment, typed
// by its Go type, and narrowed by its schema tag, a comma-separated list of:
//
//	required      the key must be written
//	oneof=GROUP   exactly one of the fields of GROUP must be written
//	ref=NAME      the value is $defs/NAME (one of scalarDefs)
//	items=NAME    a list's items, or a mapping's values, are $defs/NAME
//	unique        a list's items are distinct
//	const=N       the value is the integer N
//	min=N, max=N  bounds of a number (N may name a constant of constants)
//	minLength=N   the shortest string

// scalarDefs are the values the model's fields name by ref= or items=, and
// the types that stand for one: a Secret or Env expands ${NAME}, a Duration
// and a ByteSize are written as text.
var scalarDefs = []struct {
	name string
	def  obj
}{
	{"name", obj{{"type", "string"}, {"pattern", modelConst("namePattern")}}},
	{"env", obj{{"description", "A value in which ${NAME} and ${NAME:-DEFAULT} references are expanded from the environment."}, {"type", "string"}}},
	{"secretRef", obj{{"description", "Exactly one ${NAME} reference, or ${NAME:-} when optional: secrets are not written in the file."}, {"type", "string"}, {"pattern", modelConst("secretRefPattern")}}},
	{"sql", obj{{"description", "One PostgreSQL statement without a semicolon; parameters are named ($tenant, $key), never positional."}, {"type", "string"}, {"minLength", 1}}},
	{"role", obj{{"type", "string"}, {"minLength", 1}, {"maxLength", 63}}},
	{"duration", obj{{"description", "A Go duration such as 30s or 1m30s."}, {"type", "string"}, {"pattern", `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`}}},
	{"byteSize", obj{{"description", "Bytes, as a number or with a binary suffix: 65536, 64KiB, 4MiB."}, {"oneOf", []any{
		obj{{"type", "integer"}, {"minimum", 1}}, obj{{"type", "string"}, {"pattern", "^ *[0-9]+ *(B|KiB|MiB|GiB)? *$"}}}}}},
	{"mediaType", obj{{"type", "string"}, {"pattern", "^[!#$%&'*+.^_`|~0-9A-Za-z-]+/[!#$%&'*+.^_`|~0-9A-Za-z-]+( *;.*)?$"}}},
	{"channel", obj{{"type", "string"}, {"pattern", "^[a-z_][a-z0-9_]{0,62}$"}}},
	{"scope", obj{{"type", "string"}, {"pattern", `^[^ "\\]+$`}}},
	{"audience", obj{{"enum", []any{"user", "assistant"}}}},
	{"claim", obj{{"type", "string"}, {"minLength", 1}}},
	{"reason", obj{{"description", "Why the table, view or function may be read without the proof's rules."}, {"type", "string"}, {"pattern", `\S`}}},
}

// modelConst stands for the string constant of config/model.go it names.
type modelConst string

// constants are the bounds a tag may name instead of a number.
var constants = map[string]int{"s3store.MaxKeyDepth": s3store.MaxKeyDepth}

// obj is a JSON object whose keys keep their order.
type obj []kv

type kv struct {
	k string
	v any
}

// MarshalJSON writes o's keys in order.
func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.k)
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// scalarSchemas are the $defs of scalarDefs, with the model's string
// constants (consts) in place of the names of them.
func scalarSchemas(consts map[string]string) (obj, error) {
	defs := obj{}
	for _, d := range scalarDefs {
		def := slices.Clone(d.def)
		for i, e := range def {
			if c, ok := e.v.(modelConst); ok {
				if def[i].v, ok = consts[string(c)]; !ok {
					return nil, fmt.Errorf("gendoc: config/model.go has no string constant %s", c)
				}
			}
		}
		defs = append(defs, kv{d.name, def})
	}
	return defs, nil
}

// schemaFile is config/schema.json: the object of File (root) at the top,
// every other in defs.
func schemaFile(root, defs obj) ([]byte, error) {
	out := obj{
		{"$schema", "https://json-schema.org/draft/2020-12/schema"},
		{"$id", "https://go.phpboyscout.uk/mcp/resources/config/schema.json"},
		{"title", "mcp-resources resources file"},
	}
	out = append(out, root...)
	out = append(out, kv{"$defs", defs})
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, b, "", "  "); err != nil {
		return nil, err
	}
	ind.WriteByte('\n')
	return ind.Bytes(), nil
}

// fieldSchema is the schema of a value of Go type typ written under key.
func fieldSchema(typ, key string, tags map[string]string) (obj, error) {
	ref := func(name string) (obj, error) {
		for _, d := range scalarDefs {
			if d.name == name {
				return obj{{"$ref", "#/$defs/" + name}}, nil
			}
		}
		return nil, fmt.Errorf("no $defs/%s", name)
	}
	var o obj
	var err error
	switch elem := strings.TrimLeft(typ, "[]*"); {
	case tags["ref"] != "":
		o, err = ref(tags["ref"])
	case typ == "*Policy":
		o = obj{{"oneOf", []any{obj{{"const", "database"}}, obj{{"$ref", "#/$defs/policy"}}}}}
	case typ == "[]Secret":
		o = obj{{"type", "array"}, {"items", obj{{"$ref", "#/$defs/env"}}}}
	case strings.HasPrefix(typ, "[]") && elem != "string":
		// A keyed list of a struct: a mapping of names to it.
		o = obj{{"type", "object"}, {"propertyNames", obj{{"$ref", "#/$defs/name"}}},
			{"additionalProperties", obj{{"$ref", "#/$defs/" + strings.TrimSuffix(key, "s")}}}}
		if m, ok := tags["min"]; ok {
			o = append(o, kv{"minProperties", mustInt(m)})
		}
		return o, nil
	case typ == "[]string":
		items := obj{{"type", "string"}}
		if n := tags["items"]; n != "" {
			items, err = ref(n)
		}
		o = obj{{"type", "array"}}
		if _, ok := tags["unique"]; ok {
			o = append(o, kv{"uniqueItems", true})
		}
		o = append(o, kv{"items", items})
	case typ == "map[string]string":
		var vals obj
		vals, err = ref(tags["items"])
		o = obj{{"type", "object"}, {"additionalProperties", vals}}
	case modelTypes[typ].schema != nil:
		o = slices.Clone(modelTypes[typ].schema)
	case strings.HasPrefix(typ, "*"):
		o = obj{{"$ref", "#/$defs/" + key}}
	default:
		return nil, fmt.Errorf("no schema for type %s", typ)
	}
	if err != nil {
		return nil, err
	}
	if c, ok := tags["const"]; ok {
		o = obj{{"const", mustInt(c)}}
	}
	for _, b := range []struct{ tag, key string }{{"min", "minimum"}, {"max", "maximum"}, {"minLength", "minLength"}} {
		if v, ok := tags[b.tag]; ok {
			o = append(o, kv{b.key, mustInt(v)})
		}
	}
	return o, nil
}

// mustInt is the number, or the constant, a tag names; the tests run every
// tag of the model, so a bad one fails them.
func mustInt(s string) int {
	if n, ok := constants[s]; ok {
		return n
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(fmt.Sprintf("gendoc: schema tag value %q is neither a number nor a known constant", s))
	}
	return n
}

// schemaTag is a field's schema tag, parsed.
func schemaTag(f *ast.Field) map[string]string {
	out := map[string]string{}
	for _, item := range strings.Split(tag(f, "schema"), ",") {
		if item == "" {
			continue
		}
		k, v, _ := strings.Cut(item, "=")
		out[k] = v
	}
	return out
}
