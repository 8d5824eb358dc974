-- The audit trail's removed counts and listened URIs (issue 48): version 4
-- kept neither, so the table could not say what a read refused, nor what
-- decided it, nor which URIs a subscriptions/listen stream watched.
--
-- removed: the event's removed entries as a JSON array of {kind, stage,
-- count, decided_by}; '[]' for an event that removed nothing. NULL marks a
-- row written without it: before this version, or by a server older than
-- it (no default, so that such a row never claims that nothing was
-- removed).
-- uris, uris_omitted: the URIs a subscriptions/listen subscribed to, as a
-- JSON array (NULL for any other event), and how many the event left out.
--
-- The columns are added without rewriting the table (a nullable column,
-- and a constant default), and mcpres_auditor's INSERT on the table covers
-- them. The writer names its columns, so a server that knows them fails
-- on a table without them (SQLSTATE 42703): migrate before upgrading.

-- +goose Up
ALTER TABLE mcpres.audit_events
	ADD COLUMN removed jsonb,
	ADD COLUMN uris jsonb,
	ADD COLUMN uris_omitted integer NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE mcpres.audit_events
	DROP COLUMN removed,
	DROP COLUMN uris,
	DROP COLUMN uris_omitted;
