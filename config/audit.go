package config

import "time"

// AuditSettings is the audit section with its values expanded, for the
// server: strings and numbers, zero where the file leaves a default.
type AuditSettings struct {
	File, PostgresURL, OnFailure string
	MaxFileBytes                 int64
	KeepFiles, Queue, Batch      int
	Timeout                      time.Duration
}

// AuditSettings returns the file's audit section, or nil when it has none.
// [Parse] has checked it.
func (f *File) AuditSettings() *AuditSettings {
	a := f.Audit
	if a == nil {
		return nil
	}
	return &AuditSettings{File: string(a.File), PostgresURL: a.Postgres.expanded(), OnFailure: a.OnFailure,
		MaxFileBytes: int64(a.MaxFileBytes), KeepFiles: a.KeepFiles, Queue: a.Queue, Batch: a.Batch, Timeout: time.Duration(a.Timeout)}
}

// audit checks the audit section: one sink, a known mode, no negative
// bound, and a PostgreSQL URL whose password is not written in the file.
func (c *checker) audit() {
	a := c.f.Audit
	if a == nil {
		return
	}
	switch file, pg := a.Spans.has("file"), a.Spans.has("postgres"); {
	case file && pg:
		c.e.at(a.Spans.of("postgres"), "audit", "give file or postgres, not both")
	case !file && !pg:
		c.e.at(a.Spans.start(), "audit", "file or postgres is required")
	case pg:
		c.pgURL(a.Postgres, a.Spans.of("postgres"), "audit.postgres")
	}
	if a.OnFailure != "" && a.OnFailure != "refuse" && a.OnFailure != "continue" {
		c.e.at(a.Spans.of("on_failure"), "audit.on_failure", "must be refuse or continue, not %q", a.OnFailure)
	}
	for _, b := range []struct {
		key string
		v   int64
	}{{"max_file_bytes", int64(a.MaxFileBytes)}, {"keep_files", int64(a.KeepFiles)}, {"queue", int64(a.Queue)},
		{"batch", int64(a.Batch)}, {"timeout", int64(a.Timeout)}} {
		if b.v < 0 {
			c.e.at(a.Spans.of(b.key), "audit."+b.key, "must not be negative")
		}
	}
}
