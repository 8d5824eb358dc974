package config

import _ "embed"

// Schema is the JSON Schema (draft 2020-12) of a resources file, the same
// bytes as config/schema.json in the repository, which `go generate
// ./config/` writes from the model (config/internal/gendoc). Editors that understand
// the yaml-language-server comment
//
//	# yaml-language-server: $schema=https://go.phpboyscout.uk/mcp/resources/config/schema.json
//
// (or a relative path to the file) complete and check a resources file
// with it. The schema checks shapes and types; [Parse] checks everything
// else (references, SQL parameters, templates, key patterns).
//
//go:embed schema.json
var Schema []byte
