package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// maxFileBytes bounds the size of a resources file: 16 MiB holds some
// 40,000 templates of a plan and a body statement each.
const maxFileBytes = 16 << 20

// decoder turns the YAML tree into the model, strictly: every key must be
// a field, every value of the field's type; it records where each key was.
type decoder struct {
	e      *errs
	lookup func(string) (string, bool)
}

var (
	typeSecret   = reflect.TypeFor[Secret]()
	typeSecrets  = reflect.TypeFor[[]Secret]()
	typeEnv      = reflect.TypeFor[Env]()
	typeDuration = reflect.TypeFor[Duration]()
	typeByteSize = reflect.TypeFor[ByteSize]()
	typeSpans    = reflect.TypeFor[Spans]()
	typePolicy   = reflect.TypeFor[*Policy]()
)

// secretFields names the fields where ${NAME} is expanded, for the error
// that says so elsewhere.
const secretFields = "url, listen_url, standbys, bucket, endpoint, region, access_key, secret_key, session_token and oauth's issuer, resource, jwks_url, client_id and client_secret"

func pos(n *yaml.Node) Position { return Position{Line: n.Line, Column: n.Column} }

// yamlLine matches the position prefix of the YAML parser's errors.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseYAML parses data as exactly one YAML document.
func parseYAML(e *errs, data []byte) *yaml.Node {
	if len(data) > maxFileBytes {
		e.at(Position{Line: 1}, "", "the file is larger than %d bytes", maxFileBytes)
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node // left empty by a file without a document
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		yamlError(e, err, data)
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		e.at(pos(&extra), "", "a second YAML document: the file holds exactly one")
		return nil
	} else if !errors.Is(err, io.EOF) {
		yamlError(e, err, data)
		return nil
	}
	if len(doc.Content) != 1 {
		e.at(Position{Line: 1}, "", "the file is empty: it needs at least version, sources and resources")
		return nil
	}
	root := doc.Content[0]
	if !plainTree(e, root, 0) {
		return nil
	}
	return root
}

// yamlError reports a parser error at the line it names; a tab in the
// indentation of that line or the next (where the parser stops short of
// it) at the tab itself, in those words.
func yamlError(e *errs, err error, data []byte) {
	msg := err.Error()
	line := 1
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		// yaml.v3 counts the lines of its parser's errors (as opposed to
		// its scanner's) from 0; they are the ones that say "did not find".
		if strings.HasPrefix(msg, "did not find expected") {
			line++
		}
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	lines := strings.Split(string(data), "\n")
	for l := max(line, 1); l <= line+1 && l <= len(lines); l++ {
		text := lines[l-1]
		indent := text[:len(text)-len(strings.TrimLeft(text, " \t"))]
		if i := strings.IndexByte(indent, '\t'); i >= 0 {
			e.at(Position{Line: l, Column: i + 1}, "", "a tab in the indentation: YAML indents with spaces only")
			return
		}
	}
	e.at(Position{Line: line}, "", "YAML: %s", msg)
}

// plainTree refuses what the model never needs and what makes a small file
// large: anchors, aliases, merge keys and custom tags.
func plainTree(e *errs, n *yaml.Node, depth int) bool {
	switch {
	case depth > 64:
		e.at(pos(n), "", "nested more than 64 levels deep")
		return false
	case n.Kind == yaml.AliasNode:
		e.at(pos(n), "", "YAML aliases (*%s) are not supported: write the value out", n.Value)
		return false
	case n.Anchor != "":
		e.at(pos(n), "", "YAML anchors (&%s) are not supported: write the value out", n.Anchor)
		return false
	case n.ShortTag() == "!!merge":
		e.at(pos(n), "", "YAML merge keys (<<) are not supported: write the keys out")
		return false
	case strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!"):
		e.at(pos(n), "", "the YAML tag %s is not supported", n.Tag)
		return false
	}
	for _, c := range n.Content {
		if !plainTree(e, c, depth+1) {
			return false
		}
	}
	return true
}

// yamlName returns the key a field is written under, or "" for none.
func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	return name
}

// keyedField is a field of a struct that a key of the file is written
// into: its index (through inline structs) and key.
type keyedField struct {
	index []int
	key   string
}

// keyedCache holds keyedFields' answer for each type it was asked about:
// the decoder asks for every key of a file, and a file may hold many
// thousands.
var keyedCache sync.Map // reflect.Type -> []keyedField

// keyedFields lists the keyed fields of struct type t in declaration
// order, those of a field tagged yaml:",inline" in its place. The slice
// is shared: callers must not change it.
func keyedFields(t reflect.Type) []keyedField {
	if v, ok := keyedCache.Load(t); ok {
		return v.([]keyedField)
	}
	var out []keyedField
	for i := range t.NumField() {
		f := t.Field(i)
		if _, opt, _ := strings.Cut(f.Tag.Get("yaml"), ","); opt == "inline" && f.Type.Kind() == reflect.Struct {
			for _, in := range keyedFields(f.Type) {
				out = append(out, keyedField{append([]int{i}, in.index...), in.key})
			}
			continue
		}
		if k := yamlName(f); k != "" {
			out = append(out, keyedField{[]int{i}, k})
		}
	}
	keyedCache.Store(t, out)
	return out
}

// fieldKeys lists the keys of struct type t, in declaration order.
func fieldKeys(t reflect.Type) []string {
	var keys []string
	for _, f := range keyedFields(t) {
		keys = append(keys, f.key)
	}
	return keys
}

// structValue decodes mapping n into the struct v. self is the position
// reported for the struct as a whole.
func (d *decoder) structValue(n *yaml.Node, v reflect.Value, path string, self Position) {
	if n.Kind != yaml.MappingNode {
		d.e.at(pos(n), path, "expects a mapping of %s", strings.Join(fieldKeys(v.Type()), ", "))
		return
	}
	t := v.Type()
	spans := Spans{self: self, keys: map[string]Position{}, nodes: map[string]scalarAt{}}
	d.entries(n, path, "written", func(key string, kn, vn *yaml.Node) {
		fields := keyedFields(t)
		fi := slices.IndexFunc(fields, func(f keyedField) bool { return f.key == key })
		if fi < 0 {
			d.e.at(pos(kn), path, "unknown key %q (known: %s)", key, strings.Join(fieldKeys(t), ", "))
			return
		}
		f := t.FieldByIndex(fields[fi].index)
		p := pos(vn)
		if vn.Kind != yaml.ScalarNode {
			p = pos(kn)
		} else {
			spans.nodes[key] = scalarOf(vn)
		}
		spans.keys[key] = p
		d.field(kn, vn, v.FieldByIndex(fields[fi].index), f, strings.TrimPrefix(path+"."+key, "."), &spans, key)
	})
	if sf := v.FieldByName("Spans"); sf.IsValid() && sf.Type() == typeSpans {
		sf.Set(reflect.ValueOf(spans))
	}
}

// entries calls f with each key of the mapping n (at path) and its key
// and value nodes, in order: a key that is not a plain string, or that is
// again (it was written or defined before), is a mistake instead.
func (d *decoder) entries(n *yaml.Node, path, again string, f func(key string, kn, vn *yaml.Node)) {
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, key := n.Content[i], n.Content[i].Value
		switch {
		case kn.Kind != yaml.ScalarNode || kn.ShortTag() != "!!str":
			d.e.at(pos(kn), path, "keys must be strings")
		case seen[key]:
			d.e.at(pos(kn), path, "%s is %s twice", key, again)
		default:
			seen[key] = true
			f(key, kn, n.Content[i+1])
		}
	}
}

// field decodes vn into the field fv of type f.
func (d *decoder) field(kn, vn *yaml.Node, fv reflect.Value, f reflect.StructField, path string, spans *Spans, key string) {
	if vn.ShortTag() == "!!null" {
		d.e.at(pos(kn), path, "has no value")
		return
	}
	t := f.Type
	switch {
	case t == typeSecret, t == typeEnv:
		s, ok := d.str(vn, path, true)
		if !ok {
			return
		}
		val, bad := expand(s, d.lookup)
		switch {
		case bad != "":
			d.e.at(pos(vn), path, "%s", bad)
		case val == "":
			spans.empty(key)
		case t == typeSecret:
			fv.Set(reflect.ValueOf(Secret{value: val, raw: s, set: true}))
		default:
			fv.SetString(val)
		}
	case t == typeDuration:
		s, ok := d.str(vn, path, false)
		if !ok {
			return
		}
		dur, err := time.ParseDuration(s)
		if err != nil || dur <= 0 {
			d.e.at(pos(vn), path, "%q is not a positive duration such as 30s or 1m30s", s)
			return
		}
		fv.SetInt(int64(dur))
	case t == typeByteSize:
		if vn.Kind != yaml.ScalarNode || (vn.ShortTag() != "!!int" && vn.ShortTag() != "!!str") {
			d.e.at(pos(vn), path, "expects a byte size such as 65536 or 64KiB")
			return
		}
		n, err := parseByteSize(vn.Value)
		if err != nil {
			d.e.at(pos(vn), path, "%v", err)
			return
		}
		fv.SetInt(int64(n))
	case t.Kind() == reflect.String:
		if s, ok := d.str(vn, path, false); ok {
			fv.SetString(s)
		}
	case t.Kind() == reflect.Bool:
		if vn.Kind != yaml.ScalarNode || vn.ShortTag() != "!!bool" {
			d.e.at(pos(vn), path, "expects true or false")
			return
		}
		fv.SetBool(vn.Value == "true")
	case t.Kind() == reflect.Int:
		if vn.Kind != yaml.ScalarNode || vn.ShortTag() != "!!int" {
			d.e.at(pos(vn), path, "expects a whole number")
			return
		}
		n, err := strconv.ParseInt(vn.Value, 0, 32)
		if err != nil {
			d.e.at(pos(vn), path, "%s is not a whole number below 2^31", vn.Value)
			return
		}
		fv.SetInt(n)
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Float64:
		if vn.Kind != yaml.ScalarNode || (vn.ShortTag() != "!!int" && vn.ShortTag() != "!!float") {
			d.e.at(pos(vn), path, "expects a number")
			return
		}
		x, err := strconv.ParseFloat(vn.Value, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			d.e.at(pos(vn), path, "%s is not a finite number", vn.Value)
			return
		}
		fv.Set(reflect.ValueOf(&x))
	case t == typePolicy && vn.Kind == yaml.ScalarNode:
		if vn.ShortTag() != "!!str" || vn.Value != policyDatabase {
			d.e.at(pos(vn), path, "expects %s or a mapping of source, decide and description", policyDatabase)
			return
		}
		fv.Set(reflect.ValueOf(&Policy{Database: true, Spans: Spans{self: pos(vn)}}))
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct:
		nv := reflect.New(t.Elem())
		d.structValue(vn, nv.Elem(), path, pos(kn))
		fv.Set(nv)
	case t == typeSecrets:
		if vn.Kind != yaml.SequenceNode {
			d.e.at(pos(vn), path, "expects a list of URLs")
			return
		}
		list := make([]Secret, 0, len(vn.Content))
		for i, c := range vn.Content {
			at := path + "[" + strconv.Itoa(i) + "]"
			raw, ok := d.str(c, at, true)
			if !ok {
				return
			}
			val, bad := expand(raw, d.lookup)
			switch {
			case bad != "":
				d.e.at(pos(c), at, "%s", bad)
				return
			case val == "":
				d.e.at(pos(c), at, "is empty")
				return
			}
			list = append(list, Secret{value: val, raw: raw, set: true})
			spans.keys[key+"."+strconv.Itoa(i)] = pos(c)
		}
		fv.Set(reflect.ValueOf(list))
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		if vn.Kind != yaml.SequenceNode {
			d.e.at(pos(vn), path, "expects a list of strings")
			return
		}
		list := make([]string, 0, len(vn.Content))
		for _, c := range vn.Content {
			s, ok := d.str(c, path, false)
			if !ok {
				return
			}
			list = append(list, s)
		}
		fv.Set(reflect.ValueOf(list))
	case t.Kind() == reflect.Map:
		if vn.Kind != yaml.MappingNode {
			d.e.at(pos(vn), path, "expects a mapping of strings to strings")
			return
		}
		m := make(map[string]string, len(vn.Content)/2)
		d.entries(vn, path, "written", func(k string, kn, sn *yaml.Node) {
			if s, ok := d.str(sn, path+"."+k, false); ok {
				m[k] = s
				spans.keys[key+"."+k] = pos(sn)
				spans.nodes[key+"."+k] = scalarOf(sn)
				spans.keys[key+"."+k+":key"] = pos(kn)
			}
		})
		fv.Set(reflect.ValueOf(m))
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		if _, keyed := f.Tag.Lookup("keyed"); !keyed {
			panic("config: a list of structs must be keyed")
		}
		if vn.Kind != yaml.MappingNode {
			d.e.at(pos(vn), path, "expects a mapping of names to definitions")
			return
		}
		list := reflect.MakeSlice(t, 0, len(vn.Content)/2)
		d.entries(vn, path, "defined", func(name string, nk, nv *yaml.Node) {
			if nv.ShortTag() == "!!null" {
				d.e.at(pos(nk), path+"."+name, "has no value")
				return
			}
			el := reflect.New(t.Elem()).Elem()
			el.FieldByName("Name").SetString(name)
			d.structValue(nv, el, path+"."+name, pos(nk))
			list = reflect.Append(list, el)
		})
		fv.Set(list)
	default:
		panic(fmt.Sprintf("config: no decoder for %s", t))
	}
}

// str returns a string scalar. Outside secret fields, ${ is refused: it
// would not be expanded there, and a reader would think it is.
func (d *decoder) str(n *yaml.Node, path string, secret bool) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		d.e.at(pos(n), path, "expects a string (quote it)")
		return "", false
	}
	if !secret && strings.Contains(n.Value, "${") {
		d.e.at(pos(n), path, "${...} is expanded only in %s", secretFields)
		return "", false
	}
	return n.Value, true
}

// byteUnits are the suffixes of a byte size, largest first.
var byteUnits = []struct {
	suffix string
	shift  uint
}{{"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}

// ParseByteSize parses a byte size as the file and the command's flags write
// it: a whole number, optionally negative, with an optional B, KiB, MiB or
// GiB suffix (4MiB is 4194304). Its magnitude is at most 2^62. Callers
// decide which values their setting allows.
func ParseByteSize(s string) (int64, error) {
	num, shift := strings.TrimSpace(s), uint(0)
	for _, u := range byteUnits {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, shift = strings.TrimSpace(n), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > (1<<62)>>shift || n < -(1<<62)>>shift {
		return 0, fmt.Errorf("%q is not a byte size (a whole number with an optional KiB, MiB or GiB)", s)
	}
	return n << shift, nil
}

// parseByteSize parses a limit of the file: positive and at most 1 PiB.
func parseByteSize(s string) (ByteSize, error) {
	n, err := ParseByteSize(s)
	if err != nil || n <= 0 || n > 1<<50 {
		return 0, fmt.Errorf("%q is not a positive byte size (a whole number with an optional KiB, MiB or GiB)", s)
	}
	return ByteSize(n), nil
}
