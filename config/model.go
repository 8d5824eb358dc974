package config

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// File is a loaded and checked resources file.
type File struct {
	// Version is the file format's version; 1 is the only one.
	Version int `yaml:"version" schema:"required,const=1"`
	// Sources are the databases and buckets, in file order.
	Sources []Source `yaml:"sources" keyed:"" schema:"required,min=1"`
	// Policy decides who may see and read what: "database"
	// ([Policy].Database), the policy of every PostgreSQL source without
	// one of its own, or one decide statement, the policy of the source it
	// names. It may be left out when every PostgreSQL source with resources
	// has its own ([PostgresSource].Policy). A policy decides only the reads
	// of its own source's resources; S3 resources are decided by their
	// grant ([Resource].Grant) or are public.
	Policy *Policy `yaml:"policy"`
	// Resources are the resource definitions, in file order.
	Resources []Resource `yaml:"resources" keyed:"" schema:"required,min=1"`
	// Limits override the gateway's limits; nil keeps every default.
	Limits *Limits `yaml:"limits"`
	// OAuth, when set, makes the server an OAuth 2.1 resource server for
	// an identity provider's access tokens, as serve's --oauth-* flags do.
	OAuth *OAuth `yaml:"oauth"`
	// Audit, when set, records an audit trail, as serve's --audit-* flags
	// do (docs/audit.md).
	Audit *Audit `yaml:"audit"`

	// Name is the name the file was loaded under, as errors print it.
	Name  string `yaml:"-"`
	Spans Spans  `yaml:"-"`

	// lines are the file's lines, for positions inside a statement.
	lines []string
}

// namePattern is what the name of a source or resource matches, as the
// file's check and its schema (gendoc reads it here) say.
const namePattern = `^[A-Za-z][A-Za-z0-9_.-]{0,63}$`

// secretRefPattern is what a secret that is never written in the file
// holds as written: exactly one ${NAME} reference, or ${NAME:-} (empty when
// unset), since a default could only be a secret written in the file. The
// file's check and its schema (gendoc reads it here) say so.
const secretRefPattern = `^\$\{[A-Za-z_][A-Za-z0-9_]*(:-)?\}$`

// Spans records where each key of one mapping of the file was written.
type Spans struct {
	self  Position
	keys  map[string]Position
	nodes map[string]scalarAt // scalar values, for positions inside them
}

// scalarAt is where a scalar value starts and how it was written: what a
// position inside it needs of its YAML node, without holding the node (and
// its copy of the text) for the life of the file.
type scalarAt struct {
	line, column int
	style        yaml.Style
}

func scalarOf(n *yaml.Node) scalarAt { return scalarAt{n.Line, n.Column, n.Style} }

// start is where the mapping itself starts (for a named entry, its name).
func (s Spans) start() Position { return s.self }

// of is where key's value was written, or start when the key is absent.
// Keys of nested plain mappings are joined with dots: "completion.tenant".
func (s Spans) of(key string) Position {
	if p, ok := s.keys[key]; ok {
		return p
	}
	return s.self
}

// has reports whether key was written with a value: a [Secret] or [Env]
// field whose ${NAME} expands to nothing counts as absent.
func (s Spans) has(key string) bool { _, ok := s.keys[key]; return ok && !s.blank(key) }

// blank reports whether key was written but its ${NAME} references
// expanded to nothing.
func (s Spans) blank(key string) bool { _, ok := s.keys[key+":empty"]; return ok }

func (s *Spans) empty(key string) { s.keys[key+":empty"] = s.keys[key] }

// Source is one named database or bucket: exactly one of Postgres and S3.
type Source struct {
	// Name is the source's key under sources.
	Name string `yaml:"-"`
	// Postgres is a PostgreSQL database.
	Postgres *PostgresSource `yaml:"postgres" schema:"oneof=kind"`
	// S3 is a bucket of an S3-compatible server.
	S3 *S3Source `yaml:"s3" schema:"oneof=kind"`

	Spans Spans `yaml:"-"`
}

// PostgresSource is a PostgreSQL database.
type PostgresSource struct {
	// URL is the connection URL (postgres://user:${PASSWORD}@host:5432/db);
	// a password must come from the environment.
	URL Secret `yaml:"url" schema:"required" store:"db"`
	// Role is the role every statement runs as, with the principal set in
	// mcp.principal; the URL's login must be a member of it. Required
	// unless LoginRole is set.
	Role string `yaml:"role" schema:"ref=role"`
	// ListenURL is a direct URL for the one connection that LISTENs for
	// changes, when URL goes through a transaction-pooling PgBouncer.
	// Empty means URL.
	ListenURL Secret `yaml:"listen_url"`
	// Standbys are the URLs of hot standbys of the database (streaming
	// replicas, a managed PostgreSQL's read replicas), each ${NAME}
	// expanded as url is, each its own pool under the same role. Only the
	// bodies of reads go there, pinned to the version the primary planned
	// (a body a standby does not hold at that version is read on the
	// primary), and only where a decide statement of this source is the
	// policy: plans, decisions, grants, listing, completion, the recheck
	// and LISTEN stay on url. A standby that lags more than
	// standby_max_lag, or is down, is skipped; readiness does not depend
	// on them.
	Standbys []Secret `yaml:"standbys"`
	// StandbyMaxLag is the replay lag past which a standby is not used
	// until it catches up; zero keeps the store's default (5s).
	StandbyMaxLag Duration `yaml:"standby_max_lag"`
	// LoginRole keeps the URL's login role instead of switching to Role
	// (which must then be absent); the login role must not bypass
	// row-level security.
	LoginRole bool `yaml:"login_role"`
	// StatementTimeout bounds each statement when the request has no
	// deadline, and each statement of the start-up check (which has no
	// bound of its own as a whole, however many statements the file
	// holds); zero keeps the store's default, 10s.
	StatementTimeout Duration `yaml:"statement_timeout"`
	// MaxPlanItems bounds the items one plan or bundle statement may
	// plan (a row with an object is two), at most limits.max_plan_items;
	// zero keeps that limit. A bundle with more is cut there and read as a
	// partial bundle with a budget_exceeded issue.
	MaxPlanItems int `yaml:"max_plan_items" schema:"min=0"`
	// Exempt lets the tables, views and functions it names, each by its
	// qualified name as the catalog spells it (public.tenants), through the
	// proof that the database enforces access (postgres Source.Check), with
	// the reason each may be read without row-level security (a lookup
	// table of tenant names, say). check prints every exemption and the
	// resources whose statements read one. A name that is no table, view
	// or function of the database is refused.
	Exempt map[string]string `yaml:"exempt" schema:"items=reason"`
	// Policy decides the reads of this source's resources, and of no other
	// source's: "database" or a decide statement run here (its source key
	// left out). Nil takes the file's policy when that is "database" or
	// names this source; a source with resources and neither is refused.
	Policy *Policy `yaml:"policy"`

	Spans Spans `yaml:"-"`
}

// S3Source is one bucket of an S3-compatible server.
type S3Source struct {
	// Bucket is the bucket's name.
	Bucket Env `yaml:"bucket" schema:"required"`
	// Optional lets Bucket expand to nothing, which leaves the source out:
	// the resources that read from it alone are not served, and the others
	// serve their rows without its objects. For a file served with and
	// without a bucket (the reference server's --bucket).
	Optional bool `yaml:"optional"`
	// Endpoint is the server's base URL with scheme and without
	// credentials; empty means AWS S3.
	Endpoint Env `yaml:"endpoint"`
	// Region is the signing region; empty means the default.
	Region Env `yaml:"region"`
	// PathStyle addresses the bucket as ENDPOINT/BUCKET/KEY.
	PathStyle bool `yaml:"path_style" store:"UsePathStyle"`
	// AccessKey and SecretKey are static credentials, both or neither
	// (neither: the AWS default chain). SecretKey must be a ${NAME}.
	AccessKey Secret `yaml:"access_key" store:"AccessKeyID"`
	// SecretKey is the secret of AccessKey.
	SecretKey Secret `yaml:"secret_key" schema:"ref=secretRef" store:"SecretAccessKey"`
	// SessionToken is the optional token of temporary credentials.
	SessionToken Secret `yaml:"session_token" schema:"ref=secretRef"`
	// PollInterval is how often the objects that subscriptions depend on
	// are asked for their identity (one HEAD each, at most
	// s3store.DefaultPollHeadsPerSecond a second), so that a subscriber
	// of an S3 resource is told when its object changes, appears or goes;
	// zero means s3store.DefaultPollInterval (30s).
	PollInterval Duration `yaml:"poll_interval"`

	Spans Spans `yaml:"-"`
}

// Policy is the file's access policy: either the word "database"
// (Database), or one statement run on a PostgreSQL source as its role with
// the caller set, that decides every target of a read at once.
type Policy struct {
	// Database is set by writing policy: database. The plan and body
	// statements' row-level security is then the only gate, and every
	// caller may discover every definition.
	Database bool `yaml:"-"`
	// Source names the PostgreSQL source the statement runs on (and
	// whose resources it decides); left out under a source's own policy.
	Source string `yaml:"source" schema:"ref=name"`
	// Decide is bound with $keys (text[]: the keys of the rows a plan of
	// this source names, an object item by its row's key) and optionally
	// $binding (the resource's name), $captures (the request URI's decoded
	// captures as a JSON object: ($captures::jsonb ->> 'tenant') is "acme"
	// for doc://tenants/%61cme/...) and $principal, and returns rows of key,
	// visible, read and optionally discover and disclose; a key without a
	// row is hidden.
	Decide string `yaml:"decide" schema:"required,ref=sql" store:"Decide"`
	// Description is for the people who read the file.
	Description string `yaml:"description"`

	Spans Spans `yaml:"-"`
}

// policyDatabase is the policy value that lets the database decide.
const policyDatabase = "database"

// Resource is one resource definition: a URI or a URI template, the
// source that serves it, and how.
type Resource struct {
	// Name is the resource's key under resources, listed as its name.
	Name string `yaml:"-"`
	// URI is a concrete resource URI; exactly one of URI and Template.
	URI string `yaml:"uri" schema:"oneof=address"`
	// Template is a URI template of whole-segment {captures}. For an S3
	// key family its last segment is "...": one more segment per depth,
	// up to MaxDepth, captured as {k1}, {k2}, ...
	Template string `yaml:"template" schema:"oneof=address"`
	// Title is listed with the resource.
	Title string `yaml:"title"`
	// Description says what the resource is.
	Description string `yaml:"description"`
	// Scopes, when set, are OAuth scopes a caller's token must all grant
	// for the resource to exist for it: without them it is not listed,
	// completed or subscribed to, and a read is unavailable, as for a URI
	// nothing serves. They gate requests for the resource's own URIs, not
	// its items when another resource's bundle plans them.
	Scopes []string `yaml:"scopes" schema:"items=scope"`
	// MIMEType is the MIME type listed for the resource; each item read
	// declares its own.
	MIMEType string `yaml:"mime_type" schema:"ref=mediaType"`
	// Annotations are the client hints listed with the resource.
	Annotations *Annotations `yaml:"annotations"`
	// Source names the source that serves the resource.
	Source string `yaml:"source" schema:"required,ref=name"`
	// Public says every caller with a valid token may read the resource,
	// and only when written as public: true. For S3 it serves every object
	// under the prefix with no statement (instead of a grant). For
	// PostgreSQL it lets the resource's statements answer alike for every
	// caller: without it, check refuses a plan, bundle, body or completion
	// statement that binds no $principal and reads no table whose
	// row-level security depends on the caller.
	Public bool `yaml:"public"`

	// PostgresResource holds the keys of a resource of a PostgreSQL
	// source, S3Resource those of an S3 source: written beside the keys
	// above, each checked by its store.
	PostgresResource `yaml:",inline"`
	S3Resource       `yaml:",inline"`

	Spans Spans `yaml:"-"`
}

// PostgresResource is the part of a resource that a PostgreSQL source
// serves it by: postgres.SQLBinding's fields, as the file writes them.
type PostgresResource struct {
	// Plan (PostgreSQL) selects the one item a request names, identity
	// only, in columns named key, version, mime and optionally name,
	// title, size, text, object_key, object_etag, object_version_id,
	// object_size and object_mime; visible, read and disclose (the policy's
	// answer); and content, the item's content inline (up to 8 KiB, with
	// visible and read: a read that plans it runs no body statement for
	// it, but body is still required: it reads the item when the content
	// is NULL or over 8 KiB). An object's MIME type is object_mime when
	// the row gives one, else the type its key's extension names, else
	// application/octet-stream; the Content-Type it was stored with is
	// never consulted. Its $names are the template's captures (every one
	// used) and $principal.
	Plan string `yaml:"plan" schema:"ref=sql"`
	// Bundle (PostgreSQL) selects the items of a bundle, one per row, in
	// the columns of Plan plus those ItemURI names.
	Bundle string `yaml:"bundle" schema:"ref=sql"`
	// ItemURI (with Bundle) is each row's item URI: literal text and
	// {column} placeholders, each replaced by that column's value as one
	// escaped path segment.
	ItemURI string `yaml:"item_uri"`
	// Anchored (with Bundle) says the bundle statement selects from the
	// bundle's own row (a project, a tenant) LEFT JOINed with its items:
	// no row at all is unavailable, like a plan's missing row, and a row
	// with a NULL key is a bundle without items. Without it, no row is an
	// empty bundle.
	Anchored bool `yaml:"anchored"`
	// Body (PostgreSQL) reads one planned item by $key (and optionally
	// $version, $principal): columns body and optionally version. Every
	// plan or bundle needs one, even one that returns content, except a
	// plan with an object and no body, which serves the row's object alone.
	Body string `yaml:"body" schema:"ref=sql"`
	// Completion (PostgreSQL) maps a capture to the statement that
	// completes it: $prefix, optionally $limit, $principal and the other
	// captures; one column, value.
	Completion map[string]string `yaml:"completion" schema:"items=sql" store:"Complete"`
	// Object serves the S3 object that a plan row's object_key references
	// as a second item of the read; with a Plan and no Body, the object
	// alone, as the request URI (register it under the object items' URI,
	// such as doc://tenants/{tenant}/documents/{id}/object).
	Object *ObjectRef `yaml:"object"`
	// Listen (PostgreSQL) is a channel whose NOTIFY payloads name changed
	// items of this resource, for subscriptions: KEY (as the plan's key
	// column renders it), PREFIX/* (every key under PREFIX/) or * (every
	// item); every payload also rechecks the channel's bundles. One
	// connection per source LISTENs on all of its resources' channels
	// (postgres Source.Listener), through listen_url when it is set.
	Listen string `yaml:"listen" schema:"ref=channel"`
}

// S3Resource is the part of a resource that an S3 source serves it by:
// s3store.KeyFamily's, KeyListing's and Bucket.Binding's fields, as the file
// writes them.
type S3Resource struct {
	// Prefix (S3) is the key prefix: "" or whole segments ending in '/'.
	// For a key family (a Template ending in "/...") it captures exactly
	// the template's captures; otherwise it is literal and the template's
	// captures, joined by '/', follow it.
	Prefix string `yaml:"prefix"`
	// MaxDepth (S3, key family) is how many segments "..." stands for at
	// most, 1 to 32 (s3store.MaxKeyDepth).
	MaxDepth int `yaml:"max_depth" schema:"min=1,max=s3store.MaxKeyDepth"`
	// Grant (S3) is the statement that says which objects the caller may
	// read: every S3 resource needs it, unless Public. A key it does not
	// grant is unavailable with no request to S3.
	Grant *Grant `yaml:"grant"`
	// List (S3) names the key family (a resource of the same source whose
	// template ends in "/...") whose objects this resource lists as a
	// bundle: its template captures exactly the family's captures, which
	// fill the family's prefix, and each item is the object's URI in the
	// family, typed and read as a read of that URI is. It is gated as the
	// family is: public when the family is, else by the family's grant,
	// asked once about the listed prefix before the LIST, which must then
	// return prefixes and not use $key or $k1, $k2, ... (an object under a
	// granted prefix is listed; one whose URI would be over
	// limits.max_uri_bytes is left out). At most limits.max_plan_items keys are
	// listed, in key order (a prefix holding more is a partial bundle with
	// a budget issue for the keys left out), and the gateway admits
	// limits.max_items of them with a budget issue for the rest.
	List string `yaml:"list" schema:"ref=name"`
}

// Grant is the statement that grants an S3 resource's objects
// (postgres Source.KeyGrant): run on a PostgreSQL source as its role with
// the caller set, it returns the keys the caller may read in one column
// key, or key prefixes ending in '/' in one column prefix. Its parameters
// are $key (the decoded key the URI names), $binding (the resource's name),
// $principal and the template's decoded captures (for a key family also
// $k1, $k2, ... for the key's segments).
type Grant struct {
	// Source names the PostgreSQL source the statement runs on.
	Source string `yaml:"source" schema:"required,ref=name"`
	// Keys is the statement.
	Keys string `yaml:"keys" schema:"required" store:"Grant"`

	Spans Spans `yaml:"-"`
}

// Annotations are the client hints listed with a resource.
type Annotations struct {
	// Audience is "user", "assistant" or both.
	Audience []string `yaml:"audience" schema:"items=audience,unique"`
	// Priority is from 0 (least) to 1 (most).
	Priority *float64 `yaml:"priority" schema:"min=0,max=1"`
	// LastModified is an RFC 3339 time.
	LastModified string `yaml:"last_modified"`

	Spans Spans `yaml:"-"`
}

// ObjectRef says where the objects that plan rows reference are served
// from.
type ObjectRef struct {
	// Source names the S3 source that holds the objects.
	Source string `yaml:"source" schema:"required,ref=name"`
	// URI is the object item's URI, as Resource.ItemURI: literal text and
	// {column} placeholders of the plan row. Empty means the row item's
	// URI followed by "/object".
	URI string `yaml:"uri"`
	// Unpinned serves the object of a row that records neither
	// object_etag nor object_version_id as it is when read, unpinned.
	// Without it every object read is pinned: such a row's object is
	// pinned by one HEAD after the decision and read If-Match that ETag
	// (an object replaced in between is read_failed, retryable), so a
	// read costs two S3 requests. check prints an unpinned resource's
	// kind with ", unpinned".
	Unpinned bool `yaml:"unpinned" store:"Unpinned"`

	Spans Spans `yaml:"-"`
}

// Limits override the gateway's limits (core.ResourceLimits); zero or
// absent keeps a default. Each field is the core.ResourceLimits field of the
// same name; sizes are bytes or strings such as "4MiB", times "30s".
type Limits struct {
	MaxURIBytes             int      `yaml:"max_uri_bytes" schema:"min=51"`
	MaxPlanItems            int      `yaml:"max_plan_items" schema:"min=1"`
	MaxItems                int      `yaml:"max_items" schema:"min=1"`
	MaxItemBytes            ByteSize `yaml:"max_item_bytes"`
	MaxResponseBytes        ByteSize `yaml:"max_response_bytes"`
	MaxResponseEncodedBytes ByteSize `yaml:"max_response_encoded_bytes"`
	ReportPayloadBytes      ByteSize `yaml:"report_payload_bytes"`
	ReportEncodedBytes      ByteSize `yaml:"report_encoded_bytes"`
	MaxIssues               int      `yaml:"max_issues" schema:"min=0"`
	ReadTimeout             Duration `yaml:"read_timeout"`
	ItemTimeout             Duration `yaml:"item_timeout"`
	ListPageSize            int      `yaml:"list_page_size" schema:"min=1"`
	MaxListPageSize         int      `yaml:"max_list_page_size" schema:"min=1"`
	ListPageBytes           ByteSize `yaml:"list_page_bytes"`

	Spans Spans `yaml:"-"`
}

// OAuth configures the server as an OAuth 2.1 resource server: it accepts
// the issuer's JWT access tokens for its resource URI (package mcpsdk/oauth
// says what is checked), or any token by introspection, and passes the
// named claims to storage as mcp.claims. Each field is the serve flag
// --oauth-NAME of the same name (audiences: --oauth-audience;
// introspection: --oauth-introspection-url, --oauth-client-id and
// --oauth-client-secret).
type OAuth struct {
	// Issuer is the authorization server's issuer identifier. Required.
	Issuer Env `yaml:"issuer" schema:"required"`
	// Resource is the server's canonical resource URI, the audience its
	// tokens must carry unless audiences is set. Required.
	Resource Env `yaml:"resource" schema:"required"`
	// Audiences, when set, replace the resource URI as the values of
	// which a token's aud must hold one (at most 16), for issuers that put
	// another identifier there (Entra ID: the application ID).
	Audiences []string `yaml:"audiences" schema:"items=claim,unique"`
	// Scopes are required of every token.
	Scopes []string `yaml:"scopes" schema:"items=scope"`
	// JWKSURL is where the issuer's keys are, instead of discovery.
	JWKSURL Env `yaml:"jwks_url"`
	// PrincipalClaim names the claim that is the principal; empty: sub.
	PrincipalClaim string `yaml:"principal_claim" schema:"minLength=1"`
	// Claims are the token claims passed to storage as mcp.claims; a name
	// with dots that is not a claim is a path (realm_access.roles).
	Claims []string `yaml:"claims" schema:"items=claim"`
	// ClockSkew is the tolerance on exp, nbf and iat; zero: 30s.
	ClockSkew Duration `yaml:"clock_skew"`
	// Introspection, when set, verifies every token (opaque ones too) by
	// RFC 7662 introspection instead of with the issuer's keys.
	Introspection *OAuthIntrospection `yaml:"introspection"`

	Spans Spans `yaml:"-"`
}

// OAuthIntrospection is the RFC 7662 introspection endpoint that verifies
// the tokens of the oauth section, and the client this server
// authenticates to it as (HTTP Basic).
type OAuthIntrospection struct {
	// URL is the introspection endpoint (Hydra's:
	// http://hydra-admin:4445/admin/oauth2/introspect). Required.
	URL Env `yaml:"url" schema:"required"`
	// ClientID is the client id of this server at the endpoint. Required.
	ClientID Env `yaml:"client_id" schema:"required"`
	// ClientSecret is its secret, from the environment. Required.
	ClientSecret Secret `yaml:"client_secret" schema:"required,ref=secretRef"`

	Spans Spans `yaml:"-"`
}

// Audit is the audit trail (docs/audit.md): where every request that
// touches resources is recorded, as serve's --audit-* flags set it. Exactly
// one of File and Postgres is required.
type Audit struct {
	// File is where one JSON line per event goes ("-": stdout), rotated by
	// size.
	File Env `yaml:"file"`
	// Postgres is the URL of the database whose table mcpres.audit_events
	// (migration 4) holds the events, written as the role mcpres_auditor.
	Postgres Secret `yaml:"postgres"`
	// OnFailure is refuse (the default: serve nothing whose event was not
	// written) or continue (serve, and count the dropped events).
	OnFailure string `yaml:"on_failure" schema:"minLength=1"`
	// MaxFileBytes rotates File past this size; zero: 64MiB.
	MaxFileBytes ByteSize `yaml:"max_file_bytes"`
	// KeepFiles is how many rotated files stay; zero: 5.
	KeepFiles int `yaml:"keep_files" schema:"min=0"`
	// Queue bounds the events waiting for the sink; zero: 4096.
	Queue int `yaml:"queue" schema:"min=0"`
	// Batch bounds the events of one write; zero: 256.
	Batch int `yaml:"batch" schema:"min=0"`
	// Timeout bounds one write and a read's wait for its event; zero: 2s.
	Timeout Duration `yaml:"timeout"`

	Spans Spans `yaml:"-"`
}

// Env is the value of a field that differs between deployments but is no
// secret (a bucket name, an endpoint): ${NAME} references are expanded from
// the environment as in a [Secret], and the value may be printed.
type Env string

// Duration is a time.Duration written as Go writes it: "30s", "1m30s".
type Duration time.Duration

// ByteSize is a count of bytes written as a number or with a binary
// suffix: 512, "64KiB", "4MiB", "1GiB".
type ByteSize int64
