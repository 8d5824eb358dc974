// Package reference holds the resources file of the reference schema
// (package migrations), so that a program can serve the built-in schema
// through the same code path as an operator's own file.
package reference

import _ "embed"

// Config is examples/reference/resources.yaml: the reference schema's
// sources, policy and resources, with the reference server's settings as
// ${MCPRES_...} references.
//
//go:embed resources.yaml
var Config []byte
