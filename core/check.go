package core

import (
	"context"
	"errors"
)

// errCheckOnly is what the callbacks of a definition [CheckDefinitions]
// checks would return; no request ever reaches them.
var errCheckOnly = errors.New("core: definition registered to be checked only")

// checkOnly stands in for the resolver and the reader of a definition that
// [CheckDefinitions] checks, which [NewResources] requires.
type checkOnly struct{}

func (checkOnly) Resolve(context.Context, ResourceMatch) (ResourceReadPlan, error) {
	return ResourceReadPlan{}, errCheckOnly
}

func (checkOnly) Read(context.Context, ReadRequest) ([]ReadResult, error) { return nil, errCheckOnly }

// CheckDefinitions checks defs and limits by the rules [NewResources]
// applies to its bindings' definitions and to [WithResourceLimits], without
// callbacks or a policy, and returns the templates some request would match
// at once: what [Resources.TemplateOverlaps] would report for a gateway of
// these definitions, ordered by their indices in defs (bounded like it, so
// a very large set may report only some). Zero fields of limits keep their
// defaults. Errors are *[ConfigError]; one about a definition has its index
// in defs as Definition. A configuration tool or a store checks a set of
// definitions with it before any gateway exists.
func CheckDefinitions(defs []ResourceDefinition, limits ResourceLimits) ([]TemplateOverlap, error) {
	limits, err := limits.resolve()
	if err != nil {
		return nil, err
	}
	ds := make([]*definition, len(defs))
	for i, d := range defs {
		if ds[i], err = newDefinition(i, ResourceBinding{Definition: d, Resolver: checkOnly{}, Reader: checkOnly{}}, limits); err != nil {
			return nil, err
		}
	}
	sel, err := newSelector(ds, limits.MaxURIBytes)
	if err != nil {
		return nil, err
	}
	overlaps, _ := sel.templateOverlaps()
	return overlaps, nil
}
