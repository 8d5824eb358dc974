package config

import (
	"strings"
	"testing"
)

// TestAnOptionalBucketLeftEmptyLeavesItsSourceOut: an optional S3 source
// whose bucket expands to nothing is left out once the file is checked as
// written, with the resources that read from it alone (a key family, a
// plan without body serving its row's object); a resource with a body
// keeps its rows without the objects. The same file with a bucket serves
// them all, and a source that is not optional still needs its bucket.
func TestAnOptionalBucketLeftEmptyLeavesItsSourceOut(t *testing.T) {
	objects := "  pic:\n    template: doc://t/{tenant}/p/{id}\n    source: db\n    plan: SELECT $tenant, $id\n    object:\n      source: files\n" +
		"  withpic:\n    template: doc://t/{tenant}/w/{id}\n    source: db\n    plan: SELECT $tenant, $id\n    body: SELECT $key\n    object:\n      source: files\n"
	file := func(bucket string) string {
		return strings.Replace(good, "bucket: acme-docs", "bucket: "+bucket+"\n      optional: true", 1) + objects
	}
	f, err := Parse("optional.yaml", []byte(file("${EMPTY}")), testOptions)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range f.Resources {
		names = append(names, r.Name)
	}
	if len(f.Sources) != 1 || f.Sources[0].Name != "db" || strings.Join(names, " ") != "doc withpic" {
		t.Fatalf("sources %v, resources %v: want db alone, serving doc and withpic", f.Sources, names)
	}
	if sb := f.sqlBinding(f.Resources[1], f.Resources[1].definition()); sb.ObjectSource != "" {
		t.Errorf("withpic names the object source %q that was left out", sb.ObjectSource)
	}
	if f, err := Parse("optional.yaml", []byte(file("acme-docs")), testOptions); err != nil || len(f.Sources) != 2 || len(f.Resources) != 4 {
		t.Fatalf("with a bucket: %v, %d sources, %d resources; want all of them", err, len(f.Sources), len(f.Resources))
	}
	_, err = Parse("required.yaml", []byte(edit(t, "bucket: acme-docs", "bucket: ${EMPTY}")), testOptions)
	checkErrorLine(t, err, "required.yaml:9:", "sources.files.s3.bucket: is required, and its ${...} expands to nothing", canary)
}
