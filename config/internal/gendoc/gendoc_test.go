package main

import (
	"bytes"
	"os"
	"testing"
)

// The checked-in docs/resources-file.md is what `go generate ./config/`
// writes from the model: a key added, renamed or re-documented in
// config/model.go without regenerating the page fails here.
func TestReferenceIsGenerated(t *testing.T) {
	want, _, err := Files("../..")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../../docs/resources-file.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("docs/resources-file.md is not what the model generates: run go generate ./config/")
	}
}

// The checked-in config/schema.json is what `go generate ./config/` writes
// from the model: a key, type, doc or schema tag changed in config/model.go
// without regenerating fails here.
func TestSchemaIsGenerated(t *testing.T) {
	_, want, err := Files("../..")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("config/schema.json is not what the model generates: run go generate ./config/")
	}
}

// Every key of the model is on the page, with its type.
func TestReferenceNamesEveryKey(t *testing.T) {
	page, _, err := Files("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{
		"| `url` | string with `${NAME}` (a secret: its value never printed) | yes |",
		"| `plan` | string |",
		"| `anchored` | boolean |",
		"| `max_item_bytes` | size (`512`, `64KiB`, `4MiB`) |",
		"| `listen_url` |",
		"| `priority` | number |",
	} {
		if !bytes.Contains(page, []byte(row)) {
			t.Errorf("the page has no row starting %s", row)
		}
	}
}

// Every limit row states the default core.DefaultResourceLimits gives, in
// the file's own spelling, so that the page changes with the code.
func TestReferenceStatesEveryLimitsDefault(t *testing.T) {
	page, _, err := Files("../..")
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"max_uri_bytes": "2048", "max_item_bytes": "4MiB", "report_payload_bytes": "8KiB",
		"read_timeout": "30s", "item_timeout": "10s", "list_page_bytes": "1MiB"} {
		if !bytes.Contains(page, []byte("| `"+key+"` |")) || !bytes.Contains(page, []byte("keeps the default, `"+want+"` |")) {
			t.Errorf("the row of %s does not state the default %s", key, want)
		}
	}
	for _, line := range bytes.Split(page, []byte("\n")) {
		if bytes.Contains(line, []byte("core.ResourceLimits.")) && !bytes.Contains(line, []byte("keeps the default, `")) {
			t.Errorf("a limit row without its default: %s", line)
		}
	}
}
