package core

// ResourceMatch is a selected request: the request URI, the definition that
// matched it and, for a template, the decoded captures. It is immutable: its
// accessors return copies.
type ResourceMatch struct {
	uri  string
	def  *definition
	vars []capture
	// read is the request being planned (set when the gateway resolves):
	// the content the resolver plans with WithContent serves it alone.
	read *planning
}

// planning is one request's resolve; its address identifies it (the
// request URI it holds keeps it from being zero-size, whose addresses
// need not differ).
type planning struct{ uri string }

// Policy returns the key of the policy that decides the request
// ([ResourcePolicy].Key), or nil: a store sets it as the
// [TargetDecision].Policy of a decision it plans with content
// ([ResourceMatch.WithContent]), and plans one only when the key is its
// own policy's.
func (m ResourceMatch) Policy() any {
	if m.def == nil {
		return nil
	}
	return m.def.policy
}

type capture struct{ name, value string }

// URI returns the request URI, byte for byte as received.
func (m ResourceMatch) URI() string { return m.uri }

// Definition returns a copy of the matched definition.
func (m ResourceMatch) Definition() ResourceDefinition { return m.def.description() }

// Var returns the decoded capture of the template variable name.
func (m ResourceMatch) Var(name string) (string, bool) {
	for _, c := range m.vars {
		if c.name == name {
			return c.value, true
		}
	}
	return "", false
}

// Vars returns a fresh map of every decoded capture (empty for a concrete URI).
func (m ResourceMatch) Vars() map[string]string {
	out := make(map[string]string, len(m.vars))
	for _, c := range m.vars {
		out[c.name] = c.value
	}
	return out
}
