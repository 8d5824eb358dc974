package core

import (
	"context"
	"encoding/json"
)

// ResourceDefinition describes one registered resource: exactly one of URI
// (a concrete resource) or URITemplate (a family of resources) is set. A
// definition that Resources returns (listing, a policy pass) owns its Meta,
// Annotations, Size and Icons: changing them changes nothing inside
// Resources.
type ResourceDefinition struct {
	// URI is a concrete resource URI, compared byte for byte.
	URI string
	// URITemplate is a template whose path segments are literal or a whole
	// {name} variable, such as asset://project/{id}/thumbnail.
	URITemplate string
	// Name is the programmatic name; required.
	Name string
	// Title is an optional human-readable name.
	Title string
	// Description is optional.
	Description string
	// MIMEType is the optional MIME type of the bundle as listed; each read
	// item declares its own.
	MIMEType string
	// Meta is optional metadata: a JSON object listed as _meta. It must be
	// valid UTF-8 and hold no unpaired surrogate escape such as \ud800.
	Meta json.RawMessage
	// Annotations are optional client hints (audience, priority, last
	// modification time); nil lists none.
	Annotations *Annotations
	// Size is the raw size in bytes of a concrete resource, when known.
	// Templates have no size: setting it on one is a [ConfigError].
	Size *int64
	// Icons are optional icons for clients to display.
	Icons []Icon
}

// Resolver turns a selected request into a read plan. It may inspect bounded
// identity metadata (ids, versions, sizes) but must not read bodies or cause
// application effects. It must honor ctx and allow concurrent calls.
type Resolver interface {
	Resolve(ctx context.Context, m ResourceMatch) (ResourceReadPlan, error)
}

// ResolverFunc adapts a function to [Resolver].
type ResolverFunc func(ctx context.Context, m ResourceMatch) (ResourceReadPlan, error)

// Resolve calls f.
func (f ResolverFunc) Resolve(ctx context.Context, m ResourceMatch) (ResourceReadPlan, error) {
	return f(ctx, m)
}

// ResourceBinding registers one definition with its two required callbacks
// and its optional completion.
type ResourceBinding struct {
	Definition ResourceDefinition
	Resolver   Resolver
	Reader     Reader
	// Complete, when set, offers values for a variable of a template
	// definition (see [Resources.Complete]); nil offers none. It must
	// scope its answer to the caller in ctx exactly as the resolver
	// would: a value is offered only when the URI it completes would be
	// discoverable by the caller. It must honor ctx, allow concurrent
	// calls and read no bodies. It is a field, not a method the gateway
	// looks for on Resolver or Reader, so a host that wraps those keeps it
	// by copying the binding.
	Complete func(ctx context.Context, req CompletionRequest) (Completion, error)
}

// Visibility is a policy's decision about one target.
type Visibility struct {
	// Visible puts the target in the caller's selection. A hidden target
	// leaves no trace in a result.
	Visible bool
	// DiscloseIssueURI lets an issue about this target carry its URI.
	DiscloseIssueURI bool
}

// ResourcePolicy decides access with one question per pass over a whole
// plan. Both callbacks are required, must honor ctx (which carries whatever
// principal the host put there) and must allow concurrent calls. A policy
// that decides one target at a time is a [TargetPolicy] adapted with
// [PerTarget].
type ResourcePolicy struct {
	// Discover decides whether the caller may know of a definition; it
	// denies by returning a [FailureUnavailable] error, and any other error fails the
	// operation. Listing, completion and the first step of a read ask it,
	// and so does the recheck of a read in Decide's place when storage
	// decided every target with its body ([ReadResult].Decision).
	Discover func(ctx context.Context, d ResourceDefinition) error
	// Decide answers a [PolicyPass]: once before the body reads and once
	// for the final recheck, where it also stands in for Discover (the
	// recheck leaves out the items storage decided with their bodies). It
	// returns one decision per target of the pass, in order. A
	// [FailureUnavailable] error denies the whole read as a denied discovery does;
	// any other error, a panic, or a wrong number of decisions fails the
	// whole read as a policy failure. [Resources.Authorize] (subscriptions)
	// makes the [PassBeforeReads] call.
	Decide func(ctx context.Context, pass PolicyPass) ([]TargetDecision, error)
	// Key, when set, names the policy that answers the passes of a
	// definition: [NewResources] asks it once per definition, and the
	// gateway hands the answer to storage ([ReadRequest].Policy,
	// [ResourceMatch.Policy]). A decision storage takes with a body
	// ([ReadResult].Decision, [ResourceMatch.WithContent]) stands as the
	// recheck of its item only when its [TargetDecision].Policy is that
	// key; any other, and any decision while Key is nil or returns nil, is
	// dropped and the item is rechecked by Decide. A store's policy
	// constructor sets it; a policy that wraps or routes to others returns
	// the key of the one that answers d, and nil where it changes that
	// answer. A key must be comparable (a pointer, a string).
	Key func(d ResourceDefinition) any

	missing string // set by PerTarget: the nil callback of its TargetPolicy
}
