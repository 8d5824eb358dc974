-- The audit trail (issue 48): one row per request that touched resources,
-- written by mcp-resources serve --audit-postgres (package mcpsdk/audit).
-- Rows hold who read what, at which pin, and how it ended; never a body,
-- a token or a secret. The table is append-only by grants: the writer role
-- mcpres_auditor has INSERT and nothing else (no SELECT, UPDATE, DELETE or
-- TRUNCATE), and the reader role has no access at all. Operators read it
-- as the role that applied the migrations, or one they grant SELECT to.

-- +goose Up

-- +goose StatementBegin
DO $$
BEGIN
	BEGIN
		CREATE ROLE mcpres_auditor NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOINHERIT;
	EXCEPTION WHEN duplicate_object OR unique_violation THEN
		NULL;
	END;
	IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mcpres_auditor' AND (rolsuper OR rolbypassrls)) THEN
		RAISE EXCEPTION 'role mcpres_auditor exists and is a superuser or can bypass row-level security';
	END IF;
END
$$;
-- +goose StatementEnd

CREATE TABLE mcpres.audit_events (
	id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	at                timestamptz NOT NULL,
	duration_us       bigint NOT NULL,
	method            text NOT NULL,
	tool              text,
	uri               text,
	principal         text,
	issuer            text,
	subject           text,
	session_id        text,
	client            text,
	transport         text,
	revision          text NOT NULL,
	trace_id          text,
	result            text NOT NULL CHECK (result IN ('complete', 'partial', 'error')),
	error_kind        text,
	items             jsonb NOT NULL DEFAULT '[]',
	missing           jsonb,
	missing_uncounted integer NOT NULL DEFAULT 0
);

CREATE INDEX audit_events_at ON mcpres.audit_events (at);
CREATE INDEX audit_events_principal_at ON mcpres.audit_events (principal, at);
-- "who read document X": items @> '[{"uri": "doc://..."}]'
CREATE INDEX audit_events_items ON mcpres.audit_events USING gin (items jsonb_path_ops);

GRANT USAGE ON SCHEMA mcpres TO mcpres_auditor;
GRANT INSERT ON mcpres.audit_events TO mcpres_auditor;

-- +goose Down
DROP TABLE mcpres.audit_events;
-- The role is cluster-wide and other databases may use it: it stays.
