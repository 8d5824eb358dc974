-- Key notifications: every committed change to projects, assets and grants
-- also issues NOTIFY on the channel mcpres_keys with the keys of the
-- resources file's items that it may change (examples/reference), in the
-- generic payload forms a key listener reads (stores/postgres
-- Source.Listener):
--
--   PROJECT/ASSET    an asset row, or a grant on one asset
--   PROJECT/*        every asset of a project: its row, or a grant on it
--   projects         the project list (a project row or any grant)
--
-- Like mcpres_changes, payloads carry ids only, never rows, bodies or the
-- grant's principal.

-- +goose Up

-- +goose StatementBegin
CREATE FUNCTION mcpres.notify_keys() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
	k text[] := '{}';
BEGIN
	IF TG_TABLE_NAME = 'projects' THEN
		IF TG_OP <> 'INSERT' THEN k := k || (OLD.id || '/*'); END IF;
		IF TG_OP <> 'DELETE' THEN k := k || (NEW.id || '/*'); END IF;
		k := k || 'projects'::text;
	ELSIF TG_TABLE_NAME = 'assets' THEN
		IF TG_OP <> 'INSERT' THEN k := k || (OLD.project_id || '/' || OLD.id); END IF;
		IF TG_OP <> 'DELETE' THEN k := k || (NEW.project_id || '/' || NEW.id); END IF;
	ELSE
		IF TG_OP <> 'INSERT' THEN k := k || (OLD.project_id || '/' || coalesce(OLD.asset_id, '*')); END IF;
		IF TG_OP <> 'DELETE' THEN k := k || (NEW.project_id || '/' || coalesce(NEW.asset_id, '*')); END IF;
		k := k || 'projects'::text;
	END IF;
	PERFORM pg_notify('mcpres_keys', x) FROM (SELECT DISTINCT unnest(k) AS x) d;
	RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER projects_notify_keys
	AFTER INSERT OR UPDATE OR DELETE ON mcpres.projects
	FOR EACH ROW EXECUTE FUNCTION mcpres.notify_keys();

CREATE TRIGGER assets_notify_keys
	AFTER INSERT OR UPDATE OR DELETE ON mcpres.assets
	FOR EACH ROW EXECUTE FUNCTION mcpres.notify_keys();

CREATE TRIGGER grants_notify_keys
	AFTER INSERT OR UPDATE OR DELETE ON mcpres.grants
	FOR EACH ROW EXECUTE FUNCTION mcpres.notify_keys();

-- +goose Down
DROP TRIGGER grants_notify_keys ON mcpres.grants;
DROP TRIGGER assets_notify_keys ON mcpres.assets;
DROP TRIGGER projects_notify_keys ON mcpres.projects;
DROP FUNCTION mcpres.notify_keys();
