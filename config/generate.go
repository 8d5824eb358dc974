package config

// docs/resources-file.md, the reference of every key, comes from this
// package's model; its test (config/internal/gendoc) fails when it is stale.
//go:generate go run ./internal/gendoc ..
