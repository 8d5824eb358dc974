package main

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"go.yaml.in/yaml/v3"
)

// composeFile is the part of docker-compose.yml the command must agree with.
type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		DependsOn   map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
	} `yaml:"services"`
}

// knownEnv returns every environment variable the command line reads.
func knownEnv(t *testing.T) map[string]bool {
	t.Helper()
	var c cli
	p, err := kong.New(&c, kong.Vars{"version": "test"})
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			for _, e := range f.Envs {
				known[e] = true
			}
		}
		for _, ch := range n.Children {
			walk(ch)
		}
	}
	walk(p.Model.Node)
	return known
}

// The compose quickstart cannot be run here (no Docker engine), so this
// test holds it to the command: the YAML parses, the server waits for the
// one-shot migrate and seed, every MCPRES_* variable it sets is one the
// command reads, and each service's command line parses with its
// environment into the intended command.
func TestComposeFileAgreesWithTheCommandLine(t *testing.T) {
	raw, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatalf("docker-compose.yml does not parse: %v", err)
	}
	if f.Services["seed"].DependsOn["migrate"].Condition != "service_completed_successfully" ||
		f.Services["server"].DependsOn["seed"].Condition != "service_completed_successfully" {
		t.Errorf("the server must start after migrate and seed completed")
	}
	known := knownEnv(t)
	for name, want := range map[string]string{"migrate": "migrate", "seed": "seed", "server": "serve"} {
		svc, ok := f.Services[name]
		if !ok {
			t.Errorf("no %s service", name)
			continue
		}
		if svc.Image != "mcp-resources:local" {
			t.Errorf("%s: image %q, want the Dockerfile's mcp-resources:local", name, svc.Image)
		}
		t.Run(name, func(t *testing.T) {
			for _, kv := range os.Environ() {
				if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "MCPRES_") {
					t.Setenv(k, "")
					os.Unsetenv(k)
				}
			}
			for k, v := range svc.Environment {
				if strings.HasPrefix(k, "MCPRES_") && !known[k] {
					t.Errorf("%s sets %s, which the command does not read", name, k)
				}
				t.Setenv(k, v)
			}
			var c cli
			p, err := kong.New(&c, kong.Vars{"version": "test"}, kong.Exit(func(int) { t.Fatalf("kong exited") }))
			if err != nil {
				t.Fatal(err)
			}
			kctx, err := p.Parse(svc.Command)
			if err != nil {
				t.Fatalf("%v does not parse: %v", svc.Command, err)
			}
			if got := kctx.Command(); got != want {
				t.Fatalf("%v selects %q, want %q", svc.Command, got, want)
			}
			storage := c.Serve.Storage
			if want == "seed" {
				storage = c.Seed.Storage
			}
			if want != "migrate" && (storage.Postgres == "" || storage.Bucket != "mcpres" || !storage.Path || storage.checkCombination() != nil) {
				t.Errorf("%s: storage settings %+v are incomplete", name, storage)
			}
			if want == "migrate" && c.Migrate.Postgres == "" {
				t.Errorf("migrate has no database URL")
			}
		})
	}
}

// The Dockerfile's default command is the documented one and parses.
func TestDockerfileDefaultCommandServesHTTPOnPort8080(t *testing.T) {
	raw, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^CMD (\[.*\])$`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("no CMD in exec form")
	}
	var args []string
	if err := json.Unmarshal(m[1], &args); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(args, []string{"serve", "--http", "0.0.0.0:8080"}) {
		t.Fatalf("CMD %q", args)
	}
	if !regexp.MustCompile(`(?m)^USER nonroot`).Match(raw) || !strings.Contains(string(raw), "CGO_ENABLED=0") {
		t.Fatalf("the image must run as non-root and the binary must be static")
	}
	var c cli
	p, err := kong.New(&c, kong.Vars{"version": "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Parse(args); err != nil || c.Serve.HTTP != "0.0.0.0:8080" {
		t.Fatalf("CMD does not parse: %v", err)
	}
}
