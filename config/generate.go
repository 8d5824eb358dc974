package config

// docs/resources-file.md, the reference of every key, and schema.json, the
// JSON Schema of the file, come from this package's model; the tests of
// config/internal/gendoc fail when either is stale.
//go:generate go run ./internal/gendoc ..
