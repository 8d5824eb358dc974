-- The documents schema of examples/documents: tenants, their documents
-- (an inline body and, optionally, a file in the bucket), and who belongs
-- to which tenant. Reads run as docs_reader with the caller in
-- mcp.principal; row-level security shows a caller only the documents of
-- its own tenants.
DO $$ BEGIN
	CREATE ROLE docs_reader NOLOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END $$;

CREATE TABLE tenants (
	id   text PRIMARY KEY,
	name text NOT NULL
);

CREATE TABLE memberships (
	user_id   text NOT NULL,
	tenant_id text NOT NULL REFERENCES tenants,
	role      text NOT NULL DEFAULT 'reader',
	PRIMARY KEY (user_id, tenant_id)
);

CREATE TABLE documents (
	id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	tenant_id    text NOT NULL REFERENCES tenants,
	title        text NOT NULL,
	body         text,
	content_type text NOT NULL DEFAULT 'text/plain',
	updated_at   timestamptz NOT NULL DEFAULT now(),
	s3_key       text,
	s3_etag      text -- the ETag the file had when the row was written
);

ALTER TABLE memberships ENABLE ROW LEVEL SECURITY;
ALTER TABLE documents ENABLE ROW LEVEL SECURITY;

CREATE POLICY own_memberships ON memberships FOR SELECT TO docs_reader
	USING (user_id = NULLIF(current_setting('mcp.principal', true), ''));
CREATE POLICY member_documents ON documents FOR SELECT TO docs_reader
	USING (EXISTS (SELECT 1 FROM memberships m
		WHERE m.tenant_id = documents.tenant_id
		  AND m.user_id = NULLIF(current_setting('mcp.principal', true), '')));

GRANT SELECT ON tenants, memberships, documents TO docs_reader;

-- Change notifications for subscriptions (resources.yaml's listen:
-- docs_keys): a document's id when its row changes, and "*" (everything)
-- when a membership does, since that changes which documents exist for
-- whom. Payloads carry keys only, never rows or principals.
CREATE FUNCTION docs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_TABLE_NAME = 'memberships' THEN
		PERFORM pg_notify('docs_keys', '*');
	ELSE
		IF TG_OP <> 'INSERT' THEN PERFORM pg_notify('docs_keys', OLD.id::text); END IF;
		IF TG_OP <> 'DELETE' THEN PERFORM pg_notify('docs_keys', NEW.id::text); END IF;
	END IF;
	RETURN NULL;
END $$;
CREATE TRIGGER documents_notify AFTER INSERT OR UPDATE OR DELETE ON documents
	FOR EACH ROW EXECUTE FUNCTION docs_notify();
CREATE TRIGGER memberships_notify AFTER INSERT OR UPDATE OR DELETE ON memberships
	FOR EACH ROW EXECUTE FUNCTION docs_notify();
