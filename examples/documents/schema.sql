-- The documents schema of examples/documents/resources.yaml: tenants, their
-- documents (each with an S3 object), who is a member of which tenant, and
-- the reader role that every statement of the config runs as. Row-level
-- security keyed on mcp.principal (set by the server in every read's
-- transaction) lets a member see its tenants' documents only.
--
--   psql "$DOCS_DATABASE_URL" -f examples/documents/schema.sql

CREATE TABLE tenants (
	id   text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
	name text NOT NULL
);

CREATE TABLE documents (
	id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	tenant_id    text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
	title        text NOT NULL,
	body         text NOT NULL DEFAULT '',
	content_type text NOT NULL DEFAULT 'text/markdown',
	updated_at   timestamptz NOT NULL DEFAULT now(),
	s3_key       text            -- the document's file in the bucket, if any
);

CREATE TABLE memberships (
	user_id   text NOT NULL,
	tenant_id text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
	role      text NOT NULL DEFAULT 'reader',
	PRIMARY KEY (user_id, tenant_id)
);

-- The principal of the current read: NULLIF because after one
-- transaction-local setting ends, current_setting reads '' rather than NULL.
CREATE FUNCTION current_principal() RETURNS text
LANGUAGE sql STABLE AS $$ SELECT NULLIF(current_setting('mcp.principal', true), '') $$;

-- The role reads run as: no login, cannot bypass row-level security, owns
-- nothing. The server's login role must be a member: GRANT docs_reader TO app.
CREATE ROLE docs_reader NOLOGIN NOSUPERUSER NOBYPASSRLS NOINHERIT;
GRANT SELECT ON tenants, documents, memberships TO docs_reader;

ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
ALTER TABLE documents ENABLE ROW LEVEL SECURITY;
ALTER TABLE memberships ENABLE ROW LEVEL SECURITY;

CREATE POLICY own_memberships ON memberships FOR SELECT
	USING (user_id = current_principal());
CREATE POLICY member_tenants ON tenants FOR SELECT
	USING (EXISTS (SELECT 1 FROM memberships m WHERE m.tenant_id = tenants.id AND m.user_id = current_principal()));
CREATE POLICY member_documents ON documents FOR SELECT
	USING (EXISTS (SELECT 1 FROM memberships m WHERE m.tenant_id = documents.tenant_id AND m.user_id = current_principal()));

-- Subscriptions: every committed change to a document notifies its key.
CREATE FUNCTION notify_document() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('documents_changed', coalesce(NEW.tenant_id, OLD.tenant_id) || '/' || coalesce(NEW.id, OLD.id)::text);
	RETURN NULL;
END
$$;
CREATE TRIGGER documents_notify AFTER INSERT OR UPDATE OR DELETE ON documents
	FOR EACH ROW EXECUTE FUNCTION notify_document();
