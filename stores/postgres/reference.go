package postgres

// The reference schema (package migrations: projects, assets and grants
// under row-level security) as SQL statements of the generic machinery:
// [ReferenceBindings] and [ReferenceDecide] are what [Store] serves through
// a [Source], and what examples/reference/resources.yaml says in YAML for
// the reference server (a test in package config keeps the two equal,
// statement for statement).

// URIs of the reference schema. Project and asset ids are unreserved URI
// characters (the schema checks it), so they appear unescaped.
const (
	// IndexURI is the concrete resource that lists the projects the caller
	// may discover, as one application/json item.
	IndexURI = "asset://projects"
	// ProjectTemplate is a bundle of the fields of every asset of a project
	// that the caller may discover, in id order.
	ProjectTemplate = "asset://project/{project}"
	// FieldsTemplate is one asset's fields as application/json; with
	// [Options].Objects, followed by the object its row references, if any
	// (the joined bundle).
	FieldsTemplate = "asset://project/{project}/asset/{asset}"
	// BodyTemplate is one asset's inline body with its own MIME type.
	BodyTemplate = "asset://project/{project}/asset/{asset}/body"
	// ObjectTemplate is the object one asset's row references, read from
	// [Options].Objects and pinned by the row's ETag and version id.
	ObjectTemplate = "asset://project/{project}/asset/{asset}/object"
)

const (
	// ReferenceObjectSource is the name under which the reference bindings
	// reference the object store of assets' objects
	// ([SQLBinding].ObjectSource; the S3 source "s3" of the reference
	// resources file).
	ReferenceObjectSource = "s3"
	// ReferenceKeyChannel is the channel the reference bindings name for
	// changed keys ([SQLBinding].Listen; migrations.KeyChannel, migrations
	// version 3).
	ReferenceKeyChannel = "mcpres_keys"
)

// ReferenceDecide is the reference schema's policy statement
// ([Source.Policy]): the grants table, for all of a pass's keys at once.
// The key "projects" (the index) is visible to every caller; a key
// PROJECT/ASSET (an asset's fields, body or object) is visible with a grant
// on the asset or its project that discovers or reads, readable with
// can_read, and disclosed in issues with disclose_issue_uri. Grants are
// row-level secured to the caller's own. The plan statements read the same
// flags (their LATERAL joins), so the decision before the reads costs no
// statement; this one runs for the recheck after them.
const ReferenceDecide = `SELECT k.key,
       k.key = 'projects' OR coalesce(bool_or(g.can_discover OR g.can_read), false) AS visible,
       k.key = 'projects' OR coalesce(bool_or(g.can_read), false) AS read,
       k.key = 'projects' OR coalesce(bool_or(g.disclose_issue_uri), false) AS disclose
FROM unnest($keys) AS k(key)
LEFT JOIN mcpres.grants g
  ON g.project_id = split_part(k.key, '/', 1)
 AND (g.asset_id IS NULL OR g.asset_id = split_part(k.key, '/', 2))
GROUP BY k.key`

// The statements' shared parts: one place for each formula.
const (
	// refGrantFlags is the caller's grant flags on asset a, as the plan
	// statements' visible, read and disclose columns (ReferenceDecide's
	// answer for the asset's key).
	refGrantFlags = `(
  SELECT coalesce(bool_or(g.can_discover OR g.can_read), false) AS visible,
         coalesce(bool_or(g.can_read), false) AS read,
         coalesce(bool_or(g.disclose_issue_uri), false) AS disclose
  FROM mcpres.grants g
  WHERE g.project_id = a.project_id AND (g.asset_id IS NULL OR g.asset_id = a.id)) gf`

	// refPinnedAsset selects the planned asset by $key for a body statement,
	// only while a grant lets the caller read it: a grant revoked after the
	// policy's decision withholds the content.
	refPinnedAsset = `FROM mcpres.assets a
WHERE a.project_id = split_part($key, '/', 1) AND a.id = split_part($key, '/', 2)
  AND EXISTS (SELECT 1 FROM mcpres.grants g
              WHERE g.project_id = a.project_id AND (g.asset_id IS NULL OR g.asset_id = a.id) AND g.can_read)`

	// refFieldsBody is an asset's fields as JSON: its identity, the URIs
	// of its body and object, never where the object is stored.
	refFieldsBody = `SELECT json_build_object(
         'project', a.project_id, 'id', a.id, 'version', a.version,
         'name', a.name, 'title', a.title, 'mimeType', a.mime_type, 'text', a.body_is_text,
         'bodySize', octet_length(a.body),
         'body', CASE WHEN a.body IS NOT NULL THEN 'asset://project/' || a.project_id || '/asset/' || a.id || '/body' END,
         'object', CASE WHEN a.object_bucket IS NOT NULL THEN json_build_object(
           'uri', 'asset://project/' || a.project_id || '/asset/' || a.id || '/object',
           'size', a.object_size) END,
         'updatedAt', a.updated_at)::text AS body,
       a.version
` + refPinnedAsset

	// refIndexVersion is the index's version: its projects' ids and titles.
	refIndexVersion = `coalesce(md5(string_agg(p.id || ':' || p.title, ',' ORDER BY p.id)), '')`

	refCompleteProject = `SELECT id AS value FROM mcpres.projects WHERE starts_with(id, $prefix) ORDER BY 1`
	refCompleteAsset   = `SELECT id AS value FROM mcpres.assets
WHERE project_id = $project AND (starts_with(id, $prefix) OR starts_with(name, $prefix)) ORDER BY 1`
	refCompleteBodyAsset = `SELECT id AS value FROM mcpres.assets
WHERE project_id = $project AND body IS NOT NULL
  AND (starts_with(id, $prefix) OR starts_with(name, $prefix)) ORDER BY 1`
	refCompleteObjectAsset = `SELECT id AS value FROM mcpres.assets
WHERE project_id = $project AND object_bucket IS NOT NULL
  AND (starts_with(id, $prefix) OR starts_with(name, $prefix)) ORDER BY 1`
)

// ReferenceBindings returns the reference schema's five bindings, in the
// order of the reference resources file, as [Source.Binding] takes them:
//
//	projects      asset://projects                                the caller's projects, {"projects":[{"id","title","uri"}]}
//	project       asset://project/{project}                       a bundle of the fields of its assets (anchored on the project)
//	asset         asset://project/{project}/asset/{asset}         one asset's fields, then the object its row references
//	asset-body    asset://project/{project}/asset/{asset}/body    one asset's inline body
//	asset-object  asset://project/{project}/asset/{asset}/object  the object alone (ObjectOnly)
//
// The asset and asset-object bindings read objects from the object source
// [ReferenceObjectSource]; every binding names [ReferenceKeyChannel]. Every
// plan folds the policy's answer ([ReferenceDecide]) into its rows. Each
// call returns fresh values.
func ReferenceBindings() []SQLBinding {
	project := map[string]string{"project": refCompleteProject}
	return []SQLBinding{
		{
			Definition: defOf("projects", IndexURI, "", "Projects", "The projects you may discover", "application/json"),
			Listen:     ReferenceKeyChannel,
			Plan: `SELECT 'projects' AS key, ` + refIndexVersion + ` AS version,
       'application/json' AS mime, true AS text, true AS visible, true AS read, true AS disclose
FROM mcpres.projects p`,
			Body: `SELECT json_build_object('projects', coalesce(json_agg(json_build_object(
         'id', p.id, 'title', p.title, 'uri', 'asset://project/' || p.id) ORDER BY p.id), '[]'::json))::text AS body,
       ` + refIndexVersion + ` AS version
FROM mcpres.projects p
HAVING $key = 'projects'`,
		},
		{
			Definition: defOf("project", "", ProjectTemplate, "Project assets", "The fields of every asset of a project", "application/json"),
			Listen:     ReferenceKeyChannel,
			// The project's own row, LEFT JOINed with its assets: a project
			// the caller may not discover is unavailable, one without
			// assets is empty.
			Anchored: true,
			Bundle: `SELECT a.project_id || '/' || a.id AS key, a.version, 'application/json' AS mime, true AS text,
       a.title, a.project_id, a.id, gf.visible, gf.read, gf.disclose
FROM mcpres.projects p
LEFT JOIN mcpres.assets a ON a.project_id = p.id
LEFT JOIN LATERAL ` + refGrantFlags + ` ON true
WHERE p.id = $project
ORDER BY a.id`,
			ItemURI:  "asset://project/{project_id}/asset/{id}",
			Body:     refFieldsBody,
			Complete: project,
		},
		{
			Definition: defOf("asset", "", FieldsTemplate, "Asset", "An asset's fields, then the object its row references", "application/json"),
			Listen:     ReferenceKeyChannel,
			Plan: `SELECT a.project_id || '/' || a.id AS key, a.version, 'application/json' AS mime, true AS text, a.title,
       a.project_id, a.id, a.object_bucket, a.object_key, a.object_etag, a.object_version_id, a.object_size,
       a.mime_type AS object_mime, gf.visible, gf.read, gf.disclose
FROM mcpres.assets a
CROSS JOIN LATERAL ` + refGrantFlags + `
WHERE a.project_id = $project AND a.id = $asset`,
			Body:         refFieldsBody,
			ObjectSource: ReferenceObjectSource,
			ObjectURI:    "asset://project/{project_id}/asset/{id}/object",
			Complete:     map[string]string{"project": refCompleteProject, "asset": refCompleteAsset},
		},
		{
			Definition: defOf("asset-body", "", BodyTemplate, "Asset body", "An asset's inline body", ""),
			Listen:     ReferenceKeyChannel,
			Plan: `SELECT a.project_id || '/' || a.id AS key, a.version, a.mime_type AS mime, a.body_is_text AS text,
       a.title, octet_length(a.body) AS size, gf.visible, gf.read, gf.disclose
FROM mcpres.assets a
CROSS JOIN LATERAL ` + refGrantFlags + `
WHERE a.project_id = $project AND a.id = $asset AND a.body IS NOT NULL`,
			Body:     `SELECT a.body, a.version ` + refPinnedAsset,
			Complete: map[string]string{"project": refCompleteProject, "asset": refCompleteBodyAsset},
		},
		{
			Definition: defOf("asset-object", "", ObjectTemplate, "Asset object", "The object an asset references, pinned by the version its row records", ""),
			Listen:     ReferenceKeyChannel,
			Plan: `SELECT a.project_id || '/' || a.id AS key, a.version, a.mime_type AS mime, a.title,
       a.object_bucket, a.object_key, a.object_etag, a.object_version_id, a.object_size,
       a.mime_type AS object_mime, gf.visible, gf.read, gf.disclose
FROM mcpres.assets a
CROSS JOIN LATERAL ` + refGrantFlags + `
WHERE a.project_id = $project AND a.id = $asset`,
			ObjectSource: ReferenceObjectSource,
			ObjectOnly:   true,
			Complete:     map[string]string{"project": refCompleteProject, "asset": refCompleteObjectAsset},
		},
	}
}
