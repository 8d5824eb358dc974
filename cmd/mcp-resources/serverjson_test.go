package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// registrySchema is the MCP registry's published schema of server.json,
// vendored (testdata/registry/SOURCE.md says from where, and its licence).
func registrySchema(t *testing.T) (*jsonschema.Resolved, string) {
	t.Helper()
	data, err := os.ReadFile("testdata/registry/server.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("server.schema.json: %v", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("server.schema.json does not resolve: %v", err)
	}
	return rs, s.ID
}

func readServerJSON(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile("../../server.json")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("server.json: %v", err)
	}
	return v
}

// TestServerJSON: the repository's server.json is valid under the
// registry's schema, names that schema, and every environment variable it
// offers is one that `mcp-resources serve` reads.
func TestServerJSON(t *testing.T) {
	rs, id := registrySchema(t)
	v := readServerJSON(t)
	if err := rs.Validate(v); err != nil {
		t.Fatalf("server.json is not valid under the registry's schema: %v", err)
	}
	if v["$schema"] != id {
		t.Errorf("server.json's $schema is %v, want the vendored schema's $id %s", v["$schema"], id)
	}
	out, err := exec.Command(binary(t), "serve", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("serve --help: %v\n%s", err, out)
	}
	packages, _ := v["packages"].([]any)
	if len(packages) == 0 {
		t.Fatal("server.json offers no package")
	}
	for _, p := range packages {
		p := p.(map[string]any)
		vars, _ := p["environmentVariables"].([]any)
		for _, e := range vars {
			name := e.(map[string]any)["name"].(string)
			if !strings.Contains(string(out), "($"+name+")") {
				t.Errorf("package %v offers %s, which serve --help does not list", p["identifier"], name)
			}
		}
	}
}

// The schema check can fail: server.json with each of these mistakes is
// refused.
func TestServerJSONSchemaRefusesMistakes(t *testing.T) {
	rs, _ := registrySchema(t)
	for name, change := range map[string]func(map[string]any){
		"no version":               func(v map[string]any) { delete(v, "version") },
		"a name without a slash":   func(v map[string]any) { v["name"] = "mcp-resources" },
		"a description over 100":   func(v map[string]any) { v["description"] = strings.Repeat("x", 101) },
		"a package version latest": func(v map[string]any) { v["packages"].([]any)[0].(map[string]any)["version"] = "latest" },
		"a package without transport": func(v map[string]any) {
			delete(v["packages"].([]any)[0].(map[string]any), "transport")
		},
		"a transport of an unknown type": func(v map[string]any) {
			v["packages"].([]any)[0].(map[string]any)["transport"] = map[string]any{"type": "websocket"}
		},
		"a positional argument without a value": func(v map[string]any) {
			v["packages"].([]any)[0].(map[string]any)["packageArguments"] = []any{map[string]any{"type": "positional"}}
		},
	} {
		v := readServerJSON(t)
		change(v)
		if err := rs.Validate(v); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Issue 46, defect 10: server.json could not be published as it was. The
// container image's tag is in its identifier (an OCI package has no
// version of its own), the image carries the label by which the registry
// ties it to the entry, and every package offers each bucket setting a
// host-name S3 endpoint needs to start. The registry takes a go package
// only under an io.github.* name whose module path is github.com/OWNER/…,
// and checks module@version on the module proxy: ours is
// uk.phpboyscout/… with a module path off GitHub, so server.json offers
// the image alone, and a go package, if one comes back, must pass that
// rule with the module path of go.mod as its identifier.
func TestServerJSONIsPublishable(t *testing.T) {
	v := readServerJSON(t)
	name, version := v["name"].(string), v["version"].(string)
	byType := map[string]map[string]any{}
	for _, p := range v["packages"].([]any) {
		p := p.(map[string]any)
		byType[p["registryType"].(string)] = p
	}
	oci := byType["oci"]
	if oci == nil {
		t.Fatalf("want an oci package, got %v", v["packages"])
	}
	if id := oci["identifier"].(string); id != "ghcr.io/phpboyscout/mcp-resources:"+version {
		t.Errorf("the image's identifier is %q, want its tag %q in it", id, version)
	}
	if _, ok := oci["version"]; ok {
		t.Errorf("the oci package has a version (%v): its tag belongs in identifier", oci["version"])
	}
	if gomod := byType["go"]; gomod != nil {
		if err := registryTakesGoPackage(name, gomod["identifier"].(string)); err != nil {
			t.Errorf("the registry would refuse the go package: %v", err)
		}
		if gv := gomod["version"]; gv != "v"+version {
			t.Errorf("the go package's version is %v, want the module version v%s", gv, version)
		}
	}
	df, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^LABEL\s+io\.modelcontextprotocol\.server\.name="([^"]*)"`).FindSubmatch(df)
	if m == nil || string(m[1]) != name {
		t.Errorf("the Dockerfile's io.modelcontextprotocol.server.name label is %q, want server.json's name %q", m, name)
	}
	for typ, p := range byType {
		var names []string
		for _, e := range p["environmentVariables"].([]any) {
			names = append(names, e.(map[string]any)["name"].(string))
		}
		for _, want := range []string{"MCPRES_BUCKET", "MCPRES_BUCKET_ENDPOINT", "MCPRES_BUCKET_PATH_STYLE", "MCPRES_BUCKET_ACCESS_KEY", "MCPRES_BUCKET_SECRET_KEY"} {
			if !slices.Contains(names, want) {
				t.Errorf("the %s package does not offer %s", typ, want)
			}
		}
	}
}

// Issue 46, defect 10: the README's stdio snippet for desktop clients set
// only DOCS_DATABASE_URL, and the server it starts exits with
// "DOCS_BUCKET is not set". Its env sets every variable the resources file
// it names refers to.
func TestReadmeStdioSnippetSetsEveryVariableItsFileNeeds(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "## Connect a desktop MCP client")
	if !ok {
		t.Fatal("no desktop client section in README.md")
	}
	_, block, ok := strings.Cut(section, "```json\n")
	block, _, _ = strings.Cut(block, "```")
	var cfg struct {
		MCPServers map[string]struct {
			Args []string
			Env  map[string]string
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(block), &cfg); !ok || err != nil {
		t.Fatalf("the stdio snippet is not JSON (%v):\n%s", err, block)
	}
	server, ok := cfg.MCPServers["mcp-resources"]
	i := slices.Index(server.Args, "--config")
	if !ok || i < 0 || i+1 >= len(server.Args) {
		t.Fatalf("the snippet starts no server with --config: %+v", cfg)
	}
	file := server.Args[i+1]
	_, rel, ok := strings.Cut(file, "/examples/")
	if !ok {
		t.Fatalf("the snippet's --config %q is not one of examples/", file)
	}
	data, err := os.ReadFile("../../examples/" + rel)
	if err != nil {
		t.Fatal(err)
	}
	needed := map[string]bool{}
	for _, m := range regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`).FindAllStringSubmatch(string(data), -1) {
		needed[m[1]] = true
	}
	if len(needed) == 0 {
		t.Fatalf("%s names no variables", rel)
	}
	for name := range needed {
		if _, ok := server.Env[name]; !ok {
			t.Errorf("the README's stdio snippet does not set %s, which %s needs", name, rel)
		}
	}
}

// registryTakesGoPackage applies the registry's rule for a go package: an
// io.github.OWNER/… name, and as identifier this module's path (go.mod),
// rooted at github.com/OWNER.
func registryTakesGoPackage(serverName, identifier string) error {
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		return err
	}
	module := modulePath(data)
	if identifier != module {
		return fmt.Errorf("identifier %q is not the module path %q", identifier, module)
	}
	namespace, _, _ := strings.Cut(serverName, "/")
	owner, ok := strings.CutPrefix(namespace, "io.github.")
	if !ok {
		return fmt.Errorf("go packages are taken only under io.github.* names, not %q", serverName)
	}
	if !strings.HasPrefix(strings.ToLower(module), "github.com/"+strings.ToLower(owner)+"/") {
		return fmt.Errorf("module %q is not under github.com/%s", module, owner)
	}
	return nil
}

func TestRegistryTakesGoPackage(t *testing.T) {
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	module := modulePath(data)
	if module == "" {
		t.Fatal("go.mod names no module")
	}
	if err := registryTakesGoPackage("uk.phpboyscout/mcp-resources", module); err == nil {
		t.Errorf("a reverse-DNS name with module %s was taken", module)
	}
	if err := registryTakesGoPackage("io.github.someone/x", module+"/cmd/mcp-resources"); err == nil {
		t.Error("a package path in place of the module path was taken")
	}
}

// modulePath is the path of go.mod's module line.
func modulePath(gomod []byte) string {
	m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(gomod)
	if m == nil {
		return ""
	}
	return string(m[1])
}
