package main

import (
	"slices"
	"testing"

	"go.phpboyscout.uk/mcp/resources/config"
)

// TestReferenceFileServesObjectsOnlyWithABucket: serve --postgres without
// --bucket serves the reference file without its S3 source, so without the
// resource that serves an asset's object alone and without the object item
// of an asset; with --bucket it serves both, from that bucket.
func TestReferenceFileServesObjectsOnlyWithABucket(t *testing.T) {
	for _, c := range []struct {
		bucket  string
		sources []string
		object  bool
	}{{"", []string{"postgres"}, false}, {"assets", []string{"postgres", "s3"}, true}} {
		f := storageFlags{Postgres: "postgres://app@127.0.0.1:5432/db", Bucket: c.bucket}
		file, err := f.referenceFile("")
		if err != nil {
			t.Fatalf("--bucket %q: %v", c.bucket, err)
		}
		var sources []string
		for _, s := range file.Sources {
			sources = append(sources, s.Name)
			if s.S3 != nil && string(s.S3.Bucket) != c.bucket {
				t.Errorf("--bucket %q: the S3 source's bucket is %q", c.bucket, s.S3.Bucket)
			}
		}
		object := slices.ContainsFunc(file.Resources, func(r config.Resource) bool { return r.Name == "asset-object" })
		if !slices.Equal(sources, c.sources) || object != c.object {
			t.Errorf("--bucket %q: sources %v, asset-object served %v; want %v, %v", c.bucket, sources, object, c.sources, c.object)
		}
	}
}
