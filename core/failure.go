package core

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// FailureKind says why a whole operation (a read, a list page) produced no
// result. Callers branch on it; the public message of a [Failure] depends on
// the kind alone.
type FailureKind uint8

// The failure kinds. The zero value is not a valid kind.
const (
	// FailureUnavailable covers no match, discovery denied, and the requested
	// target hidden or read-denied: the caller cannot tell these apart.
	// Policies and readers return it (see [NewFailure]) to deny.
	FailureUnavailable FailureKind = iota + 1
	// FailureInvalidRequest is a malformed request URI or capture.
	FailureInvalidRequest
	// FailureAmbiguous means two or more templates matched the request.
	FailureAmbiguous
	// FailureInvalidPlan is a Resolve error (other than a
	// [FailureUnavailable] or [FailureOutage] one) or a plan that breaks the rules.
	FailureInvalidPlan
	// FailurePolicy is an operational policy failure (an error other than
	// [FailureUnavailable] and [FailureOutage], any other visibility error,
	// or a panic).
	FailurePolicy
	// FailureCanceled means the caller canceled the operation.
	FailureCanceled
	// FailureTimeout means the whole-read deadline passed.
	FailureTimeout
	// FailureSize means even the minimal report or the assembled result
	// cannot fit the configured response space, or a list description
	// cannot fit an empty page.
	FailureSize
	// FailureNoItems means visible items existed and none survived, and at
	// least one of them failed for another reason than being unavailable
	// (read_failed, timeout, invalid_content, budget_exceeded); a read
	// whose visible items were all unavailable fails as
	// [FailureUnavailable]. The failure carries the items' safe issues
	// ([Failure.Issues], [Failure.Report]).
	FailureNoItems
	// FailureInvalidCursor is a list cursor that is malformed, tampered,
	// expired, or issued for another method, registry or scope.
	FailureInvalidCursor
	// FailureOutage means storage that planning or a policy pass needed was
	// unreachable or failing (a lost connection, a terminated backend, a 5xx
	// answer, throttling). It is the one whole-read kind that is always
	// retryable ([Failure.Retryable]): the same request may succeed in a
	// moment. Stores signal it with [NewFailure].
	FailureOutage
)

var kindNames = [...]string{
	FailureUnavailable:    "unavailable",
	FailureInvalidRequest: "invalid request",
	FailureAmbiguous:      "ambiguous match",
	FailureInvalidPlan:    "invalid plan",
	FailurePolicy:         "policy failure",
	FailureCanceled:       "canceled",
	FailureTimeout:        "timeout",
	FailureSize:           "size",
	FailureNoItems:        "no item survived",
	FailureInvalidCursor:  "invalid cursor",
	FailureOutage:         "storage outage",
}

var kindMessages = [...]string{
	FailureUnavailable:    "resource unavailable",
	FailureInvalidRequest: "invalid resource request",
	FailureAmbiguous:      "resource request matches more than one template",
	FailureInvalidPlan:    "resource could not be planned",
	FailurePolicy:         "resource policy failed",
	FailureCanceled:       "resource operation canceled",
	FailureTimeout:        "resource operation timed out",
	FailureSize:           "resource response does not fit the configured size",
	FailureNoItems:        "no resource item could be read",
	FailureInvalidCursor:  "invalid or expired cursor",
	FailureOutage:         "resource storage is temporarily unavailable",
}

// String returns a short lowercase name for the kind.
func (k FailureKind) String() string {
	return enumText(kindNames[:], k, "FailureKind")
}

// enumText is texts[v], or typ(v) when v has no text: the String of the
// module's enumerations that a table names.
func enumText[T ~uint8](texts []string, v T, typ string) string {
	if int(v) < len(texts) && texts[v] != "" {
		return texts[v]
	}
	return fmt.Sprintf("%s(%d)", typ, uint8(v))
}

// Failure is the error of a whole operation. Its Error text is a fixed public
// message chosen by Kind, safe to show a client; the private cause, which may
// hold storage or policy details, is reachable only through Unwrap (for logs).
//
// A [FailureNoItems] failure of a read also carries the safe part of what a
// partial result would have reported about its items ([Failure.Issues],
// [Failure.IssuesOmitted], [Failure.Report]); a [FailureOutage] carries
// only that it is retryable, and no other kind carries any detail.
type Failure struct {
	Kind    FailureKind
	cause   error
	issues  []ResourceIssue // FailureNoItems: the detailed issues, at most MaxIssues
	omitted int             // FailureNoItems: visible failures without a detailed issue
	retry   bool            // FailureNoItems: some visible item failed as read_failed
}

// NewFailure returns a [Failure] of kind with a private cause (which may be
// nil). It is how every failure is made: a policy callback or a reader
// denies with NewFailure([FailureUnavailable], cause); a resolver, a policy
// or a store's error mapping returns NewFailure([FailureOutage], cause)
// when storage is unreachable or failing, so that the gateway can tell a
// retryable outage from a plan that is wrong (from a body reader it means,
// for one item, what any other reader error means: the retryable
// read_failed).
func NewFailure(kind FailureKind, cause error) *Failure {
	return &Failure{Kind: kind, cause: cause}
}

// callbackFailure is the one rule for the whole-operation failure of a
// resolver or policy error that is not a denial: [FailureOutage] when the
// callback said its storage is out (a [FailureOutage] is the first *[Failure] in
// err's chain), else kind ([FailureInvalidPlan] for a resolver,
// [FailurePolicy] for a policy callback). Denials ([FailureUnavailable]) are
// decided by each caller first, because what a denial means differs by
// callback.
func callbackFailure(kind FailureKind, err error) *Failure {
	if KindOf(err) == FailureOutage {
		kind = FailureOutage
	}
	return NewFailure(kind, err)
}

// Issues returns the detailed issues of a [FailureNoItems] failure, in plan
// order: at most MaxIssues of them, each with its fixed code and message
// and, only where the final visibility decision set DiscloseIssueURI, the
// item's URI; never a private cause. Other kinds return nil.
func (f *Failure) Issues() []ResourceIssue { return append([]ResourceIssue(nil), f.issues...) }

// IssuesOmitted counts the visible failures of a [FailureNoItems] failure
// that have no detailed issue; 0 for other kinds.
func (f *Failure) IssuesOmitted() int { return f.omitted }

// Retryable reports whether the same request may succeed if made again:
// always for [FailureOutage]; for [FailureNoItems] when some visible item
// failed as read_failed (detailed or omitted); never for other kinds.
// Nothing is retried automatically.
func (f *Failure) Retryable() bool {
	return f.Kind == FailureOutage || (f.Kind == FailureNoItems && f.retry)
}

// Report returns the safe detail of the failure as compact JSON, for an
// adapter to send beside the public message (the mcpsdk adapter puts it in
// the JSON-RPC error's data), or nil when the kind carries none:
//
//	FailureNoItems: {"retryable":true,"issues":[{"code":"read_failed","message":"The resource could not be read.","retryable":true}],"issuesOmitted":0}
//	FailureOutage:  {"retryable":true}
//
// The issues are those of [Failure.Issues], in the same shape as a partial
// result's report; a "uri" appears only where disclosure allowed it.
func (f *Failure) Report() json.RawMessage {
	switch f.Kind {
	case FailureOutage:
		return json.RawMessage(`{"retryable":true}`)
	case FailureNoItems:
	default:
		return nil
	}
	b := append([]byte(nil), `{"retryable":`...)
	b = strconv.AppendBool(b, f.Retryable())
	b = append(b, `,"issues":`...)
	b = appendIssues(b, f.issues)
	b = append(b, `,"issuesOmitted":`...)
	b = strconv.AppendInt(b, int64(f.omitted), 10)
	return append(b, '}')
}

// Error returns the fixed public message of the failure's kind.
func (f *Failure) Error() string {
	if int(f.Kind) < len(kindMessages) && kindMessages[f.Kind] != "" {
		return kindMessages[f.Kind]
	}
	return "resource operation failed"
}

// Unwrap returns the private cause.
func (f *Failure) Unwrap() error { return f.cause }

// Is reports whether target is a *[Failure] of the same kind, so that
// errors.Is(err, &core.Failure{Kind: core.FailureTimeout}) works.
func (f *Failure) Is(target error) bool {
	t, ok := target.(*Failure)
	return ok && t.Kind == f.Kind
}

// KindOf returns the kind of the first *[Failure] in err's chain, or 0.
func KindOf(err error) FailureKind {
	var f *Failure
	if errors.As(err, &f) {
		return f.Kind
	}
	return 0
}

func isUnavailable(err error) bool { return KindOf(err) == FailureUnavailable }

// ConfigError reports a rejected argument of [NewResources], a constructor, or
// [WithResourceLimits]. It is meant for the host developer, never for a client:
// it names the definition and the rule that was broken. Path is the one
// address of the mistake; the words of Error are derived from it.
type ConfigError struct {
	// Definition is the index of the offending binding, or -1.
	Definition int
	// Name is the offending definition's URI, template or name, if any.
	Name string
	// Path locates the mistake by structure: the field or limit of a
	// definition or a constructor, or a store's source, binding, field,
	// key and column, for a caller that maps it back to where it was
	// written (a configuration file).
	Path ConfigPath
	// Reason says which rule was broken.
	Reason string
	// Err is the underlying error, such as the URI rule a definition broke, or nil.
	Err error
}

// ConfigPath locates a mistake in what a store or [NewResources] was given:
// the source, the binding (by its definition's name), the Go field of the
// binding, options or limits that holds it (such as "Plan", "ItemURI",
// "Prefix", "Role" or "MaxItems"), the key of that field when it is a map,
// and the result column. Empty parts are not part of the path.
type ConfigPath struct {
	Source  string
	Binding string
	Field   string
	Key     string
	Column  string
}

// Reject returns the *[ConfigError] of a mistake at p, about no binding
// index, as stores and other constructors report them: reason is the rule
// it breaks, err the underlying error or nil.
func (p ConfigPath) Reject(reason string, err error) *ConfigError {
	return &ConfigError{Definition: -1, Path: p, Reason: reason, Err: err}
}

// String is p in words, as [ConfigError.Error] prints it: `source S`,
// `binding "B"`, the field (a statement by its kind: plan, bundle, body,
// decide, grant, `complete "K"`; any other field by its Go name, with
// [K] after it for a key), and `column C`, joined by ": ".
func (p ConfigPath) String() string {
	var parts []string
	if p.Source != "" {
		parts = append(parts, "source "+p.Source)
	}
	if p.Binding != "" {
		parts = append(parts, "binding "+strconv.Quote(p.Binding))
	}
	switch {
	case p.Field == "Complete":
		parts = append(parts, "complete "+strconv.Quote(p.Key))
	case p.Field == "Plan" || p.Field == "Bundle" || p.Field == "Body" || p.Field == "Decide" || p.Field == "Grant":
		parts = append(parts, strings.ToLower(p.Field))
	case p.Field != "" && p.Key != "":
		parts = append(parts, p.Field+"["+p.Key+"]")
	case p.Field != "":
		parts = append(parts, p.Field)
	}
	if p.Column != "" {
		parts = append(parts, "column "+p.Column)
	}
	return strings.Join(parts, ": ")
}

// Unwrap returns the underlying error, if any.
func (e *ConfigError) Unwrap() error { return e.Err }

// Error describes the rejected configuration.
func (e *ConfigError) Error() string {
	where := e.Path.String()
	switch {
	case e.Definition >= 0 && e.Name != "":
		return fmt.Sprintf("core: binding %d (%q): %s: %s", e.Definition, e.Name, where, e.Reason)
	case e.Definition >= 0:
		return fmt.Sprintf("core: binding %d: %s: %s", e.Definition, where, e.Reason)
	case e.Name != "" && where != "":
		return fmt.Sprintf("core: %q: %s: %s", e.Name, where, e.Reason)
	case e.Name != "":
		return fmt.Sprintf("core: %q: %s", e.Name, e.Reason)
	case where != "":
		return fmt.Sprintf("core: %s: %s", where, e.Reason)
	}
	return "core: " + e.Reason
}

func configErr(field, reason string) *ConfigError {
	return ConfigPath{Field: field}.Reject(reason, nil)
}

// definitionError is the *ConfigError of a mistake at field of d, the
// definition of binding i, which it names by its URI, else its template,
// else its name.
func definitionError(i int, d ResourceDefinition, field, reason string, err error) *ConfigError {
	ce := ConfigPath{Field: field}.Reject(reason, err)
	ce.Definition, ce.Name = i, cmp.Or(d.URI, d.URITemplate, d.Name)
	return ce
}

// TooLargeError is what a reader returns when the stored item is larger
// than its [ReadItem] Limit (or what the request's Budget leaves) allowed
// it to fetch. Size is the stored size in bytes, or -1 when the reader
// does not know it.
type TooLargeError struct{ Size int64 }

// Error describes the oversized item.
func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return "resource item exceeds the read limit"
	}
	return fmt.Sprintf("resource item of %d bytes exceeds the read limit", e.Size)
}
