package main

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"go.phpboyscout.uk/mcp/resources/config"
	"go.phpboyscout.uk/mcp/resources/migrations"
)

// TestFlagOfKeyMapsEveryKeyThatHoldsAFlag derives, from the reference file
// itself, the keys whose value is a flag's environment variable (the
// ${MCPRES_...} references serve --postgres fills from its flags) and the
// flag of each, from the flags' own name and env tags: flagOfKey must map
// exactly those keys, each to its flag, so that a mistake there is told
// as the flag's and a new flag of the file cannot be left out.
func TestFlagOfKeyMapsEveryKeyThatHoldsAFlag(t *testing.T) {
	flagOfEnv := map[string]string{}
	var tags func(reflect.Type)
	tags = func(rt reflect.Type) {
		for i := range rt.NumField() {
			sf := rt.Field(i)
			if sf.Type.Kind() == reflect.Struct && hasTag(sf.Tag, "embed") {
				tags(sf.Type)
			}
			if env, name := sf.Tag.Get("env"), sf.Tag.Get("name"); env != "" && name != "" {
				flagOfEnv[env] = "--" + name
			}
		}
	}
	tags(reflect.TypeFor[serveCmd]())

	var root yaml.Node
	if err := yaml.Unmarshal(migrations.ResourcesFile, &root); err != nil {
		t.Fatal(err)
	}
	ref := regexp.MustCompile(`^\$\{(MCPRES_[A-Z_]+)(:-)?\}$`)
	want := map[string]string{}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			walk(n.Content[0], path)
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], strings.TrimPrefix(path+"."+n.Content[i].Value, "."))
			}
		case yaml.ScalarNode:
			if m := ref.FindStringSubmatch(n.Value); m != nil {
				flag, ok := flagOfEnv[m[1]]
				if !ok {
					t.Errorf("%s: ${%s} is the environment variable of no flag of serve", path, m[1])
				}
				want[path] = flag
			}
		}
	}
	walk(&root, "")
	if len(want) == 0 {
		t.Fatal("the reference file holds no ${MCPRES_...} reference")
	}
	if !reflect.DeepEqual(flagOfKey, want) {
		t.Errorf("flagOfKey = %v\nwant the reference file's keys of flags %v", flagOfKey, want)
	}
	for key, flag := range want {
		err := flagError(fmtWrap(&config.Error{File: "f", Pos: config.Position{Line: 3}, Key: key, Reason: "is wrong: here"}))
		if got := err.Error(); got != flag+": is wrong: here" {
			t.Errorf("a mistake at %s: %q, want %q", key, got, flag+": is wrong: here")
		}
	}
	other := &config.Error{File: "f", Key: "sources.postgres.postgres.role", Reason: "is wrong"}
	if err := flagError(other); err != other {
		t.Errorf("a mistake at a key of no flag: %v, want it as is", err)
	}
}

// fmtWrap wraps err as callers up the stack do.
func fmtWrap(err error) error { return errors.Join(errors.New("checking"), err) }

func hasTag(tag reflect.StructTag, key string) bool { _, ok := tag.Lookup(key); return ok }
