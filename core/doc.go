// Package core is the gateway that exposes host storage as MCP resources:
// it selects a registered definition for a request URI, asks the binding to
// plan the read, authorizes every planned item under a host policy before and
// after the body reads, admits what fits the configured response space, and
// reports what is missing in a version-one report.
//
// A host registers [ResourceBinding] values (a [ResourceDefinition] with a
// [Resolver] and a [Reader]) and a [ResourcePolicy] with [NewResources], then calls
// Read, List and ListTemplates; an adapter (such as this module's go-sdk
// adapter) serves them over MCP. Store readers (Postgres, S3) implement
// Reader: they bound their storage read by each [ReadItem]'s Limit,
// enforce current access and the planned identity in the storage request
// itself, and return a [FailureUnavailable] error or a *[TooLargeError].
//
// A policy answers one [PolicyPass] over the whole plan per decision
// ([ResourcePolicy].Decide); [PerTarget] adapts one that decides target by
// target. A plan item may name a stored object ([ObjectRef]); the gateway
// hands it to the reader registered for its source with
// [WithObjectSource], and the policy decides it like any other item.
//
// A policy may answer the decision before the reads ([PassBeforeReads])
// from data its resolver fetched in the same request, such as grant flags carried in a target's private authorization
// data, and so spare a storage round trip at the risk of deciding on state
// as old as the plan. The final recheck ([PassRecheck]) must ask storage for
// the current state, because it is what stands between a grant revoked
// during the reads and a body in the result.
//
// Storage that evaluates the policy itself can take that answer with the
// body, in the same snapshot, and spare the recheck's round trip: a
// [ReadResult] may carry the item's Decision, and a plan item may carry its
// content and decision ([ResourceMatch.WithContent]), which the gateway
// admits with no read at all. The recheck then asks Decide only about the
// targets without such a decision, and when none is left it is a Discover
// call. Such a decision must name the policy in force
// ([ResourcePolicy].Key, which the gateway hands storage as
// [ReadRequest].Policy and [ResourceMatch.Policy]); one naming no key or
// another key is dropped, and Decide is asked.
//
// Errors of whole operations are *[Failure] values whose Error text is a fixed,
// client-safe message; private causes stay behind Unwrap. Configuration
// errors are *[ConfigError] values meant for the host developer.
//
// The package depends on the standard library only.
package core
