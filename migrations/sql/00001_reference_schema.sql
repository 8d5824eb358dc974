-- The reference schema of go.phpboyscout.uk/mcp/resources: projects, assets
-- and grants in the schema mcpres, row-level security keyed on the
-- transaction-local setting mcp.principal, and the reader role mcpres_reader.

-- +goose Up

-- Roles are cluster-wide while this migration runs once per database, maybe
-- in many databases at once: a concurrent CREATE ROLE fails with
-- unique_violation (or duplicate_object once the other has committed), and
-- both mean the role exists. An existing role that could bypass row-level
-- security is refused rather than used.
-- +goose StatementBegin
DO $$
BEGIN
	BEGIN
		CREATE ROLE mcpres_reader NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOINHERIT;
	EXCEPTION WHEN duplicate_object OR unique_violation THEN
		NULL;
	END;
	IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mcpres_reader' AND (rolsuper OR rolbypassrls)) THEN
		RAISE EXCEPTION 'role mcpres_reader exists and can bypass row-level security';
	END IF;
END
$$;
-- +goose StatementEnd

CREATE SCHEMA mcpres;

-- Identifiers are unreserved URI characters, so a URI names them without
-- escaping, and never "." or "..".
-- +goose StatementBegin
CREATE FUNCTION mcpres.valid_id(id text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT id ~ '^[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,127}$' $$;
-- +goose StatementEnd

-- The principal of the current transaction: whatever the reader set with
-- set_config('mcp.principal', $1, true). After a transaction-local setting
-- ends, current_setting reads '' rather than NULL, hence NULLIF: no
-- principal matches no grant.
-- +goose StatementBegin
CREATE FUNCTION mcpres.current_principal() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT NULLIF(current_setting('mcp.principal', true), '') $$;
-- +goose StatementEnd

CREATE TABLE mcpres.projects (
	id    text PRIMARY KEY CHECK (mcpres.valid_id(id)),
	title text NOT NULL DEFAULT ''
);

CREATE TABLE mcpres.assets (
	project_id        text NOT NULL REFERENCES mcpres.projects (id) ON DELETE CASCADE,
	id                text NOT NULL CHECK (mcpres.valid_id(id)),
	-- version is bumped by a trigger on every update; readers pin it.
	version           bigint NOT NULL DEFAULT 1,
	name              text NOT NULL,
	title             text NOT NULL DEFAULT '',
	mime_type         text NOT NULL DEFAULT 'application/octet-stream' CHECK (mime_type <> ''),
	-- body is the inline body, NULL when the asset has none; body_is_text
	-- says whether it is UTF-8 text (a text resource) or bytes (a blob).
	body              bytea,
	body_is_text      boolean NOT NULL DEFAULT false,
	-- The optional object reference (an S3 object).
	object_bucket     text,
	object_key        text,
	object_etag       text,
	object_version_id text,
	object_size       bigint CHECK (object_size >= 0),
	updated_at        timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (project_id, id),
	CHECK ((object_bucket IS NULL) = (object_key IS NULL)),
	CHECK (object_bucket IS NOT NULL OR (object_etag IS NULL AND object_version_id IS NULL AND object_size IS NULL))
);

-- +goose StatementBegin
CREATE FUNCTION mcpres.bump_asset_version() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
	NEW.version := OLD.version + 1;
	NEW.updated_at := now();
	RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER assets_bump_version
	BEFORE UPDATE ON mcpres.assets
	FOR EACH ROW EXECUTE FUNCTION mcpres.bump_asset_version();

-- A grant gives principal access to a whole project (asset_id NULL) or to
-- one asset of it.
CREATE TABLE mcpres.grants (
	id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	principal          text NOT NULL CHECK (principal <> ''),
	project_id         text NOT NULL REFERENCES mcpres.projects (id) ON DELETE CASCADE,
	asset_id           text,
	-- can_discover lets the principal see that the item exists (plan it);
	-- can_read lets it read the item; disclose_issue_uri lets a partial
	-- result name the item in its issues.
	can_discover       boolean NOT NULL DEFAULT true,
	can_read           boolean NOT NULL DEFAULT true,
	disclose_issue_uri boolean NOT NULL DEFAULT false,
	FOREIGN KEY (project_id, asset_id) REFERENCES mcpres.assets (project_id, id) ON DELETE CASCADE,
	UNIQUE NULLS NOT DISTINCT (principal, project_id, asset_id)
);

CREATE INDEX grants_item ON mcpres.grants (project_id, asset_id);

-- Row-level security. The reader role does not own these tables (the role
-- that applies the migrations does), so the policies bind it.
ALTER TABLE mcpres.grants ENABLE ROW LEVEL SECURITY;
ALTER TABLE mcpres.assets ENABLE ROW LEVEL SECURITY;
ALTER TABLE mcpres.projects ENABLE ROW LEVEL SECURITY;

-- A principal sees its own grants only.
CREATE POLICY grants_own ON mcpres.grants FOR SELECT
	USING (principal = mcpres.current_principal());

-- A principal sees an asset it may discover or read.
CREATE POLICY assets_granted ON mcpres.assets FOR SELECT
	USING (EXISTS (
		SELECT 1 FROM mcpres.grants g
		WHERE g.principal = mcpres.current_principal()
		  AND g.project_id = assets.project_id
		  AND (g.asset_id IS NULL OR g.asset_id = assets.id)
		  AND (g.can_discover OR g.can_read)));

-- A principal sees a project in which it may discover something.
CREATE POLICY projects_granted ON mcpres.projects FOR SELECT
	USING (EXISTS (
		SELECT 1 FROM mcpres.grants g
		WHERE g.principal = mcpres.current_principal()
		  AND g.project_id = projects.id
		  AND g.can_discover));

GRANT USAGE ON SCHEMA mcpres TO mcpres_reader;
GRANT SELECT ON mcpres.projects, mcpres.assets, mcpres.grants TO mcpres_reader;

-- +goose Down
-- The role is cluster-wide and other databases may use it: it stays.
DROP SCHEMA mcpres CASCADE;
