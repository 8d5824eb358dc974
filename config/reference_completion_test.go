package config

import (
	"os"
	"regexp"
	"testing"
)

// Issue 39, defect 10: the reference file offered no completion for its
// .../object template. Every capture of every template of the reference
// file has a completion statement.
func TestEveryReferenceTemplateCompletesEveryCapture(t *testing.T) {
	data, err := os.ReadFile("../migrations/resources.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"MCPRES_DATABASE_URL": "postgres://u:p@localhost:5432/db", "MCPRES_BUCKET": "bucket"}
	f, err := Parse("reference.yaml", data, &Options{LookupEnv: func(n string) (string, bool) { v, ok := env[n]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	capture := regexp.MustCompile(`\{([^}]+)\}`)
	templates := 0
	for _, r := range f.Resources {
		if r.Template == "" {
			continue
		}
		templates++
		for _, m := range capture.FindAllStringSubmatch(r.Template, -1) {
			if r.Completion[m[1]] == "" {
				t.Errorf("%s (%s): no completion for {%s}", r.Name, r.Template, m[1])
			}
		}
	}
	if templates < 4 {
		t.Fatalf("%d templates in the reference file", templates)
	}
}
