package config

import (
	"strings"

	"go.phpboyscout.uk/mcp/resources/core"
)

// deciders returns the column of lines, as check prints them, that says
// what decides who reads a binding's items: the last.
func deciders(lines []string) *[]string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l[strings.LastIndexByte(l, '\t')+1:]
	}
	return &out
}

// DecidedBy names what decides, for a read of the served definition d, the
// items that stage removes, in the words of the last column of
// mcp-resources check ([Served].Lines): for a decider "A, then B", A
// before the reads ([core.PassBeforeReads]) and B at the recheck
// ([core.PassRecheck]); the whole column for a decider of one part, and
// for the body read itself (stage zero, the storage request under the
// same access). It is "" for a definition the file does not serve. Safe
// for concurrent use, also while [Served.Check] runs.
func (s *Served) DecidedBy(d core.ResourceDefinition, stage core.PassStage) string {
	ds := s.deciders.Load()
	if ds == nil {
		return ""
	}
	for i, b := range s.Bindings {
		if i < len(*ds) && b.Definition.URI == d.URI && b.Definition.URITemplate == d.URITemplate {
			before, after, ok := strings.Cut((*ds)[i], ", then ")
			switch {
			case !ok || stage == 0:
				return (*ds)[i]
			case stage == core.PassRecheck:
				return after
			}
			return before
		}
	}
	return ""
}
