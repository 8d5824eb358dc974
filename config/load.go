package config

import (
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
)

// Options configure [Load] and [Parse]. A nil *Options selects every
// default.
type Options struct {
	// LookupEnv returns the value of an environment variable for a ${NAME}
	// reference. Nil means os.LookupEnv.
	LookupEnv func(name string) (string, bool)
}

// Load reads the resources file at path and returns it decoded and
// checked. Every error is one [*Error] (or, when the file cannot be read,
// an error that names the path); see [Parse].
func Load(path string, opts *Options) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("config: reading %s: %w", path, err)
	}
	return Parse(path, data, opts)
}

// Parse decodes and checks the resources file data, which errors call
// name. It returns the first mistake in file order as an [*Error]: a YAML
// syntax error, an unknown key, a value of the wrong type, an unset
// ${NAME}, or any rule of the file broken (see the package documentation).
// It opens no connection: what needs the database (that a statement
// prepares, that a column or role exists) is checked when the sources are
// opened.
func Parse(name string, data []byte, opts *Options) (*File, error) {
	lookup := os.LookupEnv
	if opts != nil && opts.LookupEnv != nil {
		lookup = opts.LookupEnv
	}
	e := &errs{file: name}
	root := parseYAML(e, data)
	if root == nil {
		return nil, e.first()
	}
	f := &File{Name: name, lines: strings.Split(string(data), "\n")}
	d := &decoder{e: e, lookup: lookup}
	d.structValue(root, reflect.ValueOf(f).Elem(), "", Position{Line: root.Line, Column: root.Column})
	if len(e.list) > 0 {
		return nil, e.first()
	}
	c := &checker{e: e, f: f}
	c.check()
	if len(e.list) > 0 {
		return nil, e.first()
	}
	f.leaveOut()
	return f, nil
}

// leaveOut leaves out each optional S3 source whose bucket expands to
// nothing ([S3Source].Optional), once the file is checked as written: with
// it go the resources that read from it alone (a key pattern, or a plan
// without body that serves its row's object); the others keep their rows
// without its objects (sqlBinding names no object source).
func (f *File) leaveOut() {
	out := map[string]bool{}
	f.Sources = slices.DeleteFunc(f.Sources, func(s Source) bool {
		out[s.Name] = s.S3 != nil && s.S3.Optional && s.S3.Bucket == ""
		return out[s.Name]
	})
	f.Resources = slices.DeleteFunc(f.Resources, func(r Resource) bool {
		return out[r.Source] || r.Object != nil && out[r.Object.Source] && r.Body == ""
	})
}
