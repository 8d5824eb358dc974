package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"reflect"
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
	{"secretRef", obj{{"description", "Exactly one ${NAME} reference, or ${NAME:-} when optional: secrets are not written in the file."}, {"type", "string"}, {"pattern", `^\$\{[A-Za-z_][A-Za-z0-9_]*(:-)?\}$`}}},
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
}

// modelConst stands for the string constant of config/model.go it names.
type modelConst string

// typeRefs are the model's scalar types that are a def of their own.
var typeRefs = map[string]string{"Secret": "env", "Env": "env", "Duration": "duration", "ByteSize": "byteSize"}

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

// Schema returns config/schema.json for the model's structs (with their
// docs) and string constants, whose sections walk found.
func Schema(structs map[string]*ast.StructType, docs, consts map[string]string, sections []section) ([]byte, error) {
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
	var root obj
	for _, s := range sections {
		o, err := structSchema(s.typ, fields(structs[s.typ], structs), docs[s.typ])
		if err != nil {
			return nil, err
		}
		if s.def == "" {
			root = o
			continue
		}
		defs = append(defs, kv{s.def, o})
	}
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

// structSchema is the object that the struct typ, documented by doc, models.
func structSchema(typ string, fs []*ast.Field, doc string) (obj, error) {
	props := obj{}
	var required []string
	groups := map[string][]string{}
	var groupOrder []string
	for _, field := range fs {
		key := yamlKey(field)
		if key == "" {
			continue
		}
		tags := schemaTag(field)
		p, err := fieldSchema(exprString(field.Type), key, tags)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", typ, field.Names[0].Name, err)
		}
		if d := oneLine(text(field.Doc)); d != "" {
			p = append(obj{{"description", d}}, p...)
		}
		props = append(props, kv{key, p})
		if _, ok := tags["required"]; ok {
			required = append(required, key)
		}
		if g, ok := tags["oneof"]; ok {
			if _, seen := groups[g]; !seen {
				groupOrder = append(groupOrder, g)
			}
			groups[g] = append(groups[g], key)
		}
	}
	o := obj{}
	if d := oneLine(doc); d != "" {
		o = append(o, kv{"description", d})
	}
	o = append(o, kv{"type", "object"}, kv{"additionalProperties", false})
	if len(required) > 0 {
		o = append(o, kv{"required", required})
	}
	o = append(o, kv{"properties", props})
	if len(groupOrder) > 1 {
		return nil, fmt.Errorf("%s: more than one oneof group", typ)
	}
	for _, g := range groupOrder {
		var alts []any
		for _, k := range groups[g] {
			alts = append(alts, obj{{"required", []string{k}}})
		}
		o = append(o, kv{"oneOf", alts})
	}
	return o, nil
}

// fieldSchema is the schema of a value of Go type typ written under key.
func fieldSchema(typ, key string, tags map[string]string) (obj, error) {
	ref := func(name string) (obj, error) {
		if !slices.ContainsFunc(scalarDefs, func(d struct {
			name string
			def  obj
		}) bool {
			return d.name == name
		}) {
			return nil, fmt.Errorf("no $defs/%s", name)
		}
		return obj{{"$ref", "#/$defs/" + name}}, nil
	}
	var o obj
	var err error
	switch elem := strings.TrimLeft(typ, "[]*"); {
	case tags["ref"] != "":
		o, err = ref(tags["ref"])
	case typ == "*Policy":
		o = obj{{"oneOf", []any{obj{{"const", "database"}}, obj{{"$ref", "#/$defs/policy"}}}}}
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
	case typeRefs[typ] != "":
		o, err = ref(typeRefs[typ])
	case typ == "int":
		o = obj{{"type", "integer"}}
	case typ == "*float64":
		o = obj{{"type", "number"}}
	case typ == "bool":
		o = obj{{"type", "boolean"}}
	case typ == "string":
		o = obj{{"type", "string"}}
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
	tag, err := strconv.Unquote(f.Tag.Value)
	if err != nil {
		return out
	}
	for _, item := range strings.Split(reflect.StructTag(tag).Get("schema"), ",") {
		if item == "" {
			continue
		}
		k, v, _ := strings.Cut(item, "=")
		out[k] = v
	}
	return out
}
