-- Change notifications: every committed change to projects, assets and
-- grants issues NOTIFY on the channel mcpres_changes with the changed ids
-- (never rows or bodies), as compact JSON:
--
--   {"t":"p","p":PROJECT}              a project row
--   {"t":"a","p":PROJECT,"a":ASSET}    an asset row (insert, update, delete)
--   {"t":"g","p":PROJECT,"a":ASSET}    a grant on one asset
--   {"t":"g","p":PROJECT}              a grant on a whole project
--
-- NOTIFY is delivered when the writing transaction commits, identical
-- payloads of one transaction are delivered once, and ids are at most 128
-- bytes, so a payload stays far below the 8000-byte limit. The grant's
-- principal is not sent: listeners re-check access for their own
-- subscribers. An update that moves a row sends its old and its new ids.

-- +goose Up

-- +goose StatementBegin
CREATE FUNCTION mcpres.notify_change() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
	o text; -- the old row's ids
	n text; -- the new row's ids
BEGIN
	IF TG_TABLE_NAME = 'projects' THEN
		IF TG_OP <> 'INSERT' THEN o := jsonb_build_object('t', 'p', 'p', OLD.id)::text; END IF;
		IF TG_OP <> 'DELETE' THEN n := jsonb_build_object('t', 'p', 'p', NEW.id)::text; END IF;
	ELSIF TG_TABLE_NAME = 'assets' THEN
		IF TG_OP <> 'INSERT' THEN o := jsonb_build_object('t', 'a', 'p', OLD.project_id, 'a', OLD.id)::text; END IF;
		IF TG_OP <> 'DELETE' THEN n := jsonb_build_object('t', 'a', 'p', NEW.project_id, 'a', NEW.id)::text; END IF;
	ELSE
		IF TG_OP <> 'INSERT' THEN o := jsonb_strip_nulls(jsonb_build_object('t', 'g', 'p', OLD.project_id, 'a', OLD.asset_id))::text; END IF;
		IF TG_OP <> 'DELETE' THEN n := jsonb_strip_nulls(jsonb_build_object('t', 'g', 'p', NEW.project_id, 'a', NEW.asset_id))::text; END IF;
	END IF;
	IF o IS NOT NULL THEN
		PERFORM pg_notify('mcpres_changes', o);
	END IF;
	IF n IS NOT NULL AND n IS DISTINCT FROM o THEN
		PERFORM pg_notify('mcpres_changes', n);
	END IF;
	RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER projects_notify_change
	AFTER INSERT OR UPDATE OR DELETE ON mcpres.projects
	FOR EACH ROW EXECUTE FUNCTION mcpres.notify_change();

CREATE TRIGGER assets_notify_change
	AFTER INSERT OR UPDATE OR DELETE ON mcpres.assets
	FOR EACH ROW EXECUTE FUNCTION mcpres.notify_change();

CREATE TRIGGER grants_notify_change
	AFTER INSERT OR UPDATE OR DELETE ON mcpres.grants
	FOR EACH ROW EXECUTE FUNCTION mcpres.notify_change();

-- +goose Down
DROP TRIGGER grants_notify_change ON mcpres.grants;
DROP TRIGGER assets_notify_change ON mcpres.assets;
DROP TRIGGER projects_notify_change ON mcpres.projects;
DROP FUNCTION mcpres.notify_change();
