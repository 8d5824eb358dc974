package core

// PassStage says when the gateway runs a [PolicyPass].
type PassStage uint8

// The stages of a read at which the gateway decides a whole plan.
const (
	// PassBeforeReads is the decision made after planning and before any
	// body is read. A policy may decide it from data its resolver fetched in
	// the same request (for example grant flags carried in a target's private
	// authorization data).
	PassBeforeReads PassStage = iota + 1
	// PassRecheck is the final recheck after the body reads. It stands in for
	// the definition's discovery check as well, and must ask storage for the
	// current state: data fetched while planning is stale by then. Its
	// targets are the requested target and the items whose decision did not
	// come with their body ([ReadResult].Decision,
	// [ResourceMatch.WithContent]); when the requested target and every
	// item came with one, the gateway asks [ResourcePolicy].Discover instead.
	PassRecheck
)

// String returns "before reads" or "recheck".
func (s PassStage) String() string {
	switch s {
	case PassBeforeReads:
		return "before reads"
	case PassRecheck:
		return "recheck"
	}
	return "PassStage(?)"
}

// PolicyPass is one question about a whole plan, asked of
// [ResourcePolicy].Decide: the selected definition, and every distinct
// target of the plan, the requested target first, then the planned items in
// plan order (at [PassRecheck], only those storage did not decide with
// their body). An item with the same identity (URI, representation,
// authorization data and object reference) as the requested target is
// listed once, as the requested target. Targets never carry their content
// ([ResourceMatch.WithContent]).
type PolicyPass struct {
	// Stage says whether this is the decision before the body reads or the
	// final recheck.
	Stage PassStage
	// Definition is the selected definition; the policy owns this copy.
	Definition ResourceDefinition
	// Targets are the distinct targets to decide; the policy must not
	// modify the slice.
	Targets []ResourceTarget
	// Captures are the request's decoded template captures, the values
	// the resolver planned from (doc://tenants/%61cme/... gives tenant
	// "acme"): a policy decides on them, never on URI text. Empty for a
	// concrete URI; the policy owns this map.
	Captures map[string]string
}

// TargetDecision is a policy's answer for one target of a [PolicyPass]: its
// visibility and, for a visible target, whether the caller may read it.
// Read is ignored for a hidden target.
type TargetDecision struct {
	Visibility
	// Read permits reading a visible target. A visible target that may not
	// be read is an omission the report counts.
	Read bool
	// Policy names the policy whose answer this is: the key storage was
	// given ([ReadRequest].Policy, [ResourceMatch.Policy]) when it took
	// the decision with a body. The gateway ignores it in the answers of
	// Decide, and drops a decision storage took whose Policy is not the
	// key of the policy in force (see [ResourcePolicy].Key).
	Policy any
}
